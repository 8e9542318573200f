// screen_source() and the include screen: what a candidate may not compile, decided from its
// text alone (the rules and their reasons are in screen.hpp).
//
// Includes are found twice. The exact pass uses the lexer (screen_lexer.cpp), which follows the
// preprocessor. The backstop pass looks at every logical line of the raw text for something
// shaped like an include directive, wherever it stands; it can only add refusals, never remove
// one, so a place where the lexer and NVRTC disagree about what is a comment cannot let a host
// path through.
#include "evaluator/compile/screen.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "core/source.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/prelude.hpp"
#include "util/regex.hpp"
#include "util/text.hpp"

namespace kforge {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }

// Reads `<name>` or `"name"` at text[at...] (after optional spaces), stopping at `end`.
ScreenedInclude read_header_name(const LexedSource& lexed, size_t at, size_t end, std::string form, int line)
{
    ScreenedInclude inc;
    inc.form = std::move(form);
    inc.line = line;
    while (at < end && is_space(lexed.text[at]))
        ++at;
    if (at >= end || (lexed.text[at] != '<' && lexed.text[at] != '"'))
        return inc;
    char close = lexed.text[at] == '<' ? '>' : '"';
    size_t stop = lexed.text.find(close, at + 1);
    if (stop == std::string::npos || stop >= end)
        return inc;
    inc.angled = close == '>';
    inc.name = lexed.text.substr(at + 1, stop - at - 1);
    inc.open_offset = lexed.offset[at];
    inc.close_offset = lexed.offset[stop];
    return inc;
}

bool is_include_like(std::string_view directive)
{
    return directive == "include" || directive == "include_next" || directive == "import" || directive == "embed";
}

std::vector<ScreenedInclude> exact_includes(const LexedSource& lexed)
{
    std::vector<ScreenedInclude> out;
    for (const auto& d : find_directives(lexed))
        if (is_include_like(d.name))
            out.push_back(read_header_name(lexed, d.args_begin, d.args_end, "#" + d.name, d.line));
    // __has_include(<x>) opens the file to answer, so it leaks whether a host path exists.
    static const Regex has_include(R"(\b__has_include(_next)?\b)");
    for (auto match = has_include.search(lexed.code); match;
         match = has_include.search(lexed.code, match->offset + std::max<size_t>(match->length, 1))) {
        size_t at = match->offset + match->length;
        std::string form = lexed.code.substr(match->offset, match->length);
        while (at < lexed.text.size() && is_space(lexed.text[at]))
            ++at;
        size_t end = lexed.code.find('\n', at);
        end = end == std::string::npos ? lexed.code.size() : end;
        int line = lexed.line[match->offset];
        if (at < end && lexed.text[at] == '(')
            out.push_back(read_header_name(lexed, at + 1, end, form, line));
        else
            out.push_back(ScreenedInclude{line, "", false, form, 0, 0});
    }
    return out;
}

// The line with each same-line `/* ... */` replaced by a space (the first `*/` closes); an unclosed
// `/*` stays. Linear in the line, however many comment openers it holds.
std::string drop_block_comments(const std::string& line)
{
    std::string out;
    size_t at = 0;
    for (;;) {
        size_t open = line.find("/*", at);
        size_t close = open == std::string::npos ? std::string::npos : line.find("*/", open + 2);
        if (close == std::string::npos) {
            out.append(line, at, std::string::npos);
            return out;
        }
        out.append(line, at, open - at);
        out += ' ';
        at = close + 2;
    }
}

// Every logical line (physical lines joined at backslash-newline) shaped like an include
// directive once same-line block comments are dropped, wherever it stands.
std::vector<ScreenedInclude> backstop_includes(std::string_view source)
{
    static const Regex directive(R"(^[ \t\f\v\r]*(?:#|%:)[ \t\f\v\r]*(include_next|include|import|embed)\b[ \t\f\v\r]*(.*)$)");
    std::vector<ScreenedInclude> out;
    int line = 1;
    size_t i = 0;
    while (i <= source.size()) {
        int first_line = line;
        std::string logical;
        for (;;) {
            size_t end = source.find('\n', i);
            if (end == std::string_view::npos)
                end = source.size();
            std::string_view piece = source.substr(i, end - i);
            i = end + 1;
            ++line;
            bool spliced = !piece.empty() && (piece.back() == '\\' || (piece.size() >= 2 && piece.back() == '\r' &&
                                                                      piece[piece.size() - 2] == '\\'));
            if (spliced && i <= source.size()) {
                logical += piece.substr(0, piece.rfind('\\'));
                continue;
            }
            logical += piece;
            break;
        }
        logical = drop_block_comments(logical);
        if (auto m = directive.search(logical)) {
            ScreenedInclude inc;
            inc.form = fmt::format("#{}", m->groups[0].value_or(""));
            inc.line = first_line;
            std::string rest(m->groups[1].value_or(""));
            if (!rest.empty() && (rest[0] == '<' || rest[0] == '"')) {
                size_t stop = rest.find(rest[0] == '<' ? '>' : '"', 1);
                if (stop != std::string::npos) {
                    inc.angled = rest[0] == '<';
                    inc.name = rest.substr(1, stop - 1);
                }
            }
            out.push_back(std::move(inc));
        }
    }
    return out;
}

std::string describe_include(const ScreenedInclude& inc)
{
    if (inc.name.empty())
        return inc.form;
    std::string quoted = inc.angled ? "<" + inc.name + ">" : "\"" + inc.name + "\"";
    return inc.form.front() == '#' ? inc.form + " " + quoted : inc.form + "(" + quoted + ")";
}

bool inside(const std::filesystem::path& file, const std::filesystem::path& dir)
{
    std::error_code ec;
    auto real_file = std::filesystem::canonical(file, ec);
    if (ec)
        return false;
    auto real_dir = std::filesystem::canonical(dir, ec);
    if (ec)
        return false;
    auto rel = real_file.lexically_relative(real_dir);
    return !rel.empty() && *rel.begin() != "..";
}

} // namespace

std::string check_include_name(std::string_view name)
{
    if (name.empty())
        return "the header name must be written literally (a macro-expanded include cannot be checked)";
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '/' && c != '-' && c != '+')
            return fmt::format("'{}' contains characters no toolkit header name has", name);
    if (name.front() == '/')
        return "absolute paths are not allowed";
    for (const auto& part : split(name, '/'))
        if (part.empty() || part == "." || part == "..")
            return "only plain header names are allowed (no '.', '..' or empty path components)";
    if (is_shim_header(name))
        return "";
    for (const auto& dir : toolkit_include_dirs()) {
        auto file = dir / std::string(name);
        std::error_code ec;
        if (std::filesystem::is_regular_file(file, ec) && inside(file, dir))
            return "";
    }
    return fmt::format("'{}' is not a CUDA toolkit header (NVRTC has no C++ standard library)", name);
}

std::vector<ScreenedInclude> scan_includes(std::string_view source)
{
    std::vector<ScreenedInclude> out = exact_includes(lex_source(source));
    std::set<std::pair<int, std::string>> seen;
    for (const auto& inc : out)
        seen.insert({inc.line, inc.form});
    for (auto& inc : backstop_includes(source))
        if (seen.insert({inc.line, inc.form}).second)
            out.push_back(std::move(inc));
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.line < b.line; });
    return out;
}

std::vector<std::string> screen_includes(std::string_view source)
{
    std::vector<std::string> problems;
    for (const auto& inc : scan_includes(source)) {
        std::string why;
        if (inc.form == "#import" || inc.form == "#embed" || inc.form == "#include_next" || inc.form == "__has_include_next")
            why = inc.form + " is not allowed";
        else
            why = check_include_name(inc.name);
        if (!why.empty())
            problems.push_back(fmt::format("line {}: `{}` is not allowed: {}.", inc.line, describe_include(inc), why));
    }
    if (!problems.empty())
        problems.push_back(
            "Candidates may include only CUDA toolkit headers (e.g. <cuda_fp16.h>, <cuda_bf16.h>, <cuda_fp8.h>, "
            "<mma.h>, <cuda_pipeline.h>, <cooperative_groups.h>, <cuda/barrier>, <cuda/pipeline>, <cuda/ptx>, "
            "<cuda/std/...>, <cub/block/...>) and kforge's shims " + describe_shim_headers() +
            ". The fixed-width integers, INT_MAX, FLT_MAX, INFINITY, NAN, M_PI, __half and __nv_bfloat16 are "
            "available without any include. Include lines are checked even inside comments and strings.");
    return problems;
}

std::string angle_quoted_includes(std::string_view source)
{
    std::string out(source);
    for (const auto& inc : exact_includes(lex_source(source)))
        if (inc.form == "#include" && !inc.angled && !inc.name.empty() && check_include_name(inc.name).empty()) {
            out[inc.open_offset] = '<';
            out[inc.close_offset] = '>';
        }
    return out;
}

} // namespace kforge
