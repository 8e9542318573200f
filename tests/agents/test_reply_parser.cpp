// Reading candidates out of replies of every shape: one block, several, unclosed, none, huge,
// random bytes.
#include <catch2/catch.hpp>

#include <chrono>
#include <random>

#include "agents/reply_parser.hpp"

using namespace kforge;

namespace {

const std::string k_reply_kernel = "extern \"C\" __global__ void k(float* y) { y[0] = 1; }";

ParsedReply parse_whole(const std::string& reply) { return parse_reply(reply, EditForm::whole_file, nullptr); }

} // namespace

TEST_CASE("a single cuda block is the source and the CHANGE line is the note", "[agents]")
{
    ParsedReply parsed = parse_whole("CHANGE: one warp per row with shuffles\n\n```cuda\n" + k_reply_kernel + "\n```\n");
    REQUIRE(parsed.source);
    CHECK(*parsed.source == k_reply_kernel);
    CHECK(parsed.note == "one warp per row with shuffles");
    CHECK_FALSE(parsed.from_unclosed_fence);
}

TEST_CASE("of several blocks the kernel block wins, a cuda fence beats others, and the last wins ties", "[agents]")
{
    std::string draft = "extern \"C\" __global__ void draft() {}";
    std::string reply = "**Change:** final version\n```json\n{\"a\": 1}\n```\n```python\n# __global__ in python?\n```\n"
                        "```cuda\n" + draft + "\n```\nAnd improved:\n```cuda\n" + k_reply_kernel + "\n```\n```text\nnotes\n```\n";
    ParsedReply parsed = parse_whole(reply);
    REQUIRE(parsed.source);
    CHECK(*parsed.source == k_reply_kernel);
    CHECK(parsed.note == "final version");

    // A block without __global__ (a helper) never wins over the kernel, even when it comes last.
    parsed = parse_whole("```cuda\n" + k_reply_kernel + "\n```\n```cuda\n__device__ float helper();\n```\n");
    REQUIRE(parsed.source);
    CHECK(*parsed.source == k_reply_kernel);

    // A closed fence wins over a later unclosed one.
    parsed = parse_whole("```cuda\n" + k_reply_kernel + "\n```\n```cuda\nextern \"C\" __global__ void cut(");
    REQUIRE(parsed.source);
    CHECK(*parsed.source == k_reply_kernel);
}

TEST_CASE("an unclosed fence still yields its code, marked as such", "[agents]")
{
    ParsedReply parsed = parse_whole("Here it is:\n~~~cpp\n" + k_reply_kernel + "\n");
    REQUIRE(parsed.source);
    CHECK(*parsed.source == k_reply_kernel + "\n");
    CHECK(parsed.from_unclosed_fence);
    CHECK(parsed.note == "Here it is:");
}

TEST_CASE("code without any fence is taken from its first line of code", "[agents]")
{
    ParsedReply parsed = parse_whole("Sure. The kernel follows.\n#include <cuda_fp16.h>\n" + k_reply_kernel + "\n");
    REQUIRE(parsed.source);
    CHECK(parsed.source->rfind("#include <cuda_fp16.h>", 0) == 0);
}

TEST_CASE("a reply without a kernel is no code, with a message for the next prompt", "[agents]")
{
    ParsedReply parsed = parse_whole("I would use shared memory and warp shuffles here.");
    CHECK_FALSE(parsed.source);
    CHECK_THAT(parsed.problem, Catch::Contains("no code block with an extern \"C\" __global__ kernel"));
    CHECK(parse_whole("").problem.size() > 0);
    CHECK_FALSE(parse_whole("```cuda\n```\n").source);
}

TEST_CASE("a source whose plan is library steps alone is code, though it defines no kernel", "[agents]")
{
    const std::string steps_only = "/* kforge:plan\n{ \"launches\": [{\"library\": \"matmul\", \"a\": \"x\", \"b\": \"w\", "
                                   "\"d\": \"out\", \"m\": \"M\", \"n\": 64, \"k\": \"K\", \"epilogue\": \"relu\"}] }\n*/";
    ParsedReply parsed = parse_whole("CHANGE: one cuBLASLt call with the RELU epilogue\n\n```cuda\n" + steps_only + "\n```\n");
    REQUIRE(parsed.source);
    CHECK(*parsed.source == steps_only);
    // A plan block naming kernels only, without a kernel anywhere, is still no code.
    ParsedReply kernels_only = parse_whole("```cuda\n/* kforge:plan\n{ \"launches\": [{\"kernel\": \"k\"}] }\n*/\n```\n");
    CHECK_FALSE(kernels_only.source);
}

TEST_CASE("a separate JSON plan block is put into the source as its kforge:plan comment", "[agents]")
{
    std::string plan = "{\"params\": {\"BLOCK\": [128, 256]}, \"launches\": [{\"kernel\": \"k\", \"grid\": [1], "
                       "\"block\": [\"BLOCK\"], \"args\": [\"y\"]}]}";
    ParsedReply parsed = parse_whole("```cuda\n" + k_reply_kernel + "\n```\nThe plan:\n```json\n" + plan + "\n```\n");
    REQUIRE(parsed.source);
    CHECK(parsed.source->rfind("/* kforge:plan\n" + plan + "\n*/\n", 0) == 0);
    CHECK_THAT(*parsed.source, Catch::EndsWith(k_reply_kernel));

    // A source that carries its own plan is left alone.
    std::string own = "/* kforge:plan\n" + plan + "\n*/\n" + k_reply_kernel;
    parsed = parse_whole("```cuda\n" + own + "\n```\n```json\n" + plan + "\n```\n");
    REQUIRE(parsed.source);
    CHECK(*parsed.source == own);
}

TEST_CASE("a 2 MB reply is parsed, and a code block past the size cap is refused with its size", "[agents]")
{
    std::string prose(2 * 1024 * 1024, 'x');
    for (size_t i = 100; i < prose.size(); i += 101)
        prose[i] = '\n';
    ParsedReply parsed = parse_whole("CHANGE: big\n" + prose + "\n```cuda\n" + k_reply_kernel + "\n```\n");
    REQUIRE(parsed.source);
    CHECK(*parsed.source == k_reply_kernel);

    std::string huge = k_reply_kernel + "\n" + std::string(k_max_source_bytes, ' ');
    parsed = parse_whole("```cuda\n" + huge + "\n```\n");
    CHECK_FALSE(parsed.source);
    CHECK_THAT(parsed.problem, Catch::Contains(fmt::format("at most {} bytes", k_max_source_bytes)));
}

TEST_CASE("notes are one clean line of at most 200 characters", "[agents]")
{
    CHECK(extract_note("```cuda\nCHANGE: not this\n```\nSummary: this one\n") == "this one");
    CHECK(extract_note(std::string("CHANGE: a\tb\x01 c")) == "a b  c");
    std::string note = extract_note("CHANGE: " + std::string(300, 'y'));
    CHECK(note.size() == 203);
    // A cut never splits a UTF-8 sequence.
    std::string utf8;
    for (int i = 0; i < 150; ++i)
        utf8 += "\xc3\xa9";
    CHECK(extract_note("CHANGE: " + utf8).size() % 2 == 1);
}

TEST_CASE("random bytes and pathological replies never crash or take long", "[agents]")
{
    std::mt19937_64 random(12345);
    std::vector<std::string> pieces = {"```", "```cuda\n", "~~~", "\n", "__global__", "<<<<<<< SEARCH\n", "=======\n",
                                       ">>>>>>> REPLACE\n", "kforge:plan", "{\"launches\": [", "*/", "CHANGE:", "\r\n",
                                       std::string("\0\xff\xfe", 3), "`", " "};
    std::string parent = "line one\n" + k_reply_kernel + "\n";
    auto start = std::chrono::steady_clock::now();
    for (int round = 0; round < 300; ++round) {
        std::string reply;
        size_t length = random() % 4000;
        while (reply.size() < length) {
            if (random() % 3 == 0)
                reply += static_cast<char>(random() % 256);
            else
                reply += pieces[random() % pieces.size()];
        }
        for (EditForm form : {EditForm::whole_file, EditForm::search_replace}) {
            ParsedReply parsed = parse_reply(reply, form, round % 2 ? &parent : nullptr);
            CHECK((parsed.source.has_value() || !parsed.problem.empty()));
        }
    }
    // Long runs of the characters the scanners look for.
    for (std::string unit : {"`", "<", "=", ">", "\n", "```\n", "```cuda\n"}) {
        std::string reply;
        while (reply.size() < 1'000'000)
            reply += unit;
        ParsedReply parsed = parse_reply(reply, EditForm::search_replace, &parent);
        CHECK((parsed.source.has_value() || !parsed.problem.empty()));
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("parsing took " << seconds << " s");
    CHECK(seconds < 30);
}
