// A recursive-descent parser that emits postfix nodes, and two stack evaluators (exact int64 and
// double). Precedence, loosest first: ||, &&, comparisons, + -, * / %, unary.
#include "util/expr.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "util/limits.hpp"

namespace kforge {
namespace {

// The text of an expression for messages: whole when short, else its start (a hostile expression
// can be thousands of characters, and every error quotes it).
std::string quoted_excerpt(std::string_view text)
{
    constexpr size_t k_shown = 80;
    if (text.size() <= k_shown)
        return std::string(text);
    return fmt::format("{}... ({} characters)", text.substr(0, k_shown), text.size());
}

class Parser
{
public:
    Parser(std::string_view text, std::vector<Expr::Node>& out) : m_text(text), m_out(out) {}

    void parse_all()
    {
        if (m_text.size() > k_max_expr_chars)
            throw ExprError(fmt::format("expression of {} characters in '{}'; at most {} are allowed",
                                        m_text.size(), quoted_excerpt(m_text), k_max_expr_chars));
        skip_space();
        if (m_pos == m_text.size())
            error("empty expression");
        parse_or();
        skip_space();
        if (m_pos != m_text.size())
            error(fmt::format("unexpected '{}'", m_text.substr(m_pos, 1)));
    }

private:
    [[noreturn]] void error(const std::string& what) const
    {
        throw ExprError(fmt::format("{} in '{}' at column {}", what, quoted_excerpt(m_text), m_pos + 1));
    }

    // One level of nesting (a parenthesis, a unary operator, a call) for as long as it lives. The
    // parser recurses once per level, so the depth bounds its stack.
    class Nesting
    {
    public:
        explicit Nesting(Parser& parser) : m_parser(parser)
        {
            if (++m_parser.m_depth > k_max_expr_depth)
                m_parser.error(fmt::format("nested more than {} levels deep (parentheses, unary operators "
                                           "and calls count)",
                                           k_max_expr_depth));
        }
        ~Nesting() { --m_parser.m_depth; }
        Nesting(const Nesting&) = delete;
        Nesting& operator=(const Nesting&) = delete;

    private:
        Parser& m_parser;
    };

    void skip_space()
    {
        while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
            ++m_pos;
    }

    bool accept(std::string_view token)
    {
        skip_space();
        if (m_text.substr(m_pos, token.size()) == token) {
            m_pos += token.size();
            return true;
        }
        return false;
    }

    void emit(Expr::Op op, uint32_t arity = 0)
    {
        Expr::Node node;
        node.op = op;
        node.arity = arity;
        m_out.push_back(std::move(node));
    }

    void parse_or()
    {
        parse_and();
        while (accept("||")) {
            parse_and();
            emit(Expr::Op::logical_or);
        }
    }

    void parse_and()
    {
        parse_compare();
        while (accept("&&")) {
            parse_compare();
            emit(Expr::Op::logical_and);
        }
    }

    void parse_compare()
    {
        parse_additive();
        static constexpr std::pair<std::string_view, Expr::Op> k_ops[] = {
            {"==", Expr::Op::eq}, {"!=", Expr::Op::ne}, {"<=", Expr::Op::le},
            {">=", Expr::Op::ge}, {"<", Expr::Op::lt},  {">", Expr::Op::gt},
        };
        for (const auto& [token, op] : k_ops) {
            if (accept(token)) {
                parse_additive();
                emit(op);
                return;
            }
        }
    }

    void parse_additive()
    {
        parse_multiplicative();
        for (;;) {
            if (accept("+")) {
                parse_multiplicative();
                emit(Expr::Op::add);
            } else if (accept("-")) {
                parse_multiplicative();
                emit(Expr::Op::sub);
            } else {
                return;
            }
        }
    }

    void parse_multiplicative()
    {
        parse_unary();
        for (;;) {
            if (accept("*")) {
                parse_unary();
                emit(Expr::Op::mul);
            } else if (accept("/")) {
                parse_unary();
                emit(Expr::Op::div);
            } else if (accept("%")) {
                parse_unary();
                emit(Expr::Op::mod);
            } else {
                return;
            }
        }
    }

    void parse_unary()
    {
        if (accept("-")) {
            Nesting level(*this);
            parse_unary();
            emit(Expr::Op::neg);
        } else if (accept("+")) {
            Nesting level(*this);
            parse_unary();
        } else if (m_text.substr(m_pos, 2) != "!=" && accept("!")) {
            Nesting level(*this);
            parse_unary();
            emit(Expr::Op::logical_not);
        } else {
            parse_primary();
        }
    }

    void parse_primary()
    {
        skip_space();
        if (m_pos == m_text.size())
            error("expected a number, a name or '('");
        char c = m_text[m_pos];
        if (c == '(') {
            Nesting level(*this);
            ++m_pos;
            parse_or();
            if (!accept(")"))
                error("expected ')'");
            return;
        }
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
            parse_number();
            return;
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t start = m_pos;
            while (m_pos < m_text.size() &&
                   (std::isalnum(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
                ++m_pos;
            std::string name(m_text.substr(start, m_pos - start));
            if (accept("(")) {
                parse_call(name, start);
            } else {
                Expr::Node node;
        node.op = Expr::Op::name;
                node.name = std::move(name);
                m_out.push_back(std::move(node));
            }
            return;
        }
        error(fmt::format("unexpected '{}'", c));
    }

    void parse_call(const std::string& name, size_t name_pos)
    {
        Nesting level(*this);
        uint32_t count = 0;
        if (!accept(")")) {
            do {
                parse_or();
                ++count;
            } while (accept(","));
            if (!accept(")"))
                error("expected ',' or ')'");
        }
        auto require = [&](uint32_t want) {
            if (count != want) {
                m_pos = name_pos;
                error(fmt::format("{}() takes {} argument{}, got {}", name, want,
                                  want == 1 ? "" : "s", count));
            }
        };
        if (name == "ceil_div" || name == "cdiv") {
            require(2);
            emit(Expr::Op::ceil_div);
        } else if (name == "min" || name == "max") {
            if (count < 2) {
                m_pos = name_pos;
                error(fmt::format("{}() takes at least 2 arguments, got {}", name, count));
            }
            emit(name == "min" ? Expr::Op::min : Expr::Op::max, count);
        } else if (name == "sqrt") {
            require(1);
            emit(Expr::Op::sqrt);
        } else if (name == "abs") {
            require(1);
            emit(Expr::Op::abs);
        } else if (name == "log2") {
            require(1);
            emit(Expr::Op::log2);
        } else {
            m_pos = name_pos;
            error(fmt::format("unknown function '{}' (known: ceil_div, cdiv, min, max, sqrt, abs, "
                              "log2)",
                              name));
        }
    }

    void parse_number()
    {
        size_t start = m_pos;
        bool is_real = false;
        while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos])))
            ++m_pos;
        if (m_pos < m_text.size() && m_text[m_pos] == '.') {
            is_real = true;
            ++m_pos;
            while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos])))
                ++m_pos;
        }
        if (m_pos < m_text.size() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
            is_real = true;
            ++m_pos;
            if (m_pos < m_text.size() && (m_text[m_pos] == '+' || m_text[m_pos] == '-'))
                ++m_pos;
            size_t digits = m_pos;
            while (m_pos < m_text.size() && std::isdigit(static_cast<unsigned char>(m_text[m_pos])))
                ++m_pos;
            if (digits == m_pos)
                error("malformed exponent");
        }
        if (m_pos < m_text.size() &&
            (std::isalpha(static_cast<unsigned char>(m_text[m_pos])) || m_text[m_pos] == '_'))
            error("a name cannot start with a digit");
        std::string_view digits = m_text.substr(start, m_pos - start);
        Expr::Node node;
        node.op = is_real ? Expr::Op::real_number : Expr::Op::number;
        if (is_real) {
            // std::from_chars for double is available in libstdc++ 11+.
            auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), node.real);
            if (ec != std::errc())
                error(fmt::format("bad number '{}'", digits));
        } else {
            auto [ptr, ec] =
                std::from_chars(digits.data(), digits.data() + digits.size(), node.integer);
            if (ec == std::errc::result_out_of_range)
                error(fmt::format("integer '{}' does not fit in 64 bits", digits));
            if (ec != std::errc())
                error(fmt::format("bad number '{}'", digits));
            node.real = static_cast<double>(node.integer);
        }
        m_out.push_back(std::move(node));
    }

    std::string_view m_text;
    std::vector<Expr::Node>& m_out;
    size_t m_pos = 0;
    size_t m_depth = 0;
};

std::string_view op_symbol(Expr::Op op)
{
    switch (op) {
    case Expr::Op::add: return "+";
    case Expr::Op::sub: return "-";
    case Expr::Op::mul: return "*";
    case Expr::Op::neg: return "unary -";
    case Expr::Op::ceil_div: return "ceil_div";
    default: return "operator";
    }
}

} // namespace

Expr Expr::parse(std::string_view text)
{
    Expr expr;
    expr.m_text = std::string(text);
    Parser(expr.m_text, expr.m_nodes).parse_all();
    return expr;
}

Expr Expr::constant(int64_t value)
{
    Expr expr;
    expr.m_text = std::to_string(value);
    Node node; node.op = Op::number;
    node.integer = value;
    node.real = static_cast<double>(value);
    expr.m_nodes.push_back(std::move(node));
    return expr;
}

std::set<std::string> Expr::names() const
{
    std::set<std::string> out;
    for (const auto& node : m_nodes)
        if (node.op == Op::name)
            out.insert(node.name);
    return out;
}

bool Expr::needs_real() const
{
    for (const auto& node : m_nodes)
        if (node.op == Op::real_number || node.op == Op::sqrt || node.op == Op::abs ||
            node.op == Op::log2)
            return true;
    return false;
}

int64_t Expr::eval_int(const ExprScope& scope) const
{
    if (m_nodes.empty())
        throw ExprError("empty expression");
    std::vector<int64_t> stack;
    stack.reserve(m_nodes.size());
    auto fail = [&](const std::string& what) -> void {
        throw ExprError(fmt::format("{} in '{}'", what, quoted_excerpt(m_text)));
    };
    auto pop = [&] {
        int64_t v = stack.back();
        stack.pop_back();
        return v;
    };
    for (const auto& node : m_nodes) {
        switch (node.op) {
        case Op::number: stack.push_back(node.integer); break;
        case Op::real_number:
            fail(fmt::format("a decimal number ({}) where an integer is needed", node.real));
            break;
        case Op::sqrt:
        case Op::abs:
        case Op::log2: fail("sqrt/abs/log2 are only allowed in real-valued expressions"); break;
        case Op::name: {
            auto it = scope.ints.find(node.name);
            if (it == scope.ints.end()) {
                if (scope.reals.count(node.name))
                    fail(fmt::format("'{}' is a real number where an integer is needed", node.name));
                std::string known;
                for (const auto& [name, value] : scope.ints)
                    known += (known.empty() ? "" : ", ") + name;
                fail(fmt::format("unknown name '{}' (known: {})", node.name,
                                 known.empty() ? "none" : known));
            }
            stack.push_back(it->second);
            break;
        }
        case Op::neg: {
            int64_t a = pop();
            int64_t r;
            if (__builtin_sub_overflow(int64_t{0}, a, &r))
                fail("integer overflow in unary -");
            stack.push_back(r);
            break;
        }
        case Op::logical_not: stack.push_back(pop() == 0 ? 1 : 0); break;
        case Op::min:
        case Op::max: {
            int64_t best = pop();
            for (uint32_t i = 1; i < node.arity; ++i) {
                int64_t v = pop();
                best = node.op == Op::min ? std::min(best, v) : std::max(best, v);
            }
            stack.push_back(best);
            break;
        }
        default: {
            int64_t b = pop();
            int64_t a = pop();
            int64_t r = 0;
            bool overflow = false;
            switch (node.op) {
            case Op::add: overflow = __builtin_add_overflow(a, b, &r); break;
            case Op::sub: overflow = __builtin_sub_overflow(a, b, &r); break;
            case Op::mul: overflow = __builtin_mul_overflow(a, b, &r); break;
            case Op::div:
            case Op::mod:
            case Op::ceil_div:
                if (b == 0)
                    fail(fmt::format("division by zero ({} {} 0)", a,
                                     node.op == Op::ceil_div ? "ceil_div" :
                                     node.op == Op::div      ? "/" : "%"));
                if (a == INT64_MIN && b == -1)
                    fail("integer overflow in division");
                if (node.op == Op::div) {
                    r = a / b;
                } else if (node.op == Op::mod) {
                    r = a % b;
                } else {
                    // Rounds toward +infinity for every sign combination.
                    r = a / b;
                    if ((a % b != 0) && ((a > 0) == (b > 0)))
                        ++r;
                }
                break;
            case Op::eq: r = a == b; break;
            case Op::ne: r = a != b; break;
            case Op::lt: r = a < b; break;
            case Op::le: r = a <= b; break;
            case Op::gt: r = a > b; break;
            case Op::ge: r = a >= b; break;
            case Op::logical_and: r = (a != 0) && (b != 0); break;
            case Op::logical_or: r = (a != 0) || (b != 0); break;
            default: fail("internal: bad node"); break;
            }
            if (overflow)
                fail(fmt::format("integer overflow in {} {} {}", a, op_symbol(node.op), b));
            stack.push_back(r);
            break;
        }
        }
    }
    return stack.back();
}

double Expr::eval_real(const ExprScope& scope) const
{
    if (m_nodes.empty())
        throw ExprError("empty expression");
    std::vector<double> stack;
    stack.reserve(m_nodes.size());
    auto fail = [&](const std::string& what) -> void {
        throw ExprError(fmt::format("{} in '{}'", what, quoted_excerpt(m_text)));
    };
    auto pop = [&] {
        double v = stack.back();
        stack.pop_back();
        return v;
    };
    for (const auto& node : m_nodes) {
        switch (node.op) {
        case Op::number:
        case Op::real_number: stack.push_back(node.real); break;
        case Op::name: {
            if (auto it = scope.reals.find(node.name); it != scope.reals.end()) {
                stack.push_back(it->second);
            } else if (auto jt = scope.ints.find(node.name); jt != scope.ints.end()) {
                stack.push_back(static_cast<double>(jt->second));
            } else {
                std::string known;
                for (const auto& [name, value] : scope.ints)
                    known += (known.empty() ? "" : ", ") + name;
                for (const auto& [name, value] : scope.reals)
                    known += (known.empty() ? "" : ", ") + name;
                fail(fmt::format("unknown name '{}' (known: {})", node.name,
                                 known.empty() ? "none" : known));
            }
            break;
        }
        case Op::neg: stack.push_back(-pop()); break;
        case Op::logical_not: stack.push_back(pop() == 0 ? 1 : 0); break;
        case Op::sqrt: {
            double a = pop();
            if (a < 0)
                fail(fmt::format("sqrt of a negative number ({})", a));
            stack.push_back(std::sqrt(a));
            break;
        }
        case Op::abs: stack.push_back(std::fabs(pop())); break;
        case Op::log2: {
            double a = pop();
            if (a <= 0)
                fail(fmt::format("log2 of a non-positive number ({})", a));
            stack.push_back(std::log2(a));
            break;
        }
        case Op::min:
        case Op::max: {
            double best = pop();
            for (uint32_t i = 1; i < node.arity; ++i) {
                double v = pop();
                best = node.op == Op::min ? std::min(best, v) : std::max(best, v);
            }
            stack.push_back(best);
            break;
        }
        default: {
            double b = pop();
            double a = pop();
            double r = 0;
            switch (node.op) {
            case Op::add: r = a + b; break;
            case Op::sub: r = a - b; break;
            case Op::mul: r = a * b; break;
            case Op::div:
            case Op::ceil_div:
            case Op::mod:
                if (b == 0)
                    fail(fmt::format("division by zero ({} / 0)", a));
                r = node.op == Op::div ? a / b
                    : node.op == Op::mod ? std::fmod(a, b)
                                         : std::ceil(a / b);
                break;
            case Op::eq: r = a == b; break;
            case Op::ne: r = a != b; break;
            case Op::lt: r = a < b; break;
            case Op::le: r = a <= b; break;
            case Op::gt: r = a > b; break;
            case Op::ge: r = a >= b; break;
            case Op::logical_and: r = (a != 0) && (b != 0); break;
            case Op::logical_or: r = (a != 0) || (b != 0); break;
            default: fail("internal: bad node"); break;
            }
            if (!std::isfinite(r))
                fail(fmt::format("result is not finite ({} {} {})", a, op_symbol(node.op), b));
            stack.push_back(r);
            break;
        }
        }
    }
    return stack.back();
}

} // namespace kforge
