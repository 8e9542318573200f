// ResolveWriter: the writer of generate_resolve_code()'s host C++ (resolve.cpp says what that code
// does). One class in four files, by what each part resolves: resolve.cpp the whole (its structs,
// resolve_plan()'s outline, the public functions), resolve_shapes.cpp the sizes (symbol bounds,
// constraints, tensor extents, scalar arguments), resolve_launches.cpp the scratch buffers and each
// kernel launch, resolve_steps.cpp each library step. Internal to the export layer.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "core/plan_check.hpp"
#include "export/host_code.hpp"

namespace kforge {

// kforge gives every buffer a 256-byte aligned address; the generated code carves scratch the same
// way.
inline constexpr int64_t k_scratch_alignment = 256;

class ResolveWriter
{
public:
    explicit ResolveWriter(const LauncherSource& source)
        : m_task(source.task), m_plan(source.plan), m_sig(source.signature)
    {
        for (const auto& [name, values] : m_plan.params)
            m_params.insert(name);
    }

    std::string write();

private:
    std::string cpp(const Expr& expr) const { return expr_to_cpp(expr, m_params); }

    void line(const std::string& text) { m_out += "    " + text + "\n"; }

    size_t max_args() const;

    std::string site_name(size_t index) const;

    void write_structs();

    std::string resolve_parameters() const;

    void write_resolve_body();

    // `if (e->failed) return refuse(e, "<where>[ at <sizes>]");`
    void fail_if_failed(const std::string& where, bool with_context);

    void write_symbol_checks();

    // `at`: "M=5,N=7 with BLOCK=128", the context kforge's messages carry.
    void write_context();

    void write_constraints();

    void write_tensor_extents();

    void write_scalar_values();

    void write_scratch();

    // `label at <sizes>: <what>` for a launch's messages.
    void refuse_at(const std::string& label, const std::string& format_tail,
                   const std::string& values);

    void write_launch(size_t index);

    // ---- library steps: resolve_library_step() (core/library_step.cpp), step by step ----

    // `target = expr;`, refusing as kforge does when the evaluation fails.
    void step_value(const std::string& label, const std::string& target, const Expr& expr,
                    const std::string& field);

    // `target = a op b` with the extent's overflow refused as kforge refuses it.
    void step_extent(const std::string& label, const std::string& target, const std::string& value);

    // One operand: where it is in the buffer table, and that the step stays inside it.
    void step_operand(const std::string& label, const PlanLibraryStep& step, size_t slot,
                      const std::string& role, const std::string& used);

    void write_step(size_t index);

    void write_matmul(const std::string& label, const PlanLibraryStep& step);

    void write_conv(const std::string& label, const PlanLibraryStep& step);

    void fail_site(const std::string& label, const std::string& what);

    void write_dim(const std::string& label, const char* kind, int d, const Expr& expr,
                   int64_t max);

    // One argument of one iteration, as resolve_plan() binds it.
    void write_arg(const std::string& label, const PlanLaunch& launch, size_t a);

    void write_public_functions(const std::string& detail);

    const Task& m_task;
    const Plan& m_plan;
    const LauncherSignature& m_sig;
    std::set<std::string> m_params;
    std::string m_out;
};

} // namespace kforge
