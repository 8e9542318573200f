// Optimisation menus: short lists of techniques for one kind of kernel, as data (prompts/menus/).
//
// A menu (`kforge.menu/1`, one JSON file per menu, documented in prompts/README.md) names the tasks
// it fits by category and tags, and lists techniques: an id the statistics are kept under, a title,
// when it applies, what to look for in the profile, and source signals — strings whose appearance
// in a kernel (comments aside) shows the technique was applied. The planner of a two-phase proposal
// is shown the task's menu and picks from it; kforge checks the coder's kernel against the signals
// of what was picked.
//
// Menus load from folders in order (--menus DIR, then $KFORGE_MENUS, then the bundled
// prompts/menus); a file in an earlier folder replaces the bundled one of the same name, and new
// names add menus. Every file is checked when loaded, with errors naming the file and the field.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/task.hpp"

namespace kforge {

inline constexpr std::string_view k_menu_schema = "kforge.menu/1";
// The menu a task gets when no other menu's category and tags fit it.
inline constexpr std::string_view k_general_menu = "general";

struct MenuItem {
    std::string id;                   // lowercase words joined by '-': "vectorize-16b"
    std::string title;                // what the technique is, in one line
    std::string when;                 // when it applies
    std::string profile;              // what the profile shows when it would help ("" if nothing)
    std::vector<std::string> signals; // source strings that show it was applied (may be empty)
    std::vector<std::string> tags;    // only for tasks sharing one of these tags (empty: every task)
};

struct Menu {
    std::string name;                     // the file's stem
    std::string title;
    std::vector<std::string> categories;  // task categories it fits
    std::vector<std::string> tags;        // task tags it fits
    std::vector<MenuItem> items;
    std::filesystem::path file;           // where it was read from

    const MenuItem* find(std::string_view id) const;
};

// `menu` with only the items meant for `task` (see MenuSet::pick).
Menu menu_for_task(const Menu& menu, const Task& task);

// Reads and checks one menu file. Throws Error(bad_input) "FILE: PATH: what was expected".
Menu load_menu(const std::filesystem::path& file);

class MenuSet
{
public:
    // Every *.json of `dirs`; the first folder holding a file name wins. Throws Error(bad_input) for
    // a bad file, or when no menu is found at all.
    static MenuSet load(const std::vector<std::filesystem::path>& dirs);
    // `override_dir` (if given), then $KFORGE_MENUS (if set), then resource_dir()/prompts/menus.
    static MenuSet load_default(const std::filesystem::path& override_dir = {});

    const std::vector<Menu>& menus() const { return m_menus; }
    const Menu* find(std::string_view name) const;
    // The menu for `task`: the one sharing most tags with it (3 points a tag, 1 for its category;
    // ties go to the name first in order), or the general menu when none shares a tag; `forced`
    // names a menu to use instead ("" for none). Returned with the items meant for `task` only
    // (those without tags or sharing one with it; all of them if that leaves none). Throws
    // Error(usage) for an unknown forced name (with the closest one), Error(bad_input) when nothing
    // fits and there is no general menu.
    Menu pick(const Task& task, std::string_view forced = "") const;

private:
    std::vector<Menu> m_menus; // by name
};

// How well `menu` fits `task` (see MenuSet::pick); 0: not at all.
int menu_fit(const Menu& menu, const Task& task);

} // namespace kforge
