// A small lexer that knows C comments, string and char literals and raw strings well enough to
// scan LLM-written CUDA; it never needs to understand the code itself.
#include "core/source.hpp"

#include <cctype>

#include "util/hash.hpp"

namespace kforge {

namespace {

std::string strip(std::string_view source, bool keep_strings)
{
    std::string out(source);
    size_t i = 0;
    size_t n = source.size();
    auto blank = [&](size_t from, size_t to) {
        for (size_t k = from; k < to && k < n; ++k)
            if (out[k] != '\n')
                out[k] = ' ';
    };
    while (i < n) {
        char c = source[i];
        if (c == '/' && i + 1 < n && source[i + 1] == '/') {
            size_t end = source.find('\n', i);
            if (end == std::string_view::npos)
                end = n;
            blank(i, end);
            i = end;
        } else if (c == '/' && i + 1 < n && source[i + 1] == '*') {
            size_t end = source.find("*/", i + 2);
            end = end == std::string_view::npos ? n : end + 2;
            blank(i, end);
            i = end;
        } else if (c == '"' || c == '\'') {
            // Keep the quotes, blank the contents; honour backslash escapes.
            size_t j = i + 1;
            while (j < n && source[j] != c && source[j] != '\n') {
                if (source[j] == '\\')
                    ++j;
                ++j;
            }
            if (!keep_strings)
                blank(i + 1, j);
            i = j + 1;
        } else {
            ++i;
        }
    }
    return out;
}

} // namespace

std::string strip_comments_and_strings(std::string_view source) { return strip(source, false); }

std::string strip_comments(std::string_view source) { return strip(source, true); }

std::vector<std::string> find_kernel_names(std::string_view source)
{
    std::string code = strip_comments_and_strings(source);
    std::vector<std::string> names;
    constexpr std::string_view k_global = "__global__";
    size_t at = 0;
    while ((at = code.find(k_global, at)) != std::string::npos) {
        at += k_global.size();
        // The kernel's name is the identifier right before the first '(' that follows, skipping
        // attributes such as __launch_bounds__(...) which come before the return type.
        size_t scan = at;
        for (;;) {
            size_t paren = code.find('(', scan);
            if (paren == std::string::npos)
                return names;
            size_t end = paren;
            while (end > at && std::isspace(static_cast<unsigned char>(code[end - 1])))
                --end;
            size_t begin = end;
            while (begin > at && (std::isalnum(static_cast<unsigned char>(code[begin - 1])) || code[begin - 1] == '_'))
                --begin;
            std::string name = code.substr(begin, end - begin);
            if (name == "__launch_bounds__" || name == "__maxnreg__" || name == "__cluster_dims__" ||
                name == "__align__" || name == "__attribute__") {
                // Skip the attribute's parenthesised arguments.
                int depth = 0;
                size_t k = paren;
                for (; k < code.size(); ++k) {
                    if (code[k] == '(')
                        ++depth;
                    else if (code[k] == ')' && --depth == 0)
                        break;
                }
                scan = k + 1;
                continue;
            }
            if (!name.empty())
                names.push_back(name);
            at = paren;
            break;
        }
    }
    return names;
}

std::vector<IncludeDirective> find_includes(std::string_view source)
{
    // Positions come from the stripped text (so a commented-out include is ignored); the path is
    // read from the original, where the string contents survive.
    std::string code = strip_comments_and_strings(source);
    std::vector<IncludeDirective> out;
    int line = 1;
    size_t i = 0;
    while (i < code.size()) {
        size_t end = code.find('\n', i);
        if (end == std::string::npos)
            end = code.size();
        size_t k = i;
        while (k < end && std::isspace(static_cast<unsigned char>(code[k])))
            ++k;
        if (k < end && code[k] == '#') {
            ++k;
            while (k < end && std::isspace(static_cast<unsigned char>(code[k])))
                ++k;
            if (code.compare(k, 7, "include") == 0) {
                k += 7;
                while (k < end && std::isspace(static_cast<unsigned char>(code[k])))
                    ++k;
                if (k < end && (code[k] == '<' || code[k] == '"')) {
                    char close = code[k] == '<' ? '>' : '"';
                    size_t stop = source.find(close, k + 1);
                    if (stop != std::string_view::npos && stop < end)
                        out.push_back({std::string(source.substr(k + 1, stop - k - 1)), close == '>', line});
                } else {
                    // A macro-expanded include cannot be screened; report it with an empty path.
                    out.push_back({"", false, line});
                }
            }
        }
        i = end + 1;
        ++line;
    }
    return out;
}

std::string normalized_source_hash(std::string_view source)
{
    std::string code = strip(source, true);
    std::string collapsed;
    collapsed.reserve(code.size());
    bool in_space = false;
    for (char c : code) {
        if (std::isspace(static_cast<unsigned char>(c))) {
            in_space = true;
            continue;
        }
        if (in_space && !collapsed.empty())
            collapsed += ' ';
        in_space = false;
        collapsed += c;
    }
    return hash_hex(collapsed);
}

std::vector<std::string> identifiers_used(std::string_view source, const std::vector<std::string>& names)
{
    std::string code = strip_comments_and_strings(source);
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    std::vector<std::string> used;
    for (const auto& name : names) {
        for (size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1)) {
            bool starts = at == 0 || !word(code[at - 1]);
            bool ends = at + name.size() == code.size() || !word(code[at + name.size()]);
            if (starts && ends) {
                used.push_back(name);
                break;
            }
        }
    }
    return used;
}

} // namespace kforge
