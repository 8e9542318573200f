// Template parsing, checking and rendering; see prompt_template.hpp for the rules.
#include "agents/prompt_template.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

using Kind = PromptTemplate::Kind;

bool is_name_start(char c) { return std::islower(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }
bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string show_tag(Kind kind, const std::string& name)
{
    return fmt::format("{{{{{}{}}}}}", kind == Kind::section_begin ? "#" : kind == Kind::section_end ? "/" : "", name);
}

} // namespace

std::set<std::string> PromptTemplate::names() const
{
    std::set<std::string> result;
    for (const auto& piece : pieces)
        if (piece.kind != Kind::literal)
            result.insert(piece.text);
    return result;
}

PromptTemplate parse_template(std::string_view text, const std::string& file_label)
{
    PromptTemplate tmpl;
    tmpl.file = file_label;
    std::vector<std::pair<std::string, int>> open_sections;
    std::string literal;
    int literal_line = 1;
    int line = 1;
    auto flush_literal = [&] {
        if (!literal.empty())
            tmpl.pieces.push_back({Kind::literal, std::move(literal), literal_line});
        literal.clear();
        literal_line = line;
    };
    size_t i = 0;
    while (i < text.size()) {
        if (text.compare(i, 2, "{{") != 0) {
            literal += text[i];
            line += text[i] == '\n';
            ++i;
            continue;
        }
        size_t k = i + 2;
        Kind kind = Kind::placeholder;
        if (k < text.size() && (text[k] == '#' || text[k] == '/')) {
            kind = text[k] == '#' ? Kind::section_begin : Kind::section_end;
            ++k;
        }
        while (k < text.size() && text[k] == ' ')
            ++k;
        size_t name_start = k;
        if (k < text.size() && is_name_start(text[k]))
            while (k < text.size() && is_name_char(text[k]))
                ++k;
        std::string name(text.substr(name_start, k - name_start));
        while (k < text.size() && text[k] == ' ')
            ++k;
        if (name.empty() || text.compare(k, 2, "}}") != 0) {
            std::string_view shown = text.substr(i, std::min<size_t>(30, text.size() - i));
            fail_input("{}:{}: malformed tag '{}': write {{{{name}}}}, {{{{#name}}}} or {{{{/name}}}} with a "
                       "lowercase name",
                       file_label, line, shown.substr(0, shown.find('\n')));
        }
        size_t after = k + 2;
        if (kind != Kind::placeholder) {
            // A section tag alone on its line takes the whole line with it.
            size_t line_begin = literal.find_last_of('\n');
            line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
            bool alone_before = std::all_of(literal.begin() + static_cast<std::ptrdiff_t>(line_begin), literal.end(), is_blank) &&
                                (line_begin > 0 || tmpl.pieces.empty() || tmpl.pieces.back().kind != Kind::placeholder);
            size_t rest = after;
            while (rest < text.size() && is_blank(text[rest]))
                ++rest;
            if (alone_before && (rest == text.size() || text[rest] == '\n')) {
                literal.erase(line_begin);
                after = rest == text.size() ? rest : rest + 1;
            }
            if (kind == Kind::section_begin) {
                open_sections.emplace_back(name, line);
            } else if (open_sections.empty() || open_sections.back().first != name) {
                fail_input("{}:{}: {} closes no open section{}", file_label, line, show_tag(kind, name),
                           open_sections.empty() ? ""
                                                 : fmt::format(" (the open one is {{{{#{}}}}} from line {})",
                                                               open_sections.back().first, open_sections.back().second));
            } else {
                open_sections.pop_back();
            }
        }
        flush_literal();
        tmpl.pieces.push_back({kind, name, line});
        for (size_t j = i; j < after; ++j)
            line += text[j] == '\n';
        i = after;
        literal_line = line;
    }
    flush_literal();
    if (!open_sections.empty())
        fail_input("{}:{}: section {{{{#{}}}}} is never closed with {{{{/{}}}}}", file_label, open_sections.back().second,
                   open_sections.back().first, open_sections.back().first);
    return tmpl;
}

void check_placeholders(const PromptTemplate& tmpl, const std::vector<std::string>& required,
                        const std::vector<std::string>& optional)
{
    std::vector<std::string> known = required;
    known.insert(known.end(), optional.begin(), optional.end());
    for (const auto& piece : tmpl.pieces) {
        if (piece.kind == Kind::literal || std::find(known.begin(), known.end(), piece.text) != known.end())
            continue;
        std::string hint = closest_match(piece.text, known);
        fail_input("{}:{}: unknown placeholder {}{} (known here: {})", tmpl.file, piece.line,
                   show_tag(piece.kind, piece.text), hint.empty() ? "" : fmt::format(", did you mean {{{{{}}}}}?", hint),
                   known.empty() ? "none" : join(known, ", "));
    }
    std::set<std::string> placeholders;
    for (const auto& piece : tmpl.pieces)
        if (piece.kind == Kind::placeholder)
            placeholders.insert(piece.text);
    for (const auto& name : required)
        if (!placeholders.count(name))
            fail_input("{}: never uses the required placeholder {{{{{}}}}}; without it the model would not see "
                       "that part of the prompt",
                       tmpl.file, name);
}

std::string render_template(const PromptTemplate& tmpl, const TemplateValues& values)
{
    auto value_of = [&](const std::string& name) -> std::string_view {
        auto it = values.find(name);
        if (it == values.end())
            throw std::logic_error(fmt::format("{}: no value for {{{{{}}}}}", tmpl.file, name));
        std::string_view value = it->second;
        while (!value.empty() && (value.back() == '\n' || value.back() == '\r'))
            value.remove_suffix(1);
        return value;
    };
    std::string out;
    int skipping = 0;          // depth inside sections whose value is blank
    bool drop_newline = false; // the previous piece was an empty placeholder alone on its line
    const auto& pieces = tmpl.pieces;
    for (size_t p = 0; p < pieces.size(); ++p) {
        const auto& piece = pieces[p];
        if (piece.kind == Kind::section_begin) {
            if (skipping > 0 || trim(value_of(piece.text)).empty())
                ++skipping;
            drop_newline = false;
            continue;
        }
        if (piece.kind == Kind::section_end) {
            if (skipping > 0)
                --skipping;
            drop_newline = false;
            continue;
        }
        if (skipping > 0)
            continue;
        if (piece.kind == Kind::literal) {
            std::string_view text = piece.text;
            if (drop_newline && !text.empty() && text[0] == '\n') {
                text.remove_prefix(1);
                // Where an optional piece vanished, keep at most one blank line.
                bool blank_before = out.empty() || (out.size() >= 2 && out.compare(out.size() - 2, 2, "\n\n") == 0);
                while (blank_before && !text.empty() && text[0] == '\n')
                    text.remove_prefix(1);
            }
            drop_newline = false;
            out.append(text);
            continue;
        }
        std::string_view value = value_of(piece.text);
        bool line_start = out.empty() || out.back() == '\n';
        bool line_end = p + 1 == pieces.size() ||
                        (pieces[p + 1].kind == Kind::literal && pieces[p + 1].text[0] == '\n');
        drop_newline = value.empty() && line_start && line_end;
        out.append(value);
    }
    return out;
}

} // namespace kforge
