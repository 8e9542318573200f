// choose_engine(): cuDNN's heuristics, kforge's precision filter, and lazily built execution plans.
//
// The filter reads each engine's numerical notes (CUDNN_ATTR_ENGINE_NUMERICAL_NOTE), as PyTorch
// does: the graph API has no math-mode switch, so a "no TF32" promise for fp32 can only be kept
// by refusing engines that note tensor cores, whose fp32 path rounds inputs to TF32. Engines that
// down-convert inputs or reduce in reduced precision are refused for every dtype, since a step's
// sums are fp32. What is left out, and why, goes into the text of the choice or of the refusal.
#include "conv_engines.hpp"

#include <algorithm>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "vendor_routine.hpp"

namespace kforge::vendor {
namespace {

const char* numerical_note_name(cudnnBackendNumericalNote_t note)
{
    switch (note) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
        return "TENSOR_CORE";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
        return "DOWN_CONVERT_INPUTS";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
        return "REDUCED_PRECISION_REDUCTION";
    case CUDNN_NUMERICAL_NOTE_FFT:
        return "FFT";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC:
        return "NONDETERMINISTIC";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD:
        return "WINOGRAD";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4:
        return "WINOGRAD_TILE_4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6:
        return "WINOGRAD_TILE_6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13:
        return "WINOGRAD_TILE_13x13";
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP:
        return "STRICT_NAN_PROP";
    default:
        return "UNKNOWN_NOTE";
    }
}

const char* behavior_note_name(cudnnBackendBehaviorNote_t note)
{
    switch (note) {
    case CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION:
        return "RUNTIME_COMPILATION";
    case CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API:
        return "SUPPORTS_CUDA_GRAPH_NATIVE_API";
    case CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY:
        return "CUBLASLT_DEPENDENCY";
    default:
        return "OTHER_BEHAVIOR";
    }
}

// What the record needs of one proposed configuration's engine.
struct EngineFacts {
    int64_t global_index = -1;
    std::vector<cudnnBackendNumericalNote_t> notes;
    std::vector<cudnnBackendBehaviorNote_t> behaviors;
    std::string knobs;  // "knobs 2=3 14=4" (cudnnBackendKnobType_t=value), or empty

    // "engine 12 (knobs 2=3; FFT; RUNTIME_COMPILATION)"; also what tells duplicates apart.
    std::string text() const
    {
        std::vector<std::string> parts;
        if (!knobs.empty())
            parts.push_back(knobs);
        for (auto note : notes)
            parts.push_back(numerical_note_name(note));
        for (auto note : behaviors)
            parts.push_back(behavior_note_name(note));
        std::string inside;
        for (const auto& part : parts)
            inside += (inside.empty() ? "" : "; ") + part;
        return fmt::format("engine {}{}", global_index, inside.empty() ? "" : " (" + inside + ")");
    }
};

EngineFacts read_engine(const CudnnDescriptor& config)
{
    EngineFacts facts;
    CudnnDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t engine_raw = engine.get();
    int64_t count = 0;
    KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &engine_raw));
    KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                                  &count, &facts.global_index));

    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT] = {};
    KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                  CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                                                  notes));
    facts.notes.assign(notes, notes + std::clamp<int64_t>(count, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT));

    cudnnBackendBehaviorNote_t behaviors[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT] = {};
    KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                                  CUDNN_TYPE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count,
                                                  behaviors));
    facts.behaviors.assign(behaviors, behaviors + std::clamp<int64_t>(count, 0, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT));

    // The knob choices come back into descriptors made for them, one per possible knob type.
    std::vector<CudnnDescriptor> choices;
    std::vector<cudnnBackendDescriptor_t> choices_raw;
    choices.reserve(CUDNN_KNOB_TYPE_COUNTS);
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
        choices.emplace_back(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
        choices_raw.push_back(choices.back().get());
    }
    int64_t knob_count = 0;
    KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, CUDNN_KNOB_TYPE_COUNTS, &knob_count,
                                                  choices_raw.data()));
    for (int64_t i = 0; i < std::min<int64_t>(knob_count, CUDNN_KNOB_TYPE_COUNTS); ++i) {
        cudnnBackendKnobType_t type{};
        int64_t value = 0;
        auto& choice = choices[static_cast<size_t>(i)];
        KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                                      CUDNN_TYPE_KNOB_TYPE, 1, &count, &type));
        KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(choice.get(), CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64,
                                                      1, &count, &value));
        facts.knobs += fmt::format("{}{}={}", facts.knobs.empty() ? "knobs " : " ", static_cast<int>(type), value);
    }
    return facts;
}

// The notes a step of this dtype refuses.
std::vector<cudnnBackendNumericalNote_t> refused_notes(StepDtype dtype)
{
    std::vector<cudnnBackendNumericalNote_t> refused{CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS,
                                                     CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION};
    if (dtype == StepDtype::f32)
        refused.push_back(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    return refused;
}

// One configuration the heuristics proposed.
struct Proposal {
    CudnnDescriptor config;
    const char* mode;
    EngineFacts facts;
};

// The configurations one heuristics mode proposes, best first. A mode that cannot rank this
// graph (its finalize fails) proposes nothing, and `problem` says why.
std::vector<CudnnDescriptor> heuristic_configs(const CudnnDescriptor& graph, cudnnBackendHeurMode_t mode,
                                               std::string& problem)
{
    CudnnDescriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendDescriptor_t graph_raw = graph.get();
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph_raw));
    KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                                  &mode));
    if (cudnnStatus_t status = dnn().cudnnBackendFinalize(heuristics.get()); status != CUDNN_STATUS_SUCCESS) {
        problem = cudnn_error_text(status);
        return {};
    }
    int64_t count = 0;
    KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<CudnnDescriptor> configs;
    std::vector<cudnnBackendDescriptor_t> configs_raw;
    configs.reserve(static_cast<size_t>(std::max<int64_t>(count, 0)));
    for (int64_t i = 0; i < count; ++i) {
        configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        configs_raw.push_back(configs.back().get());
    }
    if (count <= 0)
        return configs;
    int64_t returned = 0;
    KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                  CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, configs_raw.data()));
    configs.erase(configs.begin() + std::clamp<int64_t>(returned, 0, count), configs.end());
    return configs;
}

// INSTANT's proposals, then FALLBACK's that INSTANT did not make.
std::vector<Proposal> proposals_for(const CudnnDescriptor& graph, std::string& problems)
{
    std::vector<Proposal> proposals;
    std::set<std::string> seen;
    const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {{CUDNN_HEUR_MODE_INSTANT, "INSTANT"},
                                                                    {CUDNN_HEUR_MODE_FALLBACK, "FALLBACK"}};
    for (const auto& [mode, name] : modes) {
        std::string problem;
        for (auto& config : heuristic_configs(graph, mode, problem)) {
            EngineFacts facts = read_engine(config);
            if (seen.insert(facts.text()).second)
                proposals.push_back(Proposal{std::move(config), name, std::move(facts)});
        }
        if (!problem.empty())
            problems += fmt::format("{}{} heuristics failed: {}", problems.empty() ? "" : "; ", name, problem);
    }
    return proposals;
}

// What became of the proposals before the chosen one (or of all of them).
struct Tally {
    int refused = 0, not_built = 0, over_workspace = 0;
    std::set<std::string> refused_for;
    std::string first_build_failure;

    std::string text() const
    {
        std::vector<std::string> parts;
        if (refused) {
            std::string notes;
            for (const auto& note : refused_for)
                notes += (notes.empty() ? "" : ", ") + note;
            parts.push_back(fmt::format("{} left out for their notes ({})", refused, notes));
        }
        if (not_built)
            parts.push_back(fmt::format("{} did not build (first: {})", not_built, first_build_failure));
        if (over_workspace)
            parts.push_back(fmt::format("{} need more workspace", over_workspace));
        std::string joined;
        for (const auto& part : parts)
            joined += (joined.empty() ? "" : ", ") + part;
        return joined.empty() ? "none left out" : joined;
    }
};

} // namespace

EngineChoice choose_engine(const CudnnDescriptor& graph, cudnnHandle_t handle, const ConvPlan& plan, uint64_t algo)
{
    std::string heuristic_problems;
    std::vector<Proposal> proposals = proposals_for(graph, heuristic_problems);
    std::vector<cudnnBackendNumericalNote_t> refused = refused_notes(plan.dtype);
    Tally tally;
    uint64_t allowed = 0;
    for (size_t rank = 0; rank < proposals.size(); ++rank) {
        Proposal& proposal = proposals[rank];
        bool refuse = false;
        for (auto note : proposal.facts.notes)
            if (std::find(refused.begin(), refused.end(), note) != refused.end()) {
                refuse = true;
                tally.refused_for.insert(numerical_note_name(note));
            }
        if (refuse) {
            ++tally.refused;
            continue;
        }
        CudnnDescriptor execution_plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        cudnnBackendDescriptor_t config_raw = proposal.config.get();
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(execution_plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                                      CUDNN_TYPE_HANDLE, 1, &handle));
        KF_CUDNN_CHECK(dnn().cudnnBackendSetAttribute(execution_plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config_raw));
        // An engine the heuristics propose may still refuse this graph when its plan is built.
        if (cudnnStatus_t status = dnn().cudnnBackendFinalize(execution_plan.get()); status != CUDNN_STATUS_SUCCESS) {
            if (tally.not_built++ == 0)
                tally.first_build_failure = fmt::format("{}: {}", proposal.facts.text(), cudnn_error_text(status));
            continue;
        }
        int64_t workspace = 0, count = 0;
        KF_CUDNN_CHECK(dnn().cudnnBackendGetAttribute(execution_plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                      CUDNN_TYPE_INT64, 1, &count, &workspace));
        if (workspace < 0 || static_cast<uint64_t>(workspace) > plan.workspace_bytes) {
            ++tally.over_workspace;
            continue;
        }
        if (allowed++ < algo)
            continue;
        std::string text = fmt::format("cuDNN {}, allowed configuration {} ({} heuristics, proposal {} of {}; before "
                                       "it: {}), workspace {} B of {} B",
                                       proposal.facts.text(), algo, proposal.mode, rank, proposals.size(), tally.text(),
                                       workspace, plan.workspace_bytes);
        return EngineChoice{std::move(proposal.config), std::move(execution_plan), workspace, std::move(text)};
    }
    fail(Status::no_algorithm,
         fmt::format(
             "algo {}: this conv has {} allowed cuDNN engine configurations ({}) within a workspace of {} bytes; "
             "the heuristics proposed {}: {}{}",
             algo, allowed, allowed == 0 ? "none" : fmt::format("0 .. {}", allowed - 1), plan.workspace_bytes,
             proposals.size(), tally.text(), heuristic_problems.empty() ? "" : "; " + heuristic_problems));
}

} // namespace kforge::vendor
