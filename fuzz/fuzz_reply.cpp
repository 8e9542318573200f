// Fuzz target: reading a candidate out of a model's reply, whole-file and SEARCH/REPLACE forms,
// with and without a parent, and reading a planner's reply (the two-phase step's plan) against the
// general menu. parse_reply and read_plan_reply never throw; they must not crash or take more than
// linear time.
#include <cstddef>
#include <cstdint>

#include "agents/menu.hpp"
#include "agents/plan_reply.hpp"
#include "agents/reply_parser.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    static const std::string parent = "/* kforge:plan\n{\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [32], "
                                      "\"args\": []}]}\n*/\nextern \"C\" __global__ void k()\n{\n    int x = 1;\n}\n";
    static const Menu menu = load_menu(fuzz::tasks_dir() + "/../prompts/menus/general.json");
    std::string_view reply = fuzz::as_text(data, size);
    ParsedReply whole = parse_reply(reply, EditForm::whole_file, nullptr);
    ParsedReply edits = parse_reply(reply, EditForm::search_replace, &parent);
    (void)extract_note(reply);
    (void)find_fenced_blocks(reply);
    (void)read_plan_reply(reply, menu);
    (void)whole;
    (void)edits;
    return 0;
}
