// A tokenizer that sees a CUDA source the way NVRTC's preprocessor does, as far as the screen
// needs: where the comments, literals and directives are. It never parses C++.
//
// Translation phases 2 and 3 in miniature. First backslash-newline splices are removed (only a
// backslash immediately before the newline counts; NVRTC 13.0 ignores one followed by spaces, and
// trigraphs are off in C++17). Then one pass over the spliced text replaces each comment by a
// space, blanks literal contents in `code` (keeping them in `text`), recognises raw strings,
// encoding prefixes and digit separators (so `1'000` does not open a character literal), and
// notes every `#` or `%:` that begins a logical line. A block comment's newlines vanish with it,
// as they do for the real preprocessor, so `#include /* ...newline... */ "x"` is one directive.
#include "evaluator/compile/screen.hpp"

#include <cctype>

namespace kforge {

namespace {

bool is_ident_start(char c)
{
    auto u = static_cast<unsigned char>(c);
    return std::isalpha(u) || c == '_' || c == '$' || u >= 0x80;
}

bool is_ident_char(char c) { return is_ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

bool is_horizontal_space(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r'; }

struct Spliced {
    std::string text;
    std::vector<int> line;
    std::vector<size_t> offset;
};

Spliced splice_lines(std::string_view source)
{
    Spliced out;
    out.text.reserve(source.size());
    int line = 1;
    size_t n = source.size();
    for (size_t i = 0; i < n;) {
        if (source[i] == '\\') {
            size_t j = i + 1;
            if (j < n && source[j] == '\r')
                ++j;
            if (j < n && source[j] == '\n') {
                ++line;
                i = j + 1;
                continue;
            }
        }
        out.text += source[i];
        out.line.push_back(line);
        out.offset.push_back(i);
        if (source[i] == '\n')
            ++line;
        ++i;
    }
    return out;
}

class Lexer
{
public:
    explicit Lexer(Spliced spliced) : m_in(std::move(spliced)) {}

    LexedSource run()
    {
        const std::string& s = m_in.text;
        bool line_start = true;
        size_t i = 0;
        while (i < s.size()) {
            char c = s[i];
            if (c == '\n') {
                emit(i, c, c);
                line_start = true;
                ++i;
            } else if (is_horizontal_space(c)) {
                emit(i, c, c);
                ++i;
            } else if (c == '/' && peek(i + 1) == '/') {
                emit(i, ' ', ' ');
                i = s.find('\n', i);
                if (i == std::string::npos)
                    i = s.size();
            } else if (c == '/' && peek(i + 1) == '*') {
                emit(i, ' ', ' ');
                size_t end = s.find("*/", i + 2);
                i = end == std::string::npos ? s.size() : end + 2;
            } else if (line_start && (c == '#' || (c == '%' && peek(i + 1) == ':'))) {
                // Written as one '#' so find_directives need not know about digraphs.
                emit(i, '#', '#');
                i += c == '#' ? 1 : 2;
                line_start = false;
            } else if (is_ident_start(c)) {
                line_start = false;
                i = lex_identifier(i);
            } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                       (c == '.' && std::isdigit(static_cast<unsigned char>(peek(i + 1))))) {
                line_start = false;
                i = lex_number(i);
            } else if (c == '"' || c == '\'') {
                line_start = false;
                i = lex_quoted(i, c);
            } else {
                line_start = false;
                emit(i, c, c);
                ++i;
            }
        }
        return std::move(m_out);
    }

private:
    char peek(size_t i) const { return i < m_in.text.size() ? m_in.text[i] : '\0'; }

    void emit(size_t at, char text_char, char code_char)
    {
        m_out.text += text_char;
        m_out.code += code_char;
        m_out.line.push_back(m_in.line[at]);
        m_out.offset.push_back(m_in.offset[at]);
    }

    void emit_range(size_t from, size_t to, bool literal_contents)
    {
        for (size_t k = from; k < to; ++k) {
            char c = m_in.text[k];
            emit(k, c, literal_contents ? ' ' : c);
        }
    }

    size_t lex_identifier(size_t i)
    {
        size_t start = i;
        while (i < m_in.text.size() && is_ident_char(m_in.text[i]))
            ++i;
        std::string_view word(m_in.text.data() + start, i - start);
        char next = peek(i);
        bool raw_prefix = word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR";
        bool prefix = word == "u8" || word == "u" || word == "U" || word == "L";
        emit_range(start, i, false);
        if (raw_prefix && next == '"')
            return lex_raw_string(i);
        if (prefix && (next == '"' || next == '\''))
            return lex_quoted(i, next);
        return i;
    }

    // A pp-number: digits, letters, '.', digit separators and exponent signs.
    size_t lex_number(size_t i)
    {
        size_t start = i;
        const std::string& s = m_in.text;
        while (i < s.size()) {
            char c = s[i];
            if ((c == '+' || c == '-') && i > start &&
                (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P')) {
                ++i;
            } else if (c == '\'' && is_ident_char(peek(i + 1))) {
                i += 2;
            } else if (is_ident_char(c) || c == '.') {
                ++i;
            } else {
                break;
            }
        }
        emit_range(start, i, false);
        return i;
    }

    // An ordinary string or character literal; an unterminated one ends at the newline.
    size_t lex_quoted(size_t i, char quote)
    {
        const std::string& s = m_in.text;
        emit(i, quote, quote);
        size_t k = i + 1;
        while (k < s.size() && s[k] != quote && s[k] != '\n') {
            if (s[k] == '\\' && k + 1 < s.size() && s[k + 1] != '\n') {
                emit_range(k, k + 2, true);
                k += 2;
            } else {
                emit_range(k, k + 1, true);
                ++k;
            }
        }
        if (k < s.size() && s[k] == quote) {
            emit(k, quote, quote);
            ++k;
        }
        return k;
    }

    // R"delim( ... )delim". An invalid delimiter makes it an ordinary string, as it would be
    // an error for the compiler anyway.
    size_t lex_raw_string(size_t i)
    {
        const std::string& s = m_in.text;
        size_t paren = i + 1;
        while (paren < s.size() && paren - i - 1 <= 16 && s[paren] != '(' && s[paren] != ')' &&
               s[paren] != '\\' && s[paren] != '"' && !std::isspace(static_cast<unsigned char>(s[paren])))
            ++paren;
        if (paren >= s.size() || s[paren] != '(' || paren - i - 1 > 16)
            return lex_quoted(i, '"');
        std::string terminator = ")";
        terminator.append(s, i + 1, paren - i - 1);
        terminator += '"';
        size_t end = s.find(terminator, paren + 1);
        size_t contents_end = end == std::string::npos ? s.size() : end;
        emit_range(i, paren + 1, false);
        // Contents are blanked in `code`, newlines included, so that `code` has a newline exactly
        // where a logical line ends.
        emit_range(paren + 1, contents_end, true);
        if (end == std::string::npos)
            return s.size();
        emit_range(end, end + terminator.size(), false);
        return end + terminator.size();
    }

    Spliced m_in;
    LexedSource m_out;
};

// In `code` a '#' can only stand at the start of a logical line when it introduces a directive:
// comments are spaces there and literal contents are blanked.
std::vector<size_t> directive_starts_of(const LexedSource& lexed)
{
    std::vector<size_t> starts;
    bool line_start = true;
    for (size_t i = 0; i < lexed.code.size(); ++i) {
        char c = lexed.code[i];
        if (c == '\n') {
            line_start = true;
        } else if (is_horizontal_space(c)) {
            continue;
        } else {
            if (line_start && c == '#')
                starts.push_back(i);
            line_start = false;
        }
    }
    return starts;
}

} // namespace

LexedSource lex_source(std::string_view source)
{
    return Lexer(splice_lines(source)).run();
}

std::vector<Directive> find_directives(const LexedSource& lexed)
{
    std::vector<Directive> out;
    for (size_t at : directive_starts_of(lexed)) {
        Directive d;
        d.hash_at = at;
        d.line = lexed.line[at];
        size_t k = at + 1;
        while (k < lexed.code.size() && is_horizontal_space(lexed.code[k]))
            ++k;
        size_t name_begin = k;
        while (k < lexed.code.size() && is_ident_char(lexed.code[k]))
            ++k;
        d.name = lexed.code.substr(name_begin, k - name_begin);
        d.args_begin = k;
        size_t end = lexed.code.find('\n', k);
        d.args_end = end == std::string::npos ? lexed.code.size() : end;
        out.push_back(std::move(d));
    }
    return out;
}

} // namespace kforge
