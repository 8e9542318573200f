// Prompt templates: plain text with named placeholders and optional sections.
//
//   Status: {{status}}
//   {{#times}}
//   Times on the bench shapes:
//   {{times}}
//   {{/times}}
//
// `{{name}}` is replaced by a value; `{{#name}} ... {{/name}}` keeps its content only when the
// value of `name` is not blank (Mustache's convention), so a template can label an optional piece
// without leaving an empty heading. A line holding only a section tag disappears entirely, and so
// does a line holding only a placeholder whose value is empty.
//
// A template is parsed once, when it is loaded, and checked against the names the code fills for
// it: an unknown name, or a required one the template leaves out, is an error naming the file and
// line, so a typo in a user's prompt fails at start-up rather than reaching a model as braces.
// Values are inserted verbatim (never re-scanned, so a kernel's `{{` is safe), minus trailing
// newlines.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

using TemplateValues = std::map<std::string, std::string, std::less<>>;

struct PromptTemplate {
    enum class Kind { literal, placeholder, section_begin, section_end };
    struct Piece {
        Kind kind = Kind::literal;
        std::string text; // literal text, or the name
        int line = 0;     // 1-based line of the piece's start in the file
    };
    std::string file;     // for messages
    std::vector<Piece> pieces;

    // Every name used, by placeholders and sections.
    std::set<std::string> names() const;
};

// Parses template text. Throws Error(bad_input) "FILE:LINE: ..." for a malformed tag (`{{` not
// followed by `name}}`, `#name}}` or `/name}}`) or sections that do not nest.
PromptTemplate parse_template(std::string_view text, const std::string& file_label);

// Throws Error(bad_input) "FILE:LINE: unknown placeholder {{x}} (known here: ...)" or
// "FILE: never uses the required placeholder {{y}} ...".
void check_placeholders(const PromptTemplate& tmpl, const std::vector<std::string>& required,
                        const std::vector<std::string>& optional);

// Fills the template. A name without a value is a programming error: throws std::logic_error
// naming it (the catalog check at load time keeps users from reaching this).
std::string render_template(const PromptTemplate& tmpl, const TemplateValues& values);

} // namespace kforge
