// The saved search state's JSON form; see loop_state.hpp.
#include "search/loop_state.hpp"

#include <fmt/format.h>

#include "util/error.hpp"

namespace kforge {
namespace {

constexpr int k_state_version = 1;

Json items_json(const std::vector<WorkItem>& items)
{
    Json out = Json::array();
    for (const auto& item : items)
        out.push_back(item.to_json());
    return out;
}

} // namespace

Json LoopState::to_json() const
{
    Json children_json = Json::object();
    for (const auto& [id, count] : children)
        children_json[std::to_string(id)] = count;
    Json follow = Json::array();
    for (const auto& queue : follow_ups) {
        Json list = Json::array();
        for (const auto& f : queue)
            list.push_back(Json{{"kind", item_kind_name(f.kind)}, {"candidate", f.candidate}, {"round", f.round}});
        follow.push_back(list);
    }
    Json held = Json::object();
    for (const auto& [id, status] : held_out)
        held[std::to_string(id)] = status;
    return Json{{"version", k_state_version},
                {"rng", rng.save()},
                {"next_seq", next_seq},
                {"next_island", next_island},
                {"generation", generation},
                {"generation_fill", generation_fill},
                {"stale_generations", stale_generations},
                {"generation_improved", generation_improved},
                {"recorded_candidates", recorded_candidates},
                {"duplicates", duplicates},
                {"empty_streak", empty_streak},
                {"call_failure_streak", call_failure_streak},
                {"best_id", best_id ? Json(*best_id) : Json()},
                {"best_fitness", best_fitness},
                {"island_best", island_best},
                {"children", children_json},
                {"target_attempts", target_attempts},
                {"follow_ups", follow},
                {"requests", items_json({requests.begin(), requests.end()})},
                {"held_out", held},
                {"lessons_requested", lessons_requested},
                {"plans_scheduled", plans_scheduled},
                {"searched_s", searched_s ? Json(*searched_s) : Json()},
                {"pending", items_json(pending)},
                {"stop", stop_reason_name(stop)}};
}

LoopState LoopState::from_json(const Json& json, int islands, std::string_view what)
{
    JsonReader reader(json, std::string(what));
    if (reader.get_int("version", 0) != k_state_version)
        reader.fail(fmt::format("search state version {} is not one this kforge reads ({})",
                                reader.get_int("version", 0), k_state_version));
    LoopState state;
    try {
        state.rng = Rng::restore(reader.at("rng").as_string());
    } catch (const std::invalid_argument&) {
        reader.at("rng").fail("not a saved RNG state");
    }
    state.next_seq = static_cast<uint64_t>(reader.at("next_seq").as_int());
    state.next_island = static_cast<int>(reader.get_int("next_island", 0)) % islands;
    state.generation = static_cast<int>(reader.get_int("generation", 0));
    state.generation_fill = static_cast<int>(reader.get_int("generation_fill", 0));
    state.stale_generations = static_cast<int>(reader.get_int("stale_generations", 0));
    state.generation_improved = reader.get_bool("generation_improved", false);
    state.recorded_candidates = reader.get_int("recorded_candidates", 0);
    state.duplicates = reader.get_int("duplicates", 0);
    state.empty_streak = static_cast<int>(reader.get_int("empty_streak", 0));
    state.call_failure_streak = static_cast<int>(reader.get_int("call_failure_streak", 0));
    if (reader.has("best_id") && !reader.at("best_id").json().is_null())
        state.best_id = reader.at("best_id").as_int();
    state.best_fitness = reader.get_number("best_fitness", 0);
    if (reader.has("searched_s") && !reader.at("searched_s").json().is_null())
        state.searched_s = std::max(0.0, reader.at("searched_s").as_number());
    state.island_best.assign(static_cast<size_t>(islands), 0.0);
    if (reader.has("island_best")) {
        auto values = reader.at("island_best").items();
        for (size_t i = 0; i < values.size() && i < state.island_best.size(); ++i)
            if (!values[i].json().is_null()) // a NaN is saved as null: no best yet
                state.island_best[i] = values[i].as_number();
    }
    if (reader.has("children"))
        for (const auto& key : reader.at("children").keys())
            state.children[std::stoll(key)] = static_cast<int>(reader.at("children").at(key).as_int());
    if (reader.has("target_attempts"))
        for (const auto& key : reader.at("target_attempts").keys())
            state.target_attempts[key] = static_cast<int>(reader.at("target_attempts").at(key).as_int());
    state.follow_ups.resize(static_cast<size_t>(islands));
    if (reader.has("follow_ups")) {
        auto queues = reader.at("follow_ups").items();
        for (size_t i = 0; i < queues.size(); ++i)
            for (const auto& f : queues[i].items()) {
                FollowUp follow{f.at("kind").as_string() == "tune" ? ItemKind::tune : ItemKind::repair,
                                f.at("candidate").as_int(), static_cast<int>(f.get_int("round", 1))};
                state.follow_ups[i % state.follow_ups.size()].push_back(follow);
            }
    }
    if (reader.has("requests"))
        for (const auto& item : reader.at("requests").items())
            state.requests.push_back(WorkItem::from_json(item.json(), reader.file() + ": requests"));
    if (reader.has("held_out"))
        for (const auto& key : reader.at("held_out").keys())
            state.held_out[std::stoll(key)] = reader.at("held_out").at(key).as_string();
    state.lessons_requested = static_cast<int>(reader.get_int("lessons_requested", 0));
    state.plans_scheduled = reader.get_int("plans_scheduled", 0);
    if (reader.has("pending"))
        for (const auto& item : reader.at("pending").items())
            state.pending.push_back(WorkItem::from_json(item.json(), reader.file() + ": pending"));
    state.stop = parse_stop_reason(reader.get_string("stop", "none")).value_or(StopReason::none);
    return state;
}

} // namespace kforge
