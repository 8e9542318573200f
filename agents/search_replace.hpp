// SEARCH/REPLACE edits: reading them from a reply and applying them to the parent's source.
//
//   <<<<<<< SEARCH
//   lines copied from the current source
//   =======
//   the lines that replace them
//   >>>>>>> REPLACE
//
// Edits apply in order, each to the result of the previous one, and all or nothing: an edit that
// does not apply leaves the parent untouched and yields a message that names the edit, quotes its
// first SEARCH line and points at the most similar line of the source, so the next prompt can tell
// the model exactly what to fix. A SEARCH text must match one place: exactly (whole lines) first,
// then ignoring indentation, whitespace runs and blank lines. Matching two places is refused rather
// than guessed, because an edit applied in the wrong place is worse than one not applied.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

struct EditBlock {
    std::string search;
    std::string replace;
    int reply_line = 0; // line of the SEARCH marker in the reply
};

struct EditParse {
    std::vector<EditBlock> edits;
    std::string problem; // a malformed block (missing divider or end marker); "" when fine
};

// Finds every edit block of a reply (inside code fences or not). Never throws.
EditParse find_edit_blocks(std::string_view reply);

struct EditOutcome {
    std::optional<std::string> source;
    std::string problem; // why the edits did not apply; "" when they did
};

// Applies `edits` to `parent`. Never throws.
EditOutcome apply_edits(std::string_view parent, const std::vector<EditBlock>& edits);

} // namespace kforge
