// Fenced blocks, notes, block choice and the assembly of a ParsedReply; see reply_parser.hpp.
//
// Everything here walks the reply line by line with string_views and never indexes past what it
// checked, so arbitrary bytes (NULs, invalid UTF-8, a 2 MB line) cost time linear in their size.
#include "agents/reply_parser.hpp"

#include <algorithm>
#include <cctype>
#include <functional>

#include <fmt/format.h>

#include "agents/search_replace.hpp"
#include "util/json_reader.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

struct FenceLine {
    char fence_char = 0;     // '`' or '~' when the line is a fence
    size_t run = 0;          // its length
    std::string_view info;   // what follows the fence characters
};

FenceLine read_fence(std::string_view line)
{
    size_t k = 0;
    while (k < line.size() && (line[k] == ' ' || line[k] == '\t'))
        ++k;
    FenceLine fence;
    if (k >= line.size() || (line[k] != '`' && line[k] != '~'))
        return fence;
    char c = line[k];
    size_t run = 0;
    while (k + run < line.size() && line[k + run] == c)
        ++run;
    std::string_view info = line.substr(k + run);
    if (run < 3 || (c == '`' && info.find('`') != std::string_view::npos))
        return fence; // not a fence: too short, or inline code like ```x```
    fence.fence_char = c;
    fence.run = run;
    fence.info = info;
    return fence;
}

std::string lang_of(std::string_view info)
{
    std::string text = to_lower(trim(info));
    size_t start = text.find_first_not_of("{.");
    if (start == std::string::npos)
        return "";
    size_t end = text.find_first_of(" \t{},", start);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// Calls `visit(line, line_number)` for every line of `text`; stops when `visit` returns false.
void for_each_line(std::string_view text, const std::function<bool(std::string_view, int)>& visit)
{
    size_t pos = 0;
    for (int number = 1;; ++number) {
        size_t end = std::min(text.find('\n', pos), text.size());
        if (!visit(text.substr(pos, end - pos), number) || end >= text.size())
            return;
        pos = end + 1;
    }
}

bool is_code_lang(const std::string& lang)
{
    static const char* const k_langs[] = {"cuda", "cu", "cuh", "cpp", "c++", "cxx", "cc", "c", "hpp", "h"};
    return std::find(std::begin(k_langs), std::end(k_langs), lang) != std::end(k_langs);
}

bool has_edit_markers(std::string_view body)
{
    return body.find("<<<<<<<") != std::string_view::npos || body.find(">>>>>>>") != std::string_view::npos;
}

// Whether `body` can be a candidate source: it defines a kernel, or its launch plan calls library
// steps (a plan of cuBLASLt/cuDNN steps alone needs no kernel of its own: docs/library-steps.md).
bool holds_candidate(std::string_view body)
{
    if (body.find("__global__") != std::string_view::npos)
        return true;
    size_t plan = body.find("kforge:plan");
    return plan != std::string_view::npos && body.find("\"library\"", plan) != std::string_view::npos;
}

// The best whole-file block, or nullptr.
const FencedBlock* choose_block(const std::vector<FencedBlock>& blocks)
{
    const FencedBlock* best = nullptr;
    int best_score = -1;
    for (const auto& block : blocks) {
        if (!holds_candidate(block.body) || has_edit_markers(block.body))
            continue;
        int score = (block.terminated ? 4 : 0) + (is_code_lang(block.lang) ? 2 : block.lang.empty() ? 1 : 0);
        if (score >= best_score) {
            best_score = score;
            best = &block;
        }
    }
    return best;
}

// Without any fence: the reply from its first line that looks like C++ to the end.
std::optional<std::string> unfenced_source(std::string_view reply)
{
    if (!holds_candidate(reply))
        return std::nullopt;
    static const char* const k_starts[] = {"#include", "#define", "#pragma", "/*", "//", "extern", "__global__",
                                          "__device__", "template", "struct", "static", "typedef", "constexpr"};
    std::optional<size_t> start;
    size_t offset = 0;
    for_each_line(reply, [&](std::string_view line, int) {
        std::string head = trim(line.substr(0, 64));
        for (const char* prefix : k_starts)
            if (head.rfind(prefix, 0) == 0) {
                start = offset;
                return false;
            }
        offset += line.size() + 1;
        return true;
    });
    if (!start)
        return std::nullopt;
    return std::string(reply.substr(*start));
}

// A separate JSON block holding a plan, as the text of a kforge:plan comment body; "" if none.
std::string separate_plan(const std::vector<FencedBlock>& blocks, const FencedBlock* chosen)
{
    for (const auto& block : blocks) {
        if (&block == chosen || !block.terminated || block.body.size() > 64 * 1024)
            continue;
        std::string_view body = block.body;
        if (size_t marker = body.find("kforge:plan"); marker != std::string_view::npos && marker < 16)
            body.remove_prefix(std::min(body.size(), body.find('\n', marker) + 1));
        if (body.find("\"launches\"") == std::string_view::npos || body.find("*/") != std::string_view::npos)
            continue;
        JsonParseFailure failure;
        std::optional<Json> json = try_parse_json(body, failure);
        if (json && json->is_object() && json->contains("launches"))
            return trim(body);
    }
    return "";
}

std::string clean_note(std::string_view text)
{
    std::string note;
    for (char c : text)
        note += static_cast<unsigned char>(c) < 32 || c == 127 ? ' ' : c;
    note = trim(note);
    if (note.size() > 200) {
        size_t cut = 200;
        while (cut > 0 && (static_cast<unsigned char>(note[cut]) & 0xC0) == 0x80)
            --cut; // do not split a UTF-8 sequence
        note = note.substr(0, cut) + "...";
    }
    return note;
}

std::string strip_markdown(std::string_view line)
{
    std::string text = trim(line.substr(0, 4096));
    size_t start = text.find_first_not_of("#*>-_` \t");
    return start == std::string::npos ? "" : text.substr(start);
}

} // namespace

std::vector<FencedBlock> find_fenced_blocks(std::string_view text)
{
    std::vector<FencedBlock> blocks;
    FenceLine open;
    size_t body_start = 0;
    for_each_line(text, [&](std::string_view line, int number) {
        FenceLine fence = read_fence(line);
        size_t line_start = static_cast<size_t>(line.data() - text.data());
        if (open.fence_char == 0) {
            if (fence.fence_char != 0) {
                open = fence;
                blocks.push_back({lang_of(fence.info), "", number, number, false});
                body_start = line_start + line.size() + 1;
            }
        } else if (fence.fence_char == open.fence_char && fence.run >= open.run && trim(fence.info).empty()) {
            FencedBlock& block = blocks.back();
            if (line_start > body_start)
                block.body = std::string(text.substr(body_start, line_start - 1 - body_start));
            block.end_line = number;
            block.terminated = true;
            open = FenceLine{};
        } else {
            blocks.back().end_line = number;
        }
        return true;
    });
    if (open.fence_char != 0 && body_start < text.size())
        blocks.back().body = std::string(text.substr(body_start));
    return blocks;
}

std::string extract_note(std::string_view reply)
{
    std::vector<FencedBlock> blocks = find_fenced_blocks(reply);
    size_t next_block = 0;
    std::string first_prose;
    std::string tagged;
    for_each_line(reply, [&](std::string_view line, int number) {
        while (next_block < blocks.size() && blocks[next_block].end_line < number)
            ++next_block;
        if (next_block < blocks.size() && blocks[next_block].line <= number)
            return true; // inside a fenced block
        std::string text = strip_markdown(line);
        if (text.empty() || text.rfind("<<<<<<<", 0) == 0 || text.rfind("=======", 0) == 0)
            return true;
        std::string head = to_lower(text.substr(0, 20));
        for (std::string_view key : {"change:", "changes:", "note:", "summary:", "what changed:"}) {
            if (head.rfind(key, 0) == 0) {
                tagged = strip_markdown(std::string_view(text).substr(key.size()));
                if (!tagged.empty())
                    return false;
            }
        }
        if (first_prose.empty())
            first_prose = text;
        return true;
    });
    return clean_note(tagged.empty() ? first_prose : tagged);
}

ParsedReply parse_reply(std::string_view reply, EditForm form, const std::string* parent)
{
    ParsedReply parsed;
    parsed.note = extract_note(reply);
    std::vector<FencedBlock> blocks = find_fenced_blocks(reply);
    const FencedBlock* chosen = choose_block(blocks);
    EditParse edits = find_edit_blocks(reply);
    bool has_edits = !edits.edits.empty() || !edits.problem.empty();
    std::string source;

    if (has_edits && parent && edits.problem.empty()) {
        EditOutcome outcome = apply_edits(*parent, edits.edits);
        if (!outcome.source) {
            parsed.problem = outcome.problem;
            return parsed;
        }
        source = std::move(*outcome.source);
        parsed.edits_applied = edits.edits.size();
        chosen = nullptr;
    } else if (chosen) {
        source = chosen->body;
        parsed.from_unclosed_fence = !chosen->terminated;
    } else if (has_edits) {
        parsed.problem = parent ? "The SEARCH/REPLACE edits could not be read, so nothing was changed: " + edits.problem + "."
                                : "The reply holds SEARCH/REPLACE edits, but there is no current source to apply "
                                  "them to. Reply with one complete source file.";
        return parsed;
    } else if (auto bare = blocks.empty() ? unfenced_source(reply) : std::nullopt) {
        source = std::move(*bare);
    } else {
        parsed.problem = form == EditForm::search_replace && parent
                             ? "The reply holds neither SEARCH/REPLACE edits nor a complete source file with an "
                               "extern \"C\" __global__ kernel, so there was nothing to evaluate."
                             : "The reply holds no code block with an extern \"C\" __global__ kernel, so there was "
                               "nothing to evaluate. Reply with the complete source file in one ```cuda block.";
        return parsed;
    }

    if (source.find("kforge:plan") == std::string::npos)
        if (std::string plan = separate_plan(blocks, chosen); !plan.empty())
            source = "/* kforge:plan\n" + plan + "\n*/\n" + source;
    if (source.size() > k_max_source_bytes) {
        parsed.problem = fmt::format("The code in the reply has {} bytes; a candidate may have at most {} bytes. "
                                     "Reply with a focused kernel file.",
                                     source.size(), k_max_source_bytes);
        return parsed;
    }
    if (trim(source).empty()) {
        parsed.problem = "The code block in the reply is empty.";
        return parsed;
    }
    parsed.source = std::move(source);
    return parsed;
}

} // namespace kforge
