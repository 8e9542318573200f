// Fuzz target: reading a candidate out of a model's reply, whole-file and SEARCH/REPLACE forms,
// with and without a parent. parse_reply never throws; it must not crash or take more than
// linear time.
#include <cstddef>
#include <cstdint>

#include "agents/reply_parser.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    static const std::string parent = "/* kforge:plan\n{\"launches\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [32], "
                                      "\"args\": []}]}\n*/\nextern \"C\" __global__ void k()\n{\n    int x = 1;\n}\n";
    std::string_view reply = fuzz::as_text(data, size);
    ParsedReply whole = parse_reply(reply, EditForm::whole_file, nullptr);
    ParsedReply edits = parse_reply(reply, EditForm::search_replace, &parent);
    (void)extract_note(reply);
    (void)find_fenced_blocks(reply);
    (void)whole;
    (void)edits;
    return 0;
}
