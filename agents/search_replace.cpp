// Parsing and applying SEARCH/REPLACE edits; see search_replace.hpp for the rules.
//
// Both the parent and each SEARCH text are handled as lines. Exact matching compares whole lines
// (ignoring only a trailing '\r'), so a SEARCH text can never match half a line. The tolerant pass
// compares lines with indentation and whitespace runs normalised and blank lines skipped, which is
// where weaker models usually go wrong; the replaced range then runs from the first to the last
// matched source line.
#include "agents/search_replace.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "util/text.hpp"

namespace kforge {
namespace {

enum class Marker { none, search, divider, replace };

Marker marker_of(std::string_view line)
{
    std::string text = trim(line);
    auto run = [&](char c) {
        size_t n = 0;
        while (n < text.size() && text[n] == c)
            ++n;
        return n;
    };
    size_t n = run('<');
    if (n >= 5 && n <= 9 && to_lower(trim(std::string_view(text).substr(n))).rfind("search", 0) == 0)
        return Marker::search;
    n = run('=');
    if (n >= 5 && n <= 9 && n == text.size())
        return Marker::divider;
    n = run('>');
    if (n >= 5 && n <= 9 && to_lower(trim(std::string_view(text).substr(n))).rfind("replace", 0) == 0)
        return Marker::replace;
    return Marker::none;
}

std::vector<std::string> split_lines(std::string_view text)
{
    std::vector<std::string> lines = split(text, '\n');
    for (auto& line : lines)
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
    return lines;
}

std::string normalize(std::string_view line)
{
    std::string out;
    bool space = false;
    for (char c : trim(line)) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            space = true;
            continue;
        }
        if (space)
            out += ' ';
        space = false;
        out += c;
    }
    return out;
}

struct Match {
    size_t first = 0; // source lines [first, last)
    size_t last = 0;
};

// Every place where `search` matches `source` line for line, exactly.
std::vector<Match> exact_matches(const std::vector<std::string>& source, const std::vector<std::string>& search)
{
    std::vector<Match> found;
    if (search.empty() || search.size() > source.size())
        return found;
    for (size_t i = 0; i + search.size() <= source.size() && found.size() < 2; ++i)
        if (std::equal(search.begin(), search.end(), source.begin() + static_cast<std::ptrdiff_t>(i)))
            found.push_back({i, i + search.size()});
    return found;
}

// Every place where the non-blank lines of `search` match consecutive non-blank source lines after
// normalising whitespace.
std::vector<Match> tolerant_matches(const std::vector<std::string>& source, const std::vector<std::string>& search)
{
    std::vector<std::string> wanted;
    for (const auto& line : search)
        if (std::string n = normalize(line); !n.empty())
            wanted.push_back(std::move(n));
    std::vector<size_t> index;
    std::vector<std::string> have;
    for (size_t i = 0; i < source.size(); ++i)
        if (std::string n = normalize(source[i]); !n.empty()) {
            index.push_back(i);
            have.push_back(std::move(n));
        }
    std::vector<Match> found;
    if (wanted.empty() || wanted.size() > have.size())
        return found;
    for (size_t i = 0; i + wanted.size() <= have.size() && found.size() < 2; ++i)
        if (std::equal(wanted.begin(), wanted.end(), have.begin() + static_cast<std::ptrdiff_t>(i)))
            found.push_back({index[i], index[i + wanted.size() - 1] + 1});
    return found;
}

std::string first_nonblank(const std::vector<std::string>& lines)
{
    for (const auto& line : lines)
        if (!trim(line).empty())
            return line;
    return "";
}

std::string closest_line_hint(const std::vector<std::string>& source, const std::string& wanted)
{
    std::string target = normalize(wanted).substr(0, 100);
    size_t best = source.size();
    size_t best_distance = std::string::npos;
    for (size_t i = 0; i < source.size() && i < 4000; ++i) {
        std::string line = normalize(source[i]).substr(0, 100);
        if (line.empty())
            continue;
        size_t distance = edit_distance(line, target);
        if (distance < best_distance) {
            best_distance = distance;
            best = i;
        }
    }
    if (best == source.size() || best_distance > target.size() / 2 + 2)
        return "";
    return fmt::format("\nThe most similar line of the current source is line {}:\n    {}", best + 1, trim(source[best]));
}

} // namespace

EditParse find_edit_blocks(std::string_view reply)
{
    EditParse parse;
    std::vector<std::string> lines = split_lines(reply);
    enum class State { outside, search, replace } state = State::outside;
    EditBlock block;
    std::vector<std::string> search, replace;
    for (size_t i = 0; i < lines.size(); ++i) {
        Marker marker = marker_of(lines[i]);
        int line_number = static_cast<int>(i) + 1;
        if (state == State::outside) {
            if (marker == Marker::search) {
                state = State::search;
                block = EditBlock{};
                block.reply_line = line_number;
                search.clear();
                replace.clear();
            }
        } else if (state == State::search) {
            if (marker == Marker::divider)
                state = State::replace;
            else if (marker == Marker::search || marker == Marker::replace) {
                parse.problem = fmt::format("edit block {} (reply line {}) has no '=======' line between its "
                                            "SEARCH and REPLACE parts",
                                            parse.edits.size() + 1, block.reply_line);
                return parse;
            } else
                search.push_back(lines[i]);
        } else if (marker == Marker::replace) {
            block.search = join(search, "\n");
            block.replace = join(replace, "\n");
            parse.edits.push_back(std::move(block));
            state = State::outside;
        } else if (marker == Marker::search) {
            parse.problem = fmt::format("edit block {} (reply line {}) has no '>>>>>>> REPLACE' line before the "
                                        "next SEARCH",
                                        parse.edits.size() + 1, block.reply_line);
            return parse;
        } else {
            replace.push_back(lines[i]);
        }
    }
    if (state != State::outside)
        parse.problem = fmt::format("edit block {} (reply line {}) never ends: no {} line (was the reply cut off?)",
                                    parse.edits.size() + 1, block.reply_line,
                                    state == State::search ? "'=======' or '>>>>>>> REPLACE'" : "'>>>>>>> REPLACE'");
    return parse;
}

EditOutcome apply_edits(std::string_view parent, const std::vector<EditBlock>& edits)
{
    EditOutcome outcome;
    bool ends_with_newline = !parent.empty() && parent.back() == '\n';
    std::vector<std::string> source = split_lines(parent);
    if (ends_with_newline)
        source.pop_back();
    auto fail = [&](size_t n, const EditBlock& edit, const std::string& why) {
        outcome.problem = fmt::format("The SEARCH/REPLACE edits did not apply, so nothing was changed. Edit {} of {} "
                                      "(reply line {}) failed: {}",
                                      n + 1, edits.size(), edit.reply_line, why);
        return outcome;
    };
    for (size_t n = 0; n < edits.size(); ++n) {
        const EditBlock& edit = edits[n];
        std::vector<std::string> search = split_lines(edit.search);
        while (!search.empty() && trim(search.back()).empty())
            search.pop_back();
        while (!search.empty() && trim(search.front()).empty())
            search.erase(search.begin());
        if (search.empty())
            return fail(n, edit, "its SEARCH part is empty. Quote the lines to replace, copied from the current source.");
        std::vector<Match> found = exact_matches(source, search);
        if (found.empty())
            found = tolerant_matches(source, search);
        if (found.empty())
            return fail(n, edit,
                        fmt::format("its SEARCH text matches no place in the current source, not even ignoring "
                                    "whitespace. Its first line was:\n    {}{}\nCopy SEARCH lines exactly from the "
                                    "current source, or reply with the whole file.",
                                    trim(first_nonblank(search)), closest_line_hint(source, first_nonblank(search))));
        if (found.size() > 1)
            return fail(n, edit,
                        fmt::format("its SEARCH text matches more than one place (lines {} and {} at least). Include "
                                    "more surrounding lines so that it matches exactly one.",
                                    found[0].first + 1, found[1].first + 1));
        std::vector<std::string> replacement = edit.replace.empty() ? std::vector<std::string>{} : split_lines(edit.replace);
        source.erase(source.begin() + static_cast<std::ptrdiff_t>(found[0].first),
                     source.begin() + static_cast<std::ptrdiff_t>(found[0].last));
        source.insert(source.begin() + static_cast<std::ptrdiff_t>(found[0].first), replacement.begin(), replacement.end());
    }
    std::string result = join(source, "\n");
    if (ends_with_newline)
        result += '\n';
    outcome.source = std::move(result);
    return outcome;
}

} // namespace kforge
