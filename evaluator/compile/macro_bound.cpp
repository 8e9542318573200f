// check_macro_expansion(): a bound on what a candidate's own macros expand to, before NVRTC runs.
//
// A ten-line source can define a macro that doubles itself forty times; NVRTC then expands 2^40
// tokens and holds a compile worker until its deadline. This file runs a small preprocessor over the
// screened source (comments gone, literals blanked: LexedSource::code) that only counts: it reads
// every #define and #undef in order, then expands the other lines the way the C preprocessor does
// (object-like and function-like macros, arguments expanded before substitution except beside # or
// ##, the result rescanned together with the tokens that follow, hide sets against recursion) and
// counts every token it produces, argument expansions included. The count stops at the limit, so the
// check costs at most k_max_macro_tokens steps whatever the source.
//
// It is a bound, not a compiler: conditionals are not evaluated (both branches count), `##` joins
// nothing (its operands count apart), and macros from toolkit headers or -D params are unknown
// names (one token each). Each simplification can only count a little more or a little less than
// NVRTC would, never exponentially so.
#include "evaluator/compile/macro_bound.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "util/interrupt.hpp"

namespace kforge {
namespace {

struct Token {
    int text = 0;     // interned spelling
    int hideset = 0;  // interned set of macros that may not expand this token
};

struct Macro {
    bool function_like = false;
    std::vector<int> params;       // interned names; "__VA_ARGS__" for `...`
    std::vector<int> body;         // interned spellings
};

bool is_macro_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }
bool is_macro_name_char(char c) { return is_macro_name_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

class MacroCounter
{
public:
    explicit MacroCounter(uint64_t limit) : m_limit(limit)
    {
        m_hidesets.emplace_back();  // 0: the empty set
        m_open = intern("(");
        m_close = intern(")");
        m_comma = intern(",");
        m_hash = intern("#");
        m_hash_hash = intern("##");
        m_va_args = intern("__VA_ARGS__");
    }

    // Reads the source line by line: directives define and undefine, the lines between them are
    // expanded as one stream (a call's arguments may span lines). Returns "" or the problem.
    std::string run(const std::string& code)
    {
        std::vector<int> segment;
        size_t at = 0;
        while (at <= code.size() && !m_stopped) {
            size_t end = code.find('\n', at);
            if (end == std::string::npos)
                end = code.size();
            std::string_view line(code.data() + at, end - at);
            at = end + 1;
            size_t first = line.find_first_not_of(" \t\f\v\r");
            if (first != std::string_view::npos && line[first] == '#') {
                expand_segment(segment);
                read_directive(line.substr(first + 1));
                continue;
            }
            std::vector<int> texts = tokenize(line);
            segment.insert(segment.end(), texts.begin(), texts.end());
        }
        expand_segment(segment);
        return m_problem;
    }

private:
    void expand_segment(std::vector<int>& segment)
    {
        std::vector<Token> pending;
        pending.reserve(segment.size());
        for (auto it = segment.rbegin(); it != segment.rend(); ++it)
            pending.push_back({*it, 0});
        segment.clear();
        expand(pending, nullptr, 0);
    }

    int intern(std::string_view spelling)
    {
        auto it = m_ids.find(std::string(spelling));
        if (it != m_ids.end())
            return it->second;
        int id = static_cast<int>(m_spellings.size());
        m_spellings.emplace_back(spelling);
        m_ids.emplace(std::string(spelling), id);
        return id;
    }

    bool is_identifier(int text) const { return is_macro_name_start(m_spellings[static_cast<size_t>(text)][0]); }

    std::vector<int> tokenize(std::string_view line)
    {
        std::vector<int> out;
        size_t i = 0;
        while (i < line.size()) {
            char c = line[i];
            if (c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r') {
                ++i;
                continue;
            }
            size_t start = i;
            if (is_macro_name_start(c)) {
                while (i < line.size() && is_macro_name_char(line[i]))
                    ++i;
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                while (i < line.size() && (is_macro_name_char(line[i]) || line[i] == '.' ||
                                           ((line[i] == '+' || line[i] == '-') && (line[i - 1] == 'e' || line[i - 1] == 'E'))))
                    ++i;
            } else if (c == '#' && i + 1 < line.size() && line[i + 1] == '#') {
                i += 2;
            } else {
                ++i;
            }
            out.push_back(intern(line.substr(start, i - start)));
        }
        return out;
    }

    void read_directive(std::string_view rest)
    {
        size_t i = rest.find_first_not_of(" \t\f\v\r");
        if (i == std::string_view::npos)
            return;
        size_t name_end = i;
        while (name_end < rest.size() && is_macro_name_char(rest[name_end]))
            ++name_end;
        std::string_view directive = rest.substr(i, name_end - i);
        if (directive != "define" && directive != "undef")
            return;
        size_t m = rest.find_first_not_of(" \t\f\v\r", name_end);
        if (m == std::string_view::npos || !is_macro_name_start(rest[m]))
            return;
        size_t m_end = m;
        while (m_end < rest.size() && is_macro_name_char(rest[m_end]))
            ++m_end;
        int name = intern(rest.substr(m, m_end - m));
        if (directive == "undef") {
            m_macros.erase(name);
            return;
        }
        Macro macro;
        std::string_view body = rest.substr(m_end);
        if (!body.empty() && body[0] == '(') {  // no space before '(': function-like
            macro.function_like = true;
            size_t close = body.find(')');
            if (close == std::string_view::npos)
                return;  // malformed; NVRTC will say so
            bool variadic = false;
            for (int token : tokenize(body.substr(1, close - 1))) {
                if (m_spellings[static_cast<size_t>(token)] == ".")
                    variadic = true;
                else if (token != m_comma)
                    macro.params.push_back(token);
            }
            if (variadic)
                macro.params.push_back(m_va_args);
            body = body.substr(close + 1);
        }
        macro.body = tokenize(body);
        m_macros[name] = std::move(macro);
    }

    int hideset_with(int hideset, int macro)
    {
        auto key = std::make_pair(hideset, macro);
        if (auto it = m_unions.find(key); it != m_unions.end())
            return it->second;
        std::vector<int> members = m_hidesets[static_cast<size_t>(hideset)];
        charge(members.size()); // a new set is memory: it counts against the same bound
        if (!std::binary_search(members.begin(), members.end(), macro))
            members.insert(std::upper_bound(members.begin(), members.end(), macro), macro);
        int id;
        if (auto it = m_hideset_ids.find(members); it != m_hideset_ids.end()) {
            id = it->second;
        } else {
            id = static_cast<int>(m_hidesets.size());
            m_hidesets.push_back(members);
            m_hideset_ids.emplace(members, id);
        }
        m_unions.emplace(key, id);
        return id;
    }

    bool hidden(const Token& token) const
    {
        const auto& members = m_hidesets[static_cast<size_t>(token.hideset)];
        return std::binary_search(members.begin(), members.end(), token.text);
    }

    // One unit of work; false once the limit (or an interrupt) stops the count.
    bool charge(uint64_t units = 1)
    {
        m_work += units;
        if (m_work > m_limit) {
            stop(fmt::format("its macros expand to more than {} tokens (every intermediate expansion counted), "
                             "the most kforge lets NVRTC preprocess; a macro that repeats another grows "
                             "exponentially",
                             m_limit));
        } else if ((m_work & 0xffff) < units && interrupt_requested()) {
            m_stopped = true;  // the caller is stopping anyway; no verdict
        }
        return !m_stopped;
    }

    void stop(std::string problem)
    {
        if (!m_stopped)
            m_problem = std::move(problem);
        m_stopped = true;
    }

    // Reads a call's arguments off `pending` (its '(' already taken) up to the matching ')'.
    // nullopt when the input ends first.
    std::optional<std::vector<std::vector<Token>>> take_arguments(std::vector<Token>& pending)
    {
        std::vector<std::vector<Token>> args(1);
        int depth = 0;
        while (!pending.empty()) {
            Token t = pending.back();
            pending.pop_back();
            if (!charge())
                return std::nullopt;
            if (t.text == m_open) {
                ++depth;
            } else if (t.text == m_close) {
                if (depth == 0)
                    return args;
                --depth;
            } else if (t.text == m_comma && depth == 0) {
                args.emplace_back();
                continue;
            }
            args.back().push_back(t);
        }
        return std::nullopt;
    }

    // Expands `pending` (a stack: the next token last) to its end, counting the output. With `out`,
    // also keeps the output (the expansion of a macro argument).
    void expand(std::vector<Token>& pending, std::vector<Token>* out, int nesting)
    {
        while (!pending.empty() && !m_stopped) {
            Token t = pending.back();
            pending.pop_back();
            auto found = is_identifier(t.text) && !hidden(t) ? m_macros.find(t.text) : m_macros.end();
            if (found == m_macros.end()) {
                if (charge() && out)
                    out->push_back(t);
                continue;
            }
            const Macro& macro = found->second;
            if (!macro.function_like) {
                int hideset = hideset_with(t.hideset, t.text);
                if (!charge(macro.body.size() + 1))
                    return;
                for (auto it = macro.body.rbegin(); it != macro.body.rend(); ++it)
                    pending.push_back({*it, hideset});
                continue;
            }
            if (pending.empty() || pending.back().text != m_open) {
                if (charge() && out)
                    out->push_back(t);  // a function-like macro's name without a call
                continue;
            }
            pending.pop_back();
            auto args = take_arguments(pending);
            if (!args)
                return;
            if (nesting >= k_max_macro_nesting) {
                stop(fmt::format("macro calls are nested more than {} deep in macro arguments",
                                 k_max_macro_nesting));
                return;
            }
            substitute(macro, t, *args, pending, nesting);
        }
    }

    void substitute(const Macro& macro, const Token& name, std::vector<std::vector<Token>>& args,
                    std::vector<Token>& pending, int nesting)
    {
        std::map<size_t, std::vector<Token>> expanded;  // per parameter, on first use
        auto param_index = [&](int text) -> std::optional<size_t> {
            for (size_t p = 0; p < macro.params.size(); ++p)
                if (macro.params[p] == text)
                    return p;
            return std::nullopt;
        };
        int hideset = hideset_with(name.hideset, name.text);
        std::vector<Token> result;
        for (size_t b = 0; b < macro.body.size(); ++b) {
            int text = macro.body[b];
            auto p = param_index(text);
            if (!p) {
                if (text != m_hash_hash && !charge())
                    return;
                if (text != m_hash_hash)
                    result.push_back({text, hideset});
                continue;
            }
            // The variadic parameter takes every argument from its position on.
            std::vector<Token> raw;
            if (text == m_va_args) {
                for (size_t a = *p; a < args.size(); ++a) {
                    if (a > *p)
                        raw.push_back({m_comma, 0});
                    raw.insert(raw.end(), args[a].begin(), args[a].end());
                }
            } else if (*p < args.size()) {
                raw = args[*p];
            }
            bool beside_paste = (b > 0 && (macro.body[b - 1] == m_hash || macro.body[b - 1] == m_hash_hash)) ||
                                (b + 1 < macro.body.size() && macro.body[b + 1] == m_hash_hash);
            const std::vector<Token>* used = &raw;
            if (!beside_paste) {
                auto it = expanded.find(*p);
                if (it == expanded.end()) {
                    std::vector<Token> stack(raw.rbegin(), raw.rend());
                    std::vector<Token> out;
                    expand(stack, &out, nesting + 1);
                    if (m_stopped)
                        return;
                    it = expanded.emplace(*p, std::move(out)).first;
                }
                used = &it->second;
            }
            if (!charge(used->size()))
                return;
            for (const auto& token : *used)
                result.push_back({token.text, hideset_with(token.hideset, name.text)});
        }
        for (auto it = result.rbegin(); it != result.rend(); ++it)
            pending.push_back(*it);
    }

    uint64_t m_limit;
    uint64_t m_work = 0;
    bool m_stopped = false;
    std::string m_problem;
    std::vector<std::string> m_spellings;
    std::unordered_map<std::string, int> m_ids;
    std::unordered_map<int, Macro> m_macros;
    std::vector<std::vector<int>> m_hidesets;
    std::map<std::vector<int>, int> m_hideset_ids;
    std::map<std::pair<int, int>, int> m_unions;
    int m_open, m_close, m_comma, m_hash, m_hash_hash, m_va_args;
};

} // namespace

std::string check_macro_expansion(const LexedSource& lexed, uint64_t max_tokens)
{
    return MacroCounter(max_tokens).run(lexed.code);
}

} // namespace kforge
