// screen_source(): every rule of screen.hpp applied to one candidate, all problems reported at
// once (a model repairs them in one round), each with its line.
#include <algorithm>

#include <fmt/format.h>

#include "core/source.hpp"
#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/macro_bound.hpp"
#include "evaluator/compile/screen.hpp"
#include "util/interrupt.hpp"
#include "util/limits.hpp"
#include "util/regex.hpp"
#include "util/text.hpp"

namespace kforge {

namespace {

struct PatternRule {
    Regex regex;        // const after construction, so threads may share it
    bool in_literals;   // searched in LexedSource::text (asm strings) rather than code
    std::string what;
};

// Rule 4 (device-side launches) and rule 5 (clock reads) of screen.hpp.
const std::vector<PatternRule>& harness_rules()
{
    const std::string clock_read = "reading a clock is not allowed: a kernel's output must depend only on its inputs";
    static const std::vector<PatternRule> rules = {
        {Regex(R"(<<<)"), false,
         "device-side kernel launches are not allowed: kforge launches every kernel itself from the plan, "
         "and work started from the device would escape the launch count and the timed range"},
        {Regex(R"(\b(cudaLaunchDevice(_v2)?|cudaGetParameterBuffer(V2)?|cudaLaunchKernel(Ex)?|cudaLaunchCooperativeKernel|)"
         R"(cudaGraphLaunch|cudaStreamTailLaunch|cudaStreamFireAndForget|cudaStreamCreateWithFlags|)"
         R"(cudaDeviceSynchronize)\b)"),
         false,
         "the device runtime's launch and stream APIs are not allowed: kforge launches every kernel itself "
         "from the plan"},
        {Regex(R"(%(globaltimer(_lo|_hi)?|clock(64|_hi)?)\b)"), true, clock_read},
        {Regex(R"(\b(clock|clock64|globaltimer)\s*\()"), false, clock_read},
        {Regex(R"(\bget_sreg_(globaltimer(_lo|_hi)?|clock(64|_hi)?)\b)"), false, clock_read},
    };
    return rules;
}

// The physical line of `offset` in the lexed text (an empty match may sit at its very end).
int line_at(const LexedSource& lexed, size_t offset)
{
    if (lexed.line.empty())
        return 1;
    return lexed.line[std::min(offset, lexed.line.size() - 1)];
}

std::string excerpt(const std::string& text, size_t at, size_t length)
{
    std::string s = text.substr(at, std::min<size_t>(length, 60));
    for (char& c : s)
        if (c == '\n')
            c = ' ';
    return trim(s);
}

void screen_patterns(const LexedSource& lexed, std::vector<std::string>& problems)
{
    for (const auto& rule : harness_rules()) {
        const std::string& haystack = rule.in_literals ? lexed.text : lexed.code;
        if (auto m = rule.regex.search(haystack)) {
            problems.push_back(fmt::format("line {}: `{}`: {}.", line_at(lexed, m->offset),
                                           excerpt(haystack, m->offset, m->length), rule.what));
        }
    }
}

void screen_forbidden(const Task& task, const LexedSource& lexed, std::vector<std::string>& problems)
{
    for (const auto& pattern : task.forbid) {
        std::string error;
        std::optional<Regex> re = Regex::compile(pattern.regex, error);
        if (!re)
            continue; // load_task() already refused a spec with an invalid pattern
        // RE2 matches in time linear in the source whatever the pattern (util/regex.hpp).
        if (auto m = re->search(lexed.code)) {
            problems.push_back(fmt::format("line {}: `{}` is not allowed in this task: {}.", line_at(lexed, m->offset),
                                           excerpt(lexed.code, m->offset, m->length), pattern.reason));
        }
    }
}

std::vector<std::string> missing_kernels(const std::string& source, const std::vector<std::string>& plan_kernels)
{
    std::vector<std::string> defined = find_kernel_names(source);
    std::vector<std::string> problems;
    for (const auto& kernel : plan_kernels) {
        if (std::find(defined.begin(), defined.end(), kernel) != defined.end())
            continue;
        std::string have = defined.empty() ? "it defines no __global__ function"
                                           : "its __global__ functions are " + join(defined, ", ");
        std::string hint = closest_match(kernel, defined);
        problems.push_back(fmt::format("the plan launches kernel '{}', which the source does not define ({}){}.", kernel,
                                       have, hint.empty() ? "" : fmt::format("; did you mean '{}'?", hint)));
    }
    return problems;
}

} // namespace

std::optional<Verdict> screen_source(const Task& task, const std::string& source, const std::vector<std::string>& plan_kernels)
{
    if (source.size() > k_max_source_bytes)
        return Verdict{VerdictKind::compile_error,
                       fmt::format("the source is {} bytes; kforge compiles at most {} bytes", source.size(), k_max_source_bytes)};
    if (size_t nul = source.find('\0'); nul != std::string::npos)
        return Verdict{VerdictKind::compile_error,
                       fmt::format("line {}: the source contains a NUL byte", 1 + std::count(source.begin(), source.begin() + static_cast<long>(nul), '\n'))};

    std::vector<std::string> problems = missing_kernels(source, plan_kernels);
    VerdictKind kind = problems.empty() ? VerdictKind::compile_error : VerdictKind::plan_error;
    LexedSource lexed = lex_source(source);
    if (std::string expansion = check_macro_expansion(lexed); !expansion.empty())
        problems.push_back(fmt::format("the source cannot be compiled: {}.", expansion));
    screen_patterns(lexed, problems);
    screen_forbidden(task, lexed, problems);
    for (auto& p : screen_includes(source))
        problems.push_back(std::move(p));
    if (problems.empty())
        return std::nullopt;
    return Verdict{kind, join(problems, "\n")};
}

} // namespace kforge
