// Fuzz target: the expression language (util/expr), as sizes, plans, tolerances and rooflines use
// it. Any text parses or throws ExprError; a parsed expression evaluates in both modes or throws
// ExprError. Anything else (a crash, a sanitizer report, a hang) is a finding.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "util/expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    ExprScope scope;
    scope.ints = {{"M", 7}, {"N", 1 << 20}, {"K", -3}, {"BLOCK", 256}, {"iter", 0}};
    scope.reals = {{"eps", 1e-5}, {"max_abs_ref", 2.5}};
    try {
        Expr expr = Expr::parse(fuzz::as_text(data, size));
        (void)expr.names();
        (void)expr.needs_real();
        try {
            (void)expr.eval_int(scope);
        } catch (const ExprError&) {
        }
        try {
            (void)expr.eval_real(scope);
        } catch (const ExprError&) {
        }
    } catch (const ExprError&) {
    }
    return 0;
}
