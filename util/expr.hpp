// Arithmetic expressions for sizes, constraints, launch plans, tolerances and rooflines.
//
// One small language serves every place a task or a plan computes a number:
//   integers and (in real mode) decimal literals, names, parentheses,
//   + - * / %  unary - and !,  == != < <= > >=  && ||,
//   ceil_div(a, b) (alias cdiv), min(a, b, ...), max(a, b, ...),
//   and in real mode only: sqrt(x), abs(x), log2(x).
// An expression is parsed once into a flat node list and evaluated many times (a plan is resolved
// for every shape and parameter point). Integer evaluation is exact 64-bit arithmetic in which
// overflow, division by zero and unknown names are errors; real evaluation uses doubles. Every error
// quotes the offending text, so a message can point at the exact spot of a task spec or plan.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kforge {

// Thrown for a malformed expression or a failed evaluation. what() names the expression text.
class ExprError : public std::runtime_error
{
public:
    explicit ExprError(const std::string& message) : std::runtime_error(message) {}
};

// Values of names during evaluation. An integer name can be used in real mode too; a real name in
// integer mode is an error.
struct ExprScope {
    std::map<std::string, int64_t, std::less<>> ints;
    std::map<std::string, double, std::less<>> reals;
};

class Expr
{
public:
    Expr() = default;
    // Parses `text`; throws ExprError("... in 'text' at column N") when it is malformed, longer than
    // k_max_expr_chars or nested (parentheses, unary operators, calls) deeper than k_max_expr_depth
    // (util/limits.hpp). Messages quote at most the first 80 characters of the text.
    static Expr parse(std::string_view text);
    // An expression that is just a constant, for plans written with plain JSON numbers.
    static Expr constant(int64_t value);

    const std::string& text() const { return m_text; }
    bool empty() const { return m_nodes.empty(); }
    // Every name the expression mentions, function names excluded.
    std::set<std::string> names() const;
    // True when the expression uses real-only parts (a decimal literal or sqrt/abs/log2).
    bool needs_real() const;

    // Exact integer evaluation. Throws ExprError on unknown names, overflow, division by zero, or
    // real-only parts.
    int64_t eval_int(const ExprScope& scope) const;
    // Double evaluation; comparison and logical operators yield 0 or 1.
    double eval_real(const ExprScope& scope) const;

    enum class Op : uint8_t {
        number, real_number, name,
        neg, logical_not,
        add, sub, mul, div, mod,
        eq, ne, lt, le, gt, ge, logical_and, logical_or,
        ceil_div, min, max, sqrt, abs, log2,
    };
    // Nodes in postfix order; `arity` is the argument count of min/max.
    struct Node {
        Op op = Op::number;
        int64_t integer = 0;
        double real = 0;
        std::string name;
        uint32_t arity = 0;
    };
    // The parsed form, for code that translates an expression (the export's C++ generator).
    const std::vector<Node>& nodes() const { return m_nodes; }

private:
    std::string m_text;
    std::vector<Node> m_nodes;
};

} // namespace kforge
