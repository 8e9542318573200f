// Fuzz target: a lessons file as `kforge lessons --import` reads it (search/lesson_file), line by
// line, before anything is stored. Every refusal must be an Error of bad input naming the line,
// never a crash, a hang or another exception; and every lesson it accepts must survive the export
// format, since an exported file is what the next machine imports: lesson_to_json read back by
// lesson_from_json gives the same lesson.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "fuzz_support.hpp"
#include "search/knowledge.hpp"
#include "search/lesson_file.hpp"
#include "util/error.hpp"
#include "util/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace kforge;
    std::vector<KnowledgeLesson> lessons;
    try {
        lessons = parse_lessons_jsonl(fuzz::as_text(data, size), "lessons.jsonl");
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::bad_input)
            throw;
        if (std::string_view(e.what()).rfind("lessons.jsonl:", 0) != 0)
            throw std::logic_error(std::string("a refusal that names no line: ") + e.what());
        return 0;
    }
    for (const auto& item : lessons) {
        // As `lessons --export` writes the line and `--import` reads it back.
        std::string line = lesson_to_json(item.lesson, item.run_id).dump(-1, ' ', false, Json::error_handler_t::replace);
        std::string run_id;
        Lesson back = lesson_from_json(parse_json_text(line, "exported lesson"), "exported lesson", run_id);
        const Lesson& in = item.lesson;
        if (back.task_name != in.task_name || back.category != in.category || back.tags != in.tags ||
            back.text != in.text || back.evidence != in.evidence || back.candidate_id != in.candidate_id ||
            back.created_at != in.created_at || run_id != item.run_id)
            throw std::logic_error("a lesson changed on its way through the export format: " + in.text);
    }
    return 0;
}
