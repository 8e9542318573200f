// The C entry points of library steps (kforge_vendor.h, "Library steps").
//
// Each one runs under guarded(), so a VendorFailure becomes its status and message and nothing
// unwinds into the caller. describe needs no GPU; prepare attaches to the caller's context first,
// so a wrong context is refused before any library handle is made in it.
#include <fmt/format.h>

#include "step.hpp"
#include "conv_plan.hpp"
#include "matmul_plan.hpp"
#include "vendor_routine.hpp"

namespace kforge::vendor {

std::string describe_step(const KforgeStep& step)
{
    if (step.algo < 0)
        fail(Status::bad_bindings, fmt::format("algo = {}: it indexes the allowed candidates from 0", step.algo));
    switch (step.op) {
    case KFORGE_STEP_MATMUL:
        return plan_matmul(step.matmul, step.workspace_bytes).describe();
    case KFORGE_STEP_CONV:
        return plan_conv(step.conv, step.workspace_bytes).describe();
    default:
        fail(Status::bad_bindings,
             fmt::format("op = {} is neither KFORGE_STEP_MATMUL ({}) nor KFORGE_STEP_CONV ({})", step.op,
                         static_cast<int>(KFORGE_STEP_MATMUL), static_cast<int>(KFORGE_STEP_CONV)));
    }
}

namespace {

LibraryStep& step_of(void* state)
{
    if (!state)
        fail(Status::bad_bindings, "no prepared step (kforge_vendor_step_prepare failed or was not called)");
    return *static_cast<LibraryStep*>(state);
}

} // namespace
} // namespace kforge::vendor

using namespace kforge::vendor;

extern "C" {

int kforge_vendor_step_describe(const KforgeStep* step, char* text, size_t text_len)
{
    std::string description;
    int status = guarded(text, text_len, [&] {
        if (!step)
            fail(Status::bad_bindings, "no step to describe");
        description = describe_step(*step);
    });
    if (status == KFORGE_VENDOR_OK)
        copy_text(description, text, text_len);
    return status;
}

int kforge_vendor_step_prepare(const KforgeStep* step, void** state, char* error, size_t error_len)
{
    if (state)
        *state = nullptr;
    return guarded(error, error_len, [&] {
        if (!step || !state)
            fail(Status::bad_bindings, "kforge_vendor_step_prepare needs a step and somewhere to put the state");
        describe_step(*step); // every check that needs no GPU, before touching CUDA
        attach_to_primary_context();
        *state = (step->op == KFORGE_STEP_MATMUL ? prepare_matmul_step(*step) : prepare_conv_step(*step)).release();
    });
}

const char* kforge_vendor_step_chosen(void* state)
{
    return state ? static_cast<LibraryStep*>(state)->chosen().c_str() : "";
}

int kforge_vendor_step_run(void* state, const unsigned long long* operands, size_t count, void* cu_stream, char* error,
                           size_t error_len)
{
    return guarded(error, error_len, [&] {
        LibraryStep& step = step_of(state);
        if (!operands || count != step.operand_count())
            fail(Status::bad_bindings, fmt::format("the step takes {} operand addresses, not {}", step.operand_count(),
                                                   operands ? count : 0));
        step.run(operands, static_cast<cudaStream_t>(cu_stream));
    });
}

void kforge_vendor_step_release(void* state) { delete static_cast<LibraryStep*>(state); }

} // extern "C"
