// Regular expressions that run in linear time, whatever the pattern and the text.
//
// kforge matches patterns it did not write (a shared task spec's `forbid` list) against text it did
// not write (a model's candidate source, up to a MiB). A backtracking engine (std::regex, PCRE) can
// take exponential time on a pattern such as `((.*)*)*z`, and libstdc++'s recurses once per
// character matched, so a long line overflows the stack. Regex wraps RE2 (Debian's libre2-dev), an
// automaton-based engine: matching is linear in the text for every pattern, and a pattern RE2 cannot
// compile within its memory bound is refused at compile time with RE2's reason.
//
// The syntax is RE2's (https://github.com/google/re2/wiki/Syntax): Perl-like classes, `\b`,
// non-greedy `*?`, `(?i)`; no backreferences and no lookaround.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace kforge {

struct RegexMatch {
    size_t offset = 0;                                    // of the whole match in the searched text
    size_t length = 0;
    std::vector<std::optional<std::string_view>> groups;  // capture groups 1..n; nullopt when unset
};

// An immutable compiled pattern. Copies share the compiled form; const methods may be called from
// several threads at once.
class Regex
{
public:
    // Compiles kforge's own fixed patterns; throws std::invalid_argument for a bad one (a bug).
    explicit Regex(std::string_view pattern);
    // Compiles a pattern from outside: nullopt and RE2's reason in `error` when it is not valid
    // RE2 syntax or needs more than RE2's memory bound.
    static std::optional<Regex> compile(std::string_view pattern, std::string& error);

    const std::string& pattern() const { return m_pattern; }
    // The first match starting at or after `from` (`^`, `$` and `\b` still see the text before
    // `from`), with its capture groups; nullopt when there is none.
    std::optional<RegexMatch> search(std::string_view text, size_t from = 0) const;
    // Whether the pattern matches all of `text`.
    bool full_match(std::string_view text) const;

private:
    Regex() = default;
    std::string m_pattern;
    std::shared_ptr<const re2::RE2> m_re;
};

} // namespace kforge
