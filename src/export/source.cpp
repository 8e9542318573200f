// annotate_default_device(): a declaration scanner, not a C++ parser. It walks the source with
// comments, strings and preprocessor lines blanked (core/source.hpp keeps every offset), tracks the
// scopes whose declarations matter (the file, namespaces, extern "C" blocks, class bodies), skips
// every other brace block (function bodies, initializers, enums) whole, and looks at each
// declaration only where it ends: at its `;` or at the `{` of a function body. That is enough for
// the shapes LLM-written kernels take, and anything it cannot classify it leaves unchanged.
#include <algorithm>
#include <cctype>

#include "export/source.hpp"
#include "core/source.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

enum class Scope
{
    file,
    linkage,
    klass
};

bool is_word_char(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Positions in `text` where `word` stands as a whole word.
bool has_word(std::string_view text, std::string_view word)
{
    for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
        bool left = at == 0 || !is_word_char(text[at - 1]);
        bool right = at + word.size() >= text.size() || !is_word_char(text[at + word.size()]);
        if (left && right)
            return true;
    }
    return false;
}

size_t skip_space(std::string_view text, size_t at)
{
    while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at])))
        ++at;
    return at;
}

std::string word_at(std::string_view text, size_t at)
{
    size_t end = at;
    while (end < text.size() && is_word_char(text[end]))
        ++end;
    return std::string(text.substr(at, end - at));
}

// Where a specifier may be inserted: past `template <...>` headers, `[[attributes]]` and an
// `extern "C"` linkage prefix, which must all come first.
size_t specifier_position(std::string_view head)
{
    size_t at = skip_space(head, 0);
    for (;;) {
        if (word_at(head, at) == "template") {
            size_t open = head.find('<', at);
            if (open == std::string_view::npos)
                return at;
            int depth = 0;
            size_t i = open;
            for (; i < head.size(); ++i) {
                depth += head[i] == '<' ? 1 : head[i] == '>' ? -1 : 0;
                if (depth == 0)
                    break;
            }
            at = skip_space(head, i + 1);
        } else if (head.substr(at, 2) == "[[") {
            size_t close = head.find("]]", at);
            if (close == std::string_view::npos)
                return at;
            at = skip_space(head, close + 2);
        } else if (size_t quote = skip_space(head, at + 6);
                   word_at(head, at) == "extern" && quote < head.size() && head[quote] == '"') {
            size_t close = head.find('"', quote + 1);
            at = skip_space(head, close == std::string_view::npos ? head.size() : close + 1);
        } else {
            return at;
        }
    }
}

// The first `c` outside parentheses, brackets and braces, or npos.
size_t find_top_level(std::string_view text, char c)
{
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        char t = text[i];
        if (depth == 0 && t == c)
            return i;
        depth += (t == '(' || t == '[' || t == '{')   ? 1
                 : (t == ')' || t == ']' || t == '}') ? -1
                                                      : 0;
    }
    return std::string_view::npos;
}

// The identifier that ends right before `at`.
std::string name_before(std::string_view text, size_t at)
{
    size_t end = at;
    while (end > 0 && std::isspace(static_cast<unsigned char>(text[end - 1])))
        --end;
    size_t begin = end;
    while (begin > 0 &&
           (is_word_char(text[begin - 1]) || text[begin - 1] == ':' || text[begin - 1] == '~'))
        --begin;
    return std::string(text.substr(begin, end - begin));
}

// alignas(16), __align__(16) and friends: parentheses that are not a parameter list.
bool is_attribute(const std::string& name)
{
    return name == "alignas" || name == "__align__" || name == "__attribute__" ||
           name == "__declspec";
}

// "S" from "struct alignas(16) S : Base".
std::string class_name_of(std::string_view head)
{
    size_t at = skip_space(head, 0);
    at = skip_space(head, at + word_at(head, at).size());
    while (at < head.size()) {
        std::string word = word_at(head, at);
        if (!is_attribute(word) && word != "struct" && word != "class" && word != "union")
            return word;
        at = skip_space(head, at + word.size());
        if (at < head.size() && head[at] == '(') {
            size_t close = head.find(')', at);
            at = close == std::string_view::npos ? head.size() : skip_space(head, close + 1);
        }
    }
    return "";
}

class Annotator
{
public:
    explicit Annotator(std::string_view source)
        : m_source(source), m_code(strip_comments_and_strings(source))
    {
        blank_preprocessor_lines();
    }

    DeviceAnnotation run()
    {
        scan_scope(0, Scope::file, "");
        // A class's members are seen before the declaration that holds them ends: sort by offset.
        std::sort(m_marks.begin(), m_marks.end());
        DeviceAnnotation result{std::string(m_source), {}};
        for (auto it = m_marks.rbegin(); it != m_marks.rend(); ++it)
            result.source.insert(it->first, "__device__ ");
        for (const auto& mark : m_marks)
            result.annotated.push_back(mark.second);
        return result;
    }

private:
    void blank_preprocessor_lines()
    {
        bool continued = false;
        for (size_t line = 0; line < m_code.size();) {
            size_t end = m_code.find('\n', line);
            end = end == std::string::npos ? m_code.size() : end;
            size_t first = skip_space(std::string_view(m_code).substr(0, end), line);
            bool directive = continued || (first < end && m_code[first] == '#');
            if (directive) {
                size_t last = end;
                while (last > line && std::isspace(static_cast<unsigned char>(m_code[last - 1])))
                    --last;
                continued = last > line && m_code[last - 1] == '\\';
                for (size_t i = line; i < end; ++i)
                    m_code[i] = ' ';
            }
            line = end + 1;
        }
    }

    // The index of the '}' matching the '{' at `open` (or the end of the code).
    size_t skip_braces(size_t open) const
    {
        int depth = 0;
        for (size_t i = open; i < m_code.size(); ++i) {
            depth += m_code[i] == '{' ? 1 : m_code[i] == '}' ? -1 : 0;
            if (depth == 0)
                return i;
        }
        return m_code.size();
    }

    // Scans declarations from `at` to the '}' closing this scope; returns that brace's index.
    size_t scan_scope(size_t at, Scope scope, const std::string& class_name)
    {
        size_t start = at;
        int depth = 0;
        for (; at < m_code.size(); ++at) {
            char c = m_code[at];
            if (c == '(' || c == '[') {
                ++depth;
            } else if ((c == ')' || c == ']') && depth > 0) {
                --depth;
            } else if (depth > 0) {
                continue;
            } else if (c == ';') {
                declaration(start, at, scope, class_name, false);
                start = at + 1;
            } else if (c == '}') {
                return at;
            } else if (c == ':' && scope == Scope::klass) {
                std::string head = trim(std::string_view(m_code).substr(start, at - start));
                if (head == "public" || head == "private" || head == "protected")
                    start = at + 1;
            } else if (c == '{') {
                std::string_view head = std::string_view(m_code).substr(start, at - start);
                std::string_view rest = head.substr(specifier_position(head));
                std::string lead = word_at(rest, skip_space(rest, 0));
                size_t paren = find_top_level(rest, '(');
                bool initializer = find_top_level(rest, '=') != std::string_view::npos;
                bool function = !initializer && paren != std::string_view::npos &&
                                !is_attribute(name_before(rest, paren)) && lead != "enum";
                if (lead == "namespace" || (lead == "inline" && has_word(rest, "namespace"))) {
                    at = scan_scope(at + 1, Scope::file, "");
                    start = at + 1;
                } else if (trim(head).rfind("extern", 0) == 0 && trim(rest).empty()) {
                    at = scan_scope(at + 1, Scope::linkage, "");
                    start = at + 1;
                } else if (function) {
                    declaration(start, at, scope, class_name, true);
                    at = skip_braces(at);
                    start = at + 1;
                } else if (!initializer &&
                           (lead == "struct" || lead == "class" || lead == "union" ||
                            lead == "typedef") &&
                           !has_word(rest, "enum")) {
                    // The declaration goes on after the body (`struct S {...} s;`), so `start`
                    // stays.
                    at = scan_scope(at + 1, Scope::klass, class_name_of(rest));
                } else {
                    at = skip_braces(at); // an initializer, an enum body, a stray block
                }
            }
        }
        return at;
    }

    // Looks at one declaration (code[start, end)) and marks it __device__ if it needs to be.
    void declaration(size_t start, size_t end, Scope scope, const std::string& class_name,
                     bool has_body)
    {
        std::string_view head = std::string_view(m_code).substr(start, end - start);
        if (trim(head).empty())
            return;
        for (const char* space :
             {"__device__", "__global__", "__host__", "__constant__", "__shared__", "__managed__"})
            if (has_word(head, space))
                return;
        size_t at = specifier_position(head);
        std::string first = word_at(head, at);
        for (const char* skip :
             {"typedef", "using", "static_assert", "friend", "namespace", "template", "extern"})
            if (first == skip)
                return;
        std::string_view rest = head.substr(at);
        size_t paren = find_top_level(rest, '(');
        size_t equals = find_top_level(rest, '=');
        bool function = paren != std::string_view::npos &&
                        (equals == std::string_view::npos || paren < equals) &&
                        !is_attribute(name_before(rest, paren));
        if (function) {
            size_t inside = skip_space(rest, paren + 1);
            if (inside < rest.size() && (rest[inside] == '*' || rest[inside] == '&') && !has_body)
                function = false; // a function pointer: a variable
        }
        if (function && equals != std::string_view::npos) {
            std::string value = word_at(rest, skip_space(rest, equals + 1));
            if (value == "default" || value == "delete")
                return; // defaulted and deleted functions already serve host and device
        }
        // `struct S;` and `struct S {...};` declare types; `struct S make();` is a function.
        if (!function &&
            (first == "struct" || first == "class" || first == "union" || first == "enum"))
            return;
        std::string name;
        if (function) {
            name = name_before(rest, paren);
        } else {
            if (scope == Scope::klass)
                return; // a data member: it lives wherever its object does
            bool array = rest.find('[') != std::string_view::npos;
            if ((has_word(rest, "const") || has_word(rest, "constexpr")) && !array)
                return; // nvcc lets device code read constant scalars
            size_t cut = std::min(
                {equals, find_top_level(rest, '['), find_top_level(rest, '{'), rest.size()});
            name = name_before(rest, cut);
        }
        m_marks.push_back({start + at, class_name.empty() ? name : class_name + "::" + name});
    }

    std::string_view m_source;
    std::string m_code;
    std::vector<std::pair<size_t, std::string>>
        m_marks; // where `__device__ ` goes, and what it marks
};

} // namespace

DeviceAnnotation annotate_default_device(std::string_view source)
{
    return Annotator(source).run();
}

std::string nvcc_prelude()
{
    return "#include <cstdint>\n"
           "#include <cfloat>\n"
           "#include <cmath>\n"
           "#include <cuda_fp16.h>\n"
           "#include <cuda_bf16.h>\n";
}

} // namespace kforge
