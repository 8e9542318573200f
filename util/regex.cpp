// The RE2 wrapper of regex.hpp. RE2 reports errors through its own logging unless asked to be
// quiet; kforge passes them on as messages instead.
#include "util/regex.hpp"

#include <re2/re2.h>

namespace kforge {
namespace {

std::shared_ptr<const re2::RE2> build(std::string_view pattern)
{
    re2::RE2::Options options;
    options.set_log_errors(false);
    return std::make_shared<const re2::RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
}

} // namespace

Regex::Regex(std::string_view pattern) : m_pattern(pattern), m_re(build(pattern))
{
    if (!m_re->ok())
        throw std::invalid_argument("internal error: bad regular expression '" + m_pattern + "': " + m_re->error());
}

std::optional<Regex> Regex::compile(std::string_view pattern, std::string& error)
{
    Regex regex;
    regex.m_pattern = std::string(pattern);
    regex.m_re = build(pattern);
    if (!regex.m_re->ok()) {
        error = regex.m_re->error();
        return std::nullopt;
    }
    return regex;
}

std::optional<RegexMatch> Regex::search(std::string_view text, size_t from) const
{
    if (from > text.size())
        return std::nullopt;
    int groups = m_re->NumberOfCapturingGroups();
    std::vector<re2::StringPiece> pieces(static_cast<size_t>(groups) + 1);
    if (!m_re->Match(re2::StringPiece(text.data(), text.size()), from, text.size(), re2::RE2::UNANCHORED,
                     pieces.data(), groups + 1))
        return std::nullopt;
    RegexMatch match;
    match.offset = static_cast<size_t>(pieces[0].data() - text.data());
    match.length = pieces[0].size();
    for (int i = 1; i <= groups; ++i) {
        const re2::StringPiece& piece = pieces[static_cast<size_t>(i)];
        if (piece.data() == nullptr)
            match.groups.emplace_back(std::nullopt);
        else
            match.groups.emplace_back(std::string_view(piece.data(), piece.size()));
    }
    return match;
}

bool Regex::full_match(std::string_view text) const
{
    return re2::RE2::FullMatch(re2::StringPiece(text.data(), text.size()), *m_re);
}

} // namespace kforge
