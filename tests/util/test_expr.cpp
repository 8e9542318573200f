// The expression language: values, errors that quote the text, exact integer arithmetic.
#include "kf_catch.hpp"

#include "util/expr.hpp"

using kforge::Expr;
using kforge::ExprError;
using kforge::ExprScope;

namespace {
ExprScope scope(std::initializer_list<std::pair<const std::string, int64_t>> ints)
{
    ExprScope s;
    for (const auto& [name, value] : ints)
        s.ints[name] = value;
    return s;
}
int64_t eval(const std::string& text, const ExprScope& s = {}) { return Expr::parse(text).eval_int(s); }
std::string error_of(const std::string& text, const ExprScope& s = {})
{
    try {
        Expr::parse(text).eval_int(s);
    } catch (const ExprError& e) {
        return e.what();
    }
    return "";
}
} // namespace

TEST_CASE("integer expressions follow C precedence and semantics", "[util][expr]")
{
    CHECK(eval("1 + 2 * 3") == 7);
    CHECK(eval("(1 + 2) * 3") == 9);
    CHECK(eval("7 / 2") == 3);
    CHECK(eval("-7 / 2") == -3);
    CHECK(eval("7 % 3") == 1);
    CHECK(eval("-2 * -3") == 6);
    CHECK(eval("ceil_div(10, 4)") == 3);
    CHECK(eval("cdiv(8, 4)") == 2);
    CHECK(eval("ceil_div(-10, 4)") == -2);
    CHECK(eval("min(5, 3, 9)") == 3);
    CHECK(eval("max(5, 3, 9)") == 9);
    CHECK(eval("M * N + 1", scope({{"M", 3}, {"N", 4}})) == 13);
    CHECK(eval("N % 8 == 0 && M >= 1", scope({{"M", 3}, {"N", 16}})) == 1);
    CHECK(eval("N % 8 == 0 || M > 5", scope({{"M", 3}, {"N", 12}})) == 0);
    CHECK(eval("!(1 < 2)") == 0);
    CHECK(eval("3 != 4") == 1);
    CHECK(eval("9223372036854775807") == INT64_MAX);
}

TEST_CASE("names lists every symbol an expression uses, not function names", "[util][expr]")
{
    auto names = Expr::parse("ceil_div(M, BLOCK) * min(N, 4)").names();
    CHECK(names == std::set<std::string>{"BLOCK", "M", "N"});
}

TEST_CASE("real expressions allow decimals and sqrt; integer ones refuse them", "[util][expr]")
{
    ExprScope s = scope({{"K", 4096}});
    CHECK(Expr::parse("3e-5 * sqrt(K)").eval_real(s) == Approx(3e-5 * 64));
    CHECK(Expr::parse("log2(K)").eval_real(s) == Approx(12));
    CHECK(Expr::parse("abs(0 - 2.5)").eval_real(s) == Approx(2.5));
    CHECK(Expr::parse("1e-8").needs_real());
    CHECK_FALSE(Expr::parse("M * 4").needs_real());
    CHECK_THAT(error_of("sqrt(K)", s), Catch::Contains("only allowed in real-valued"));
    CHECK_THAT(error_of("2.5 * K", s), Catch::Contains("a decimal number"));
}

TEST_CASE("overflow, division by zero and unknown names are errors quoting the text", "[util][expr]")
{
    CHECK_THAT(error_of("9223372036854775807 + 1"), Catch::Contains("integer overflow") && Catch::Contains("'9223372036854775807 + 1'"));
    CHECK_THAT(error_of("M * M", scope({{"M", 4000000000}})), Catch::Contains("overflow"));
    CHECK_THAT(error_of("4 / (M - 3)", scope({{"M", 3}})), Catch::Contains("division by zero") && Catch::Contains("'4 / (M - 3)'"));
    CHECK_THAT(error_of("ceil_div(4, 0)"), Catch::Contains("division by zero"));
    CHECK_THAT(error_of("5 % 0"), Catch::Contains("division by zero"));
    CHECK_THAT(error_of("K + 1", scope({{"M", 1}, {"N", 2}})), Catch::Contains("unknown name 'K'") && Catch::Contains("known: M, N"));
}

TEST_CASE("malformed expressions are rejected at parse time with a column", "[util][expr]")
{
    auto parse_error = [](const std::string& text) {
        try {
            Expr::parse(text);
        } catch (const ExprError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK_THAT(parse_error("ceil_div(M,"), Catch::Contains("in 'ceil_div(M,'") && Catch::Contains("column"));
    CHECK_THAT(parse_error("(1 + 2"), Catch::Contains("expected ')'"));
    CHECK_THAT(parse_error("1 +"), Catch::Contains("expected a number"));
    CHECK_THAT(parse_error("floor(3)"), Catch::Contains("unknown function 'floor'"));
    CHECK_THAT(parse_error("min(1)"), Catch::Contains("at least 2 arguments"));
    CHECK_THAT(parse_error("ceil_div(1, 2, 3)"), Catch::Contains("takes 2 arguments"));
    CHECK_THAT(parse_error("2M"), Catch::Contains("cannot start with a digit"));
    CHECK_THAT(parse_error("1 $ 2"), Catch::Contains("unexpected '$'"));
    CHECK_THAT(parse_error(""), Catch::Contains("empty expression"));
    CHECK_THAT(parse_error("99999999999999999999"), Catch::Contains("does not fit in 64 bits"));
}

TEST_CASE("an expression nested past the depth limit is an error, not a crash", "[util][expr][hostile]")
{
    // 2000 parentheses fit the length limit; 100,000 crashed the controller's parser before.
    std::string deep = std::string(2000, '(') + "1" + std::string(2000, ')');
    CHECK_THAT(error_of(deep), Catch::Contains("nested more than 200 levels deep"));
    CHECK_THAT(error_of(std::string(4000, '!') + "M"), Catch::Contains("nested more than 200 levels deep"));
    CHECK_THAT(error_of(std::string(4000, '-') + "1"), Catch::Contains("nested more than 200 levels deep"));
    std::string calls;
    for (int i = 0; i < 300; ++i)
        calls += "min(1,";
    calls += "1" + std::string(300, ')');
    CHECK_THAT(error_of(calls), Catch::Contains("nested more than 200 levels deep"));
    // Just inside the limit still works.
    CHECK(eval(std::string(150, '(') + "7" + std::string(150, ')')) == 7);
    CHECK(eval(std::string(150, '-') + "7") == 7);
}

TEST_CASE("an expression longer than the limit is refused and quoted only in part", "[util][expr][hostile]")
{
    std::string flat = "1";
    for (int i = 0; i < 100000; ++i)
        flat += "+1";
    std::string message = error_of(flat);
    CHECK_THAT(message, Catch::Contains("at most 4096 are allowed") && Catch::Contains("(200001 characters)"));
    CHECK(message.size() < 400);
}
