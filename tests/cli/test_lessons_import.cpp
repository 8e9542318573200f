// `kforge lessons --import` on hostile files (issue 35): what is not a regular file, a file or a
// lesson over its bound, a malformed line, and a long import stopped by SIGTERM or killed. Each is
// refused with the path (and line) named and the documented exit code, and the knowledge base
// holds afterwards exactly what it held before: an import is all or nothing.
#include "kf_catch.hpp"

#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <thread>

#include <fmt/format.h>

#include "archive/knowledge_base.hpp"
#include "test_support.hpp"
#include "util/text.hpp"

namespace kforge::test {
namespace {

// One lesson line as `lessons --export` writes it.
std::string lesson_line(const std::string& task, const std::string& text)
{
    return fmt::format(R"({{"schema": "kforge.lesson/1", "task": "{}", "category": "memory", "tags": ["t"], )"
                       R"("text": "{}", "run_id": "r1"}})",
                       task, text);
}

// `count` distinct lessons, one per line; `tag` keeps two files' lessons apart.
std::string many_lessons(size_t count, const std::string& tag)
{
    std::string text;
    text.reserve(count * 130);
    for (size_t i = 0; i < count; ++i)
        text += lesson_line("softmax_f32", fmt::format("{} lesson number {} about row-wise loads", tag, i)) + "\n";
    return text;
}

int64_t lessons_held(const std::filesystem::path& knowledge)
{
    return KnowledgeBase::open(knowledge, KnowledgeAccess::read_only).count();
}

// A knowledge base holding one lesson, so "as it was" is not just "empty".
std::filesystem::path knowledge_with_one_lesson(const TempDir& dir)
{
    auto knowledge = dir / "kb.sqlite";
    write_text(dir / "one.jsonl", lesson_line("axpy_f32", "one lesson held before") + "\n");
    auto seeded = run_kforge({"lessons", "--knowledge", knowledge.string(), "--import", (dir / "one.jsonl").string()});
    REQUIRE(seeded.exit_code == 0);
    REQUIRE(lessons_held(knowledge) == 1);
    return knowledge;
}

// Starts an import of `file` and waits until it has begun storing (its "importing" line), or 20 s.
bool wait_until_importing(const RunningProgram& import)
{
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        if (import.stderr_so_far().find("importing") != std::string::npos)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

} // namespace

TEST_CASE("lessons --import refuses a directory, a device and a FIFO, naming the path and what it is",
          "[e2e][cli][hostile][lessons]")
{
    TempDir dir;
    auto knowledge = knowledge_with_one_lesson(dir);
    auto fifo = dir / "lessons.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // The directory first: an import that reads a FIFO would wait for a writer forever, and one
    // that reads /dev/zero would fill the memory.
    struct Case {
        std::string path;
        std::string what;
    };
    for (const auto& c : std::vector<Case>{{dir.path().string(), "it is a directory"},
                                           {"/dev/zero", "(a character device)"},
                                           {fifo.string(), "(a FIFO)"}}) {
        auto result = run_kforge({"lessons", "--knowledge", knowledge.string(), "--import", c.path});
        INFO(c.path << "\n" << result.out << result.err);
        REQUIRE(result.exit_code == 3);
        CHECK_THAT(result.err, Catch::Contains(c.path + ": cannot read lessons file") && Catch::Contains(c.what));
        CHECK(lessons_held(knowledge) == 1);
    }
}

TEST_CASE("lessons --import refuses a file or a lesson over its bound, naming the bound", "[e2e][cli][hostile][lessons]")
{
    TempDir dir;
    auto knowledge = knowledge_with_one_lesson(dir);
    // Sparse: the size is refused before a byte is read.
    auto huge = dir / "huge.jsonl";
    write_text(huge, "");
    std::filesystem::resize_file(huge, k_max_lessons_file_bytes + 1);
    auto too_big = run_kforge({"lessons", "--knowledge", knowledge.string(), "--import", huge.string()});
    INFO(too_big.err);
    CHECK(too_big.exit_code == 3);
    CHECK_THAT(too_big.err, Catch::Contains(huge.string()) &&
                                Catch::Contains(fmt::format("kforge reads at most {} bytes", k_max_lessons_file_bytes)));

    auto long_lesson = dir / "long.jsonl";
    write_text(long_lesson, lesson_line("softmax_f32", "a short one") + "\n" +
                                lesson_line("softmax_f32", std::string(k_max_lesson_bytes, 'x')) + "\n");
    auto too_long = run_kforge({"lessons", "--knowledge", knowledge.string(), "--import", long_lesson.string()});
    INFO(too_long.err);
    CHECK(too_long.exit_code == 3);
    CHECK_THAT(too_long.err, Catch::Contains(long_lesson.string() + ":2: a lesson of") &&
                                 Catch::Contains(fmt::format("at most {} bytes", k_max_lesson_bytes)));
    CHECK(lessons_held(knowledge) == 1);
}

TEST_CASE("a lessons file with a malformed line imports nothing and names the line", "[e2e][cli][hostile][lessons]")
{
    TempDir dir;
    auto knowledge = knowledge_with_one_lesson(dir);
    auto file = dir / "bad.jsonl";
    write_text(file, lesson_line("softmax_f32", "first good lesson") + "\n\n" +
                         lesson_line("softmax_f32", "second good lesson") + "\n" + R"({"task": "softmax_f32", "text": )" +
                         "\n" + lesson_line("softmax_f32", "after the bad line") + "\n");
    auto result = run_kforge({"lessons", "--knowledge", knowledge.string(), "--import", file.string()});
    INFO(result.out << result.err);
    CHECK(result.exit_code == 3);
    CHECK_THAT(result.err, Catch::Contains(file.string() + ":4: invalid JSON"));
    CHECK(lessons_held(knowledge) == 1);
    // A lesson without its text is named by line and field the same way.
    write_text(file, lesson_line("softmax_f32", "good") + "\n" + R"({"task": "softmax_f32"})" + "\n");
    auto no_text = run_kforge({"lessons", "--knowledge", knowledge.string(), "--import", file.string()});
    INFO(no_text.err);
    CHECK(no_text.exit_code == 3);
    CHECK_THAT(no_text.err, Catch::Contains(file.string() + ":2") && Catch::Contains("text"));
    CHECK(lessons_held(knowledge) == 1);
}

TEST_CASE("SIGTERM stops a 200,000-lesson import at once with nothing imported; a kill leaves the knowledge base "
          "as it was",
          "[e2e][cli][hostile][lessons]")
{
    constexpr size_t k_lessons = 200000;
    TempDir dir;
    auto knowledge = knowledge_with_one_lesson(dir);
    auto file = dir / "many.jsonl";
    write_text(file, many_lessons(k_lessons, "first"));
    {
        RunningProgram import(kforge_binary(), {"lessons", "--knowledge", knowledge.string(), "--import", file.string()});
        bool importing = wait_until_importing(import);
        INFO(import.stderr_so_far());
        CHECK(importing);
        auto signalled = std::chrono::steady_clock::now();
        ::kill(import.pid(), SIGTERM);
        std::optional<CommandResult> ended = import.wait_for(std::chrono::seconds(10));
        REQUIRE(ended);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
        INFO(ended->out << ended->err << "ended " << seconds << " s after SIGTERM");
        CHECK(seconds < 5);
        // It may have committed just before the signal arrived; then every lesson is in.
        if (ended->exit_code == 0) {
            CHECK(lessons_held(knowledge) == 1 + static_cast<int64_t>(k_lessons));
            return;
        }
        CHECK(ended->exit_code == 130);
        CHECK_THAT(ended->err, Catch::Contains("stopped at your request") && Catch::Contains("nothing was imported"));
        CHECK(lessons_held(knowledge) == 1);
    }
    {
        RunningProgram import(kforge_binary(), {"lessons", "--knowledge", knowledge.string(), "--import", file.string()});
        bool importing = wait_until_importing(import);
        INFO(import.stderr_so_far());
        CHECK(importing);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        ::kill(import.pid(), SIGKILL);
        CommandResult killed = import.wait();
        int64_t held = lessons_held(knowledge);
        INFO("exit " << killed.exit_code << ", lessons held " << held);
        CHECK((held == 1 || held == 1 + static_cast<int64_t>(k_lessons)));
    }
}

} // namespace kforge::test
