// Reading a lessons file; see lesson_file.hpp.
//
// Every line is parsed before the caller stores any: a file with a bad line 90,000 stores nothing,
// rather than the 89,999 lessons before it. The whole file is held in memory, which its bound
// makes harmless; the lessons parsed from it take about as much again.
#include "search/lesson_file.hpp"

#include <fmt/format.h>

#include "search/knowledge.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/json_reader.hpp"
#include "util/limits.hpp"
#include "util/text.hpp"

namespace kforge {

std::vector<KnowledgeLesson> parse_lessons_jsonl(std::string_view text, std::string_view label)
{
    std::vector<KnowledgeLesson> lessons;
    size_t line_number = 0;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        std::string_view line = text.substr(start, end - start);
        start = end + 1;
        ++line_number;
        if (interrupt_requested())
            fail(ErrorKind::interrupted, "{}: stopped at your request at line {}, before any lesson was stored",
                 label, line_number);
        std::string where = fmt::format("{}:{}", label, line_number);
        if (line.size() > k_max_lesson_bytes)
            fail_input("{}: a lesson of {} bytes; kforge imports lessons of at most {} bytes ({})", where,
                       line.size(), k_max_lesson_bytes, format_bytes(static_cast<double>(k_max_lesson_bytes)));
        if (trim(line).empty())
            continue;
        KnowledgeLesson item;
        item.lesson = lesson_from_json(parse_json_text(line, where), where, item.run_id);
        lessons.push_back(std::move(item));
    }
    return lessons;
}

std::vector<KnowledgeLesson> read_lessons_file(const std::filesystem::path& path)
{
    std::string text = read_file(path, k_max_lessons_file_bytes, "lessons file");
    return parse_lessons_jsonl(text, path.string());
}

} // namespace kforge
