// A candidate whose params were sampled (core/param_sweep.hpp) is shown to the model as such: the
// prompt about it carries the evaluation's note on a line of its own, not buried in its metrics.
#include "kf_catch.hpp"

#include "agents/prompt_builder.hpp"
#include "agents/prompt_fixtures.hpp"
#include "core/param_sweep.hpp"
#include "search/views.hpp"

using namespace kforge;
using namespace kforge::test;

TEST_CASE("the next prompt about a candidate whose params were sampled says how many points were swept",
          "[search][prompt]")
{
    Json params = Json::object();
    for (const char* name : {"A", "B", "C", "D", "E", "F", "G", "H"})
        params[name] = Json::array({1, 2, 3, 4, 5, 6, 7, 8});
    Json launch{{"kernel", "k"}, {"grid", {1}}, {"block", {1}}, {"args", Json::array()}};
    Plan plan = parse_plan(Json{{"params", params}, {"launches", Json::array({launch})}}, "plan");
    ParamSweep sweep = sweep_param_points(plan, 64);
    REQUIRE(sweep.sampled());

    Candidate candidate;
    candidate.id = 5;
    candidate.source = rowscale_task().seeds.at(0).source;
    candidate.evaluation.verdict = Verdict{VerdictKind::correct, ""};
    candidate.evaluation.fitness = 1.5;
    candidate.evaluation.metrics = Json{{"param_points", sweep.to_json()}, {"registers", 30}};
    CandidateView view = candidate_view(candidate, {});
    CHECK(view.sweep_note == sweep.describe());
    CHECK_FALSE(view.metrics.contains("param_points"));

    ProposalContext context{rowscale_task()};
    context.parent = view;
    Prompt prompt = build_proposal_prompt(shipped_prompts(), context, PromptTrim::full);
    CHECK_THAT(prompt.user, Catch::Contains("Param points: 64 of 16777216 param points swept: the task sweeps at most "
                                            "64 (its limits.max_param_points)"));
    CHECK_THAT(prompt.user, Catch::Contains("Shorten the param lists to at most 64 combinations"));

    // Without a sample (or from an archive whose note is not text) there is no such line.
    candidate.evaluation.metrics = Json{{"param_points", Json{{"note", 7}}}};
    context.parent = candidate_view(candidate, {});
    CHECK(context.parent->sweep_note.empty());
    CHECK_THAT(build_proposal_prompt(shipped_prompts(), context, PromptTrim::full).user,
               !Catch::Contains("Param points:"));
}
