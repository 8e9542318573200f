// Reading a candidate out of a model's reply.
//
// Replies come in every size and shape: one fenced block, several (a draft and a final version, a
// helper and the kernel, a JSON plan beside the code), a fence that never closes because the reply
// was cut off, no fence at all, SEARCH/REPLACE edits, megabytes of prose, random bytes. The parser
// handles all of them in linear time without throwing, and when it finds nothing usable it says
// why, in words the next prompt can pass on to the model.
//
// Choosing among fenced blocks: a block with a `__global__` function beats one without, a closed
// fence beats an unclosed one, a cuda/cu/cpp/c++/c fence beats an untagged one, which beats any
// other language; among equals the last wins (models tend to end with their final version).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/proposer.hpp"
#include "util/limits.hpp"

namespace kforge {

// The largest source a reply may yield is k_max_source_bytes (util/limits.hpp), the screen's bound.

struct FencedBlock {
    std::string lang;        // first word of the info string, lowercased ("" when untagged)
    std::string body;
    int line = 0;            // line of the opening fence (1-based)
    int end_line = 0;        // line of the closing fence, or the reply's last line
    bool terminated = false; // false when the reply ended inside the block
};

// Every fenced block (``` or ~~~) of `text`, in order. Never throws.
std::vector<FencedBlock> find_fenced_blocks(std::string_view text);

// The model's one-line description of its change: a "CHANGE:" (or NOTE:, SUMMARY:) line outside
// code, else the first line of prose; at most 200 characters, control characters removed.
std::string extract_note(std::string_view reply);

struct ParsedReply {
    std::optional<std::string> source;
    std::string note;
    std::string problem;          // when !source: the message of the no_code verdict
    bool from_unclosed_fence = false;
    size_t edits_applied = 0;     // SEARCH/REPLACE edits that produced `source`
};

// Reads a reply requested in `form`. `parent` is the source edits apply to (nullptr when there is
// none). Whole files are accepted in either form, and edits in either form when there is a parent.
// When the chosen source has no kforge:plan block but the reply holds a separate JSON plan (an
// object with "launches"), the plan is put into the source as a kforge:plan comment.
ParsedReply parse_reply(std::string_view reply, EditForm form, const std::string* parent);

} // namespace kforge
