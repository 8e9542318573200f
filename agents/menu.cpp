// Loading, checking and picking optimisation menus; see menu.hpp.
//
// Menus are user data that reach the statistics: an item's id is the key its counts are kept under
// across runs and tasks, so ids are checked strictly (lowercase words joined by '-', unique in the
// menu, never the prefix kforge gives invented techniques). The same id in two menus is the same
// technique, counted together.
#include "agents/menu.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "util/error.hpp"
#include "util/json_reader.hpp"
#include "util/paths.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

constexpr size_t k_max_items = 24;
constexpr int k_points_per_tag = 3;

bool valid_id(std::string_view id)
{
    if (id.empty() || id.size() > 48 || id.front() == '-' || id.back() == '-')
        return false;
    for (char c : id)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    return id.find("--") == std::string_view::npos;
}

std::vector<std::string> string_list(const JsonReader& reader, std::string_view key)
{
    std::vector<std::string> values;
    if (!reader.has(key))
        return values;
    for (const auto& item : reader.at(key).items()) {
        std::string value = item.as_string();
        if (trim(value).empty())
            item.fail("expected a non-empty string");
        values.push_back(value);
    }
    return values;
}

MenuItem read_item(const JsonReader& reader)
{
    reader.allow_only({"id", "title", "when", "profile", "signals", "tags"});
    MenuItem item;
    item.id = reader.at("id").as_string();
    if (!valid_id(item.id))
        reader.at("id").fail("'" + item.id + "' is not a technique id: lowercase letters and digits in words joined by "
                                             "'-', such as \"vectorize-16b\"");
    if (item.id.rfind("new", 0) == 0)
        reader.at("id").fail("ids starting with 'new' are kept for techniques a planner invents");
    item.title = trim(reader.at("title").as_string());
    if (item.title.empty())
        reader.at("title").fail("a technique needs a title");
    item.when = trim(reader.at("when").as_string());
    item.profile = trim(reader.get_string("profile", ""));
    item.signals = string_list(reader, "signals");
    item.tags = string_list(reader, "tags");
    return item;
}

} // namespace

const MenuItem* Menu::find(std::string_view id) const
{
    for (const auto& item : items)
        if (item.id == id)
            return &item;
    return nullptr;
}

Menu load_menu(const std::filesystem::path& file)
{
    Json json = parse_json_file(file.string());
    JsonReader reader(json, file.string());
    if (!reader.is_object())
        reader.fail("expected a menu object");
    reader.allow_only({"schema", "name", "title", "applies_to", "items"});
    if (reader.at("schema").as_string() != k_menu_schema)
        reader.at("schema").fail("expected \"" + std::string(k_menu_schema) + "\"");
    Menu menu;
    menu.file = file;
    menu.name = reader.at("name").as_string();
    if (menu.name != file.stem().string())
        reader.at("name").fail("the name must be the file's name without .json ('" + file.stem().string() + "')");
    menu.title = trim(reader.at("title").as_string());
    if (menu.title.empty())
        reader.at("title").fail("a menu needs a title");
    if (auto applies = reader.find("applies_to")) {
        applies->allow_only({"categories", "tags"});
        menu.categories = string_list(*applies, "categories");
        menu.tags = string_list(*applies, "tags");
    }
    JsonReader items = reader.at("items");
    if (items.size() == 0 || items.size() > k_max_items)
        items.fail("a menu lists 1 to " + std::to_string(k_max_items) + " techniques");
    for (const auto& entry : items.items()) {
        MenuItem item = read_item(entry);
        if (menu.find(item.id))
            entry.at("id").fail("technique '" + item.id + "' is listed twice");
        menu.items.push_back(std::move(item));
    }
    return menu;
}

MenuSet MenuSet::load(const std::vector<std::filesystem::path>& dirs)
{
    std::map<std::string, std::filesystem::path> files; // file name -> the first folder's file
    for (const auto& dir : dirs) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
            continue;
        for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
            if (entry.is_regular_file() && entry.path().extension() == ".json")
                files.emplace(entry.path().filename().string(), entry.path());
    }
    if (files.empty()) {
        std::vector<std::string> searched;
        for (const auto& dir : dirs)
            searched.push_back(dir.string());
        fail_input("no optimisation menus found (searched: {})", join(searched, ", "));
    }
    MenuSet set;
    for (const auto& [name, path] : files)
        set.m_menus.push_back(load_menu(path));
    return set;
}

MenuSet MenuSet::load_default(const std::filesystem::path& override_dir)
{
    std::vector<std::filesystem::path> dirs;
    if (!override_dir.empty()) {
        std::error_code ec;
        if (!std::filesystem::is_directory(override_dir, ec))
            fail(ErrorKind::usage, "--menus {}: not a folder", override_dir.string());
        dirs.push_back(override_dir);
    }
    if (const char* env = std::getenv("KFORGE_MENUS"); env && *env)
        dirs.emplace_back(env);
    dirs.push_back(resource_dir() / "prompts" / "menus");
    return load(dirs);
}

const Menu* MenuSet::find(std::string_view name) const
{
    for (const auto& menu : m_menus)
        if (menu.name == name)
            return &menu;
    return nullptr;
}

int menu_fit(const Menu& menu, const Task& task)
{
    int score = 0;
    for (const auto& tag : menu.tags)
        if (std::find(task.tags.begin(), task.tags.end(), tag) != task.tags.end())
            score += k_points_per_tag;
    if (!task.category.empty() &&
        std::find(menu.categories.begin(), menu.categories.end(), task.category) != menu.categories.end())
        score += 1;
    return score;
}

Menu menu_for_task(const Menu& menu, const Task& task)
{
    Menu chosen = menu;
    std::erase_if(chosen.items, [&](const MenuItem& item) {
        if (item.tags.empty())
            return false;
        for (const auto& tag : item.tags)
            if (std::find(task.tags.begin(), task.tags.end(), tag) != task.tags.end())
                return false;
        return true;
    });
    if (chosen.items.empty())
        chosen.items = menu.items;
    return chosen;
}

Menu MenuSet::pick(const Task& task, std::string_view forced) const
{
    std::vector<std::string> names;
    for (const auto& menu : m_menus)
        names.push_back(menu.name);
    if (!forced.empty()) {
        if (const Menu* menu = find(forced))
            return menu_for_task(*menu, task);
        std::string close = closest_match(forced, names);
        fail(ErrorKind::usage, "--menu {}: no such menu{} (menus: {})", forced,
             close.empty() ? "" : " (did you mean " + close + "?)", join(names, ", "));
    }
    const Menu* best = nullptr;
    int best_score = 0;
    for (const auto& menu : m_menus) // by name: ties go to the first
        if (int score = menu_fit(menu, task); score > best_score && score >= k_points_per_tag) {
            best = &menu;
            best_score = score;
        }
    if (best)
        return menu_for_task(*best, task);
    if (const Menu* general = find(k_general_menu))
        return menu_for_task(*general, task);
    fail_input("no optimisation menu fits task {} (category '{}', tags {}) and there is no {}.json to fall back on "
               "(menus: {})",
               task.name, task.category, join(task.tags, ", "), k_general_menu, join(names, ", "));
}

} // namespace kforge
