// WorkItem names and its JSON form in the saved search state; see work_item.hpp.
#include "search/work_item.hpp"

#include <algorithm>
#include <array>

#include "util/error.hpp"

namespace kforge {
namespace {

constexpr std::array k_kinds = {ItemKind::reference, ItemKind::seed,    ItemKind::propose,    ItemKind::repair,
                                ItemKind::tune,      ItemKind::analyst, ItemKind::meta_prompt};
constexpr std::array k_modes = {ParentMode::none, ParentMode::exploit, ParentMode::explore, ParentMode::target};

Json optional_id(const std::optional<int64_t>& id) { return id ? Json(*id) : Json(); }

std::optional<int64_t> read_optional_id(const JsonReader& reader, std::string_view key)
{
    if (!reader.has(key) || reader.at(key).json().is_null())
        return std::nullopt;
    return reader.at(key).as_int();
}

std::vector<int64_t> read_ids(const JsonReader& reader, std::string_view key)
{
    std::vector<int64_t> ids;
    if (reader.has(key))
        for (const auto& item : reader.at(key).items())
            ids.push_back(item.as_int());
    return ids;
}

} // namespace

std::string_view item_kind_name(ItemKind kind)
{
    switch (kind) {
    case ItemKind::reference: return "reference";
    case ItemKind::seed: return "seed";
    case ItemKind::propose: return "propose";
    case ItemKind::repair: return "repair";
    case ItemKind::tune: return "tune";
    case ItemKind::analyst: return "analyst";
    case ItemKind::meta_prompt: return "meta_prompt";
    }
    return "propose";
}

bool yields_candidate(ItemKind kind)
{
    return kind != ItemKind::analyst && kind != ItemKind::meta_prompt;
}

std::string_view parent_mode_name(ParentMode mode)
{
    switch (mode) {
    case ParentMode::none: return "none";
    case ParentMode::exploit: return "exploit";
    case ParentMode::explore: return "explore";
    case ParentMode::target: return "target";
    }
    return "none";
}

Json WorkItem::to_json() const
{
    return Json{{"seq", seq},
                {"kind", item_kind_name(kind)},
                {"island", island},
                {"generation", generation},
                {"seed", std::to_string(seed)},
                {"parent", optional_id(parent)},
                {"inspirations", inspirations},
                {"mode", parent_mode_name(mode)},
                {"target_cell", target_cell},
                {"edit_form", edit_form == EditForm::search_replace ? "diff" : "whole"},
                {"meta_prompt_id", optional_id(meta_prompt_id)},
                {"lesson_ids", lesson_ids},
                {"seed_index", seed_index},
                {"repair_round", repair_round},
                {"seed_parent", seed_parent ? Json(*seed_parent) : Json()},
                {"subject", optional_id(subject)},
                {"meta_request", meta_request},
                {"two_phase", two_phase},
                {"focus", focus},
                {"focus_reason", focus_reason},
                {"tries_seen", tries_seen},
                {"show_schedules", show_schedules},
                {"plan_done", plan_done},
                {"reserved_calls", reserved_calls},
                {"reserved_cost_usd", reserved_cost_usd}};
}

WorkItem WorkItem::from_json(const Json& json, std::string_view what)
{
    JsonReader reader(json, std::string(what));
    WorkItem item;
    item.seq = static_cast<uint64_t>(reader.at("seq").as_int());
    std::string kind = reader.at("kind").as_string();
    auto k = std::find_if(k_kinds.begin(), k_kinds.end(), [&](ItemKind x) { return item_kind_name(x) == kind; });
    if (k == k_kinds.end())
        reader.at("kind").fail("unknown work item kind '" + kind + "'");
    item.kind = *k;
    item.island = static_cast<int>(reader.at("island").as_int());
    item.generation = static_cast<int>(reader.get_int("generation", 0));
    try {
        item.seed = std::stoull(reader.at("seed").as_string());
    } catch (const std::logic_error&) {
        reader.at("seed").fail("expected an unsigned integer in a string");
    }
    item.parent = read_optional_id(reader, "parent");
    item.inspirations = read_ids(reader, "inspirations");
    std::string mode = reader.get_string("mode", "none");
    auto m = std::find_if(k_modes.begin(), k_modes.end(), [&](ParentMode x) { return parent_mode_name(x) == mode; });
    item.mode = m == k_modes.end() ? ParentMode::none : *m;
    item.target_cell = reader.get_string("target_cell", "");
    item.edit_form = reader.get_string("edit_form", "whole") == "diff" ? EditForm::search_replace : EditForm::whole_file;
    item.meta_prompt_id = read_optional_id(reader, "meta_prompt_id");
    item.lesson_ids = read_ids(reader, "lesson_ids");
    item.seed_index = static_cast<int>(reader.get_int("seed_index", 0));
    item.repair_round = static_cast<int>(reader.get_int("repair_round", 0));
    if (auto index = read_optional_id(reader, "seed_parent"))
        item.seed_parent = static_cast<int>(*index);
    item.subject = read_optional_id(reader, "subject");
    if (reader.has("meta_request"))
        item.meta_request = reader.at("meta_request").json();
    item.two_phase = reader.get_bool("two_phase", false);
    item.focus = reader.get_string("focus", "");
    item.focus_reason = reader.get_string("focus_reason", "");
    item.tries_seen = reader.get_int("tries_seen", 0);
    item.show_schedules = reader.get_bool("show_schedules", false);
    if (reader.has("plan_done"))
        item.plan_done = reader.at("plan_done").json();
    item.reserved_calls = static_cast<int>(reader.get_int("reserved_calls", 0));
    item.reserved_cost_usd = reader.get_number("reserved_cost_usd", 0);
    return item;
}

} // namespace kforge
