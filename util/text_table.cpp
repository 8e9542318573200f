// TextTable, format_local_time() and first_line(): the small formatting helpers of kforge's text
// output (inspect, export headers, eval, the suite's table and logs, the task self-test). Nothing in
// them is kforge's own, so they sit in util, where every room that prints can reach them.
#include "util/text_table.hpp"

#include <algorithm>
#include <stdexcept>

#include <ctime>

#include <fmt/chrono.h>

#include "util/text.hpp"

namespace kforge {

TextTable::TextTable(std::vector<Column> columns) : m_columns(std::move(columns)) {}

void TextTable::add_row(std::vector<std::string> cells)
{
    if (cells.size() > m_columns.size())
        throw std::logic_error("TextTable: a row has more cells than the table has columns");
    cells.resize(m_columns.size());
    m_rows.push_back(std::move(cells));
}

std::string TextTable::render(std::string_view indent) const
{
    std::vector<size_t> widths;
    for (const auto& column : m_columns)
        widths.push_back(column.header.size());
    for (const auto& row : m_rows)
        for (size_t i = 0; i < row.size(); ++i)
            widths[i] = std::max(widths[i], row[i].size());

    auto render_line = [&](const std::vector<std::string>& cells) {
        std::string line(indent);
        for (size_t i = 0; i < cells.size(); ++i) {
            std::string padding(widths[i] - cells[i].size(), ' ');
            bool right = m_columns[i].align == Align::right;
            line += right ? padding + cells[i] : cells[i] + padding;
            if (i + 1 < cells.size())
                line += "  ";
        }
        line.erase(line.find_last_not_of(' ') + 1);
        return line + "\n";
    };
    std::vector<std::string> headers;
    for (const auto& column : m_columns)
        headers.push_back(column.header);
    std::string out = render_line(headers);
    for (const auto& row : m_rows)
        out += render_line(row);
    return out;
}

std::string format_local_time(double epoch_seconds)
{
    return fmt::format("{:%Y-%m-%d %H:%M:%S}",
                       fmt::localtime(static_cast<std::time_t>(epoch_seconds)));
}

std::string first_line(std::string_view text, size_t max_chars)
{
    for (const auto& line : split(text, '\n')) {
        std::string trimmed = trim(line);
        if (trimmed.empty())
            continue;
        if (trimmed.size() <= max_chars)
            return trimmed;
        return trimmed.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
    }
    return "";
}

} // namespace kforge
