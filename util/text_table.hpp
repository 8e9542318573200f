// Plain-text tables for command output (inspect, export headers, the suite's table): columns as
// wide as their widest cell, text left-aligned and numbers right-aligned, no borders, so output
// stays greppable.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge {

class TextTable
{
public:
    enum class Align
    {
        left,
        right
    };
    struct Column
    {
        std::string header;
        Align align = Align::left;
    };

    explicit TextTable(std::vector<Column> columns);
    // A row with one cell per column; missing cells are blank, extra cells are an error (a bug).
    void add_row(std::vector<std::string> cells);
    bool empty() const { return m_rows.empty(); }
    // Header line and rows, each line starting with `indent` and ending with '\n'; trailing blanks
    // are trimmed.
    std::string render(std::string_view indent = "  ") const;

private:
    std::vector<Column> m_columns;
    std::vector<std::vector<std::string>> m_rows;
};

// "2026-11-21 22:08:15" in local time, from seconds since the epoch.
std::string format_local_time(double epoch_seconds);

// The first non-blank line of `text`, trimmed and cut to `max_chars` (with "..." when cut).
std::string first_line(std::string_view text, size_t max_chars);

} // namespace kforge
