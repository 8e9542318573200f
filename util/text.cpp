// String and file helpers.
#include "util/text.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/limits.hpp"

namespace kforge {

std::string trim(std::string_view text)
{
    size_t begin = 0;
    size_t end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])))
        ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])))
        --end;
    return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> split(std::string_view text, char separator)
{
    std::vector<std::string> parts;
    size_t start = 0;
    for (;;) {
        size_t at = text.find(separator, start);
        if (at == std::string_view::npos) {
            parts.emplace_back(text.substr(start));
            return parts;
        }
        parts.emplace_back(text.substr(start, at - start));
        start = at + 1;
    }
}

std::string join(const std::vector<std::string>& parts, std::string_view separator)
{
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i)
            out += separator;
        out += parts[i];
    }
    return out;
}

std::string replace_all(std::string text, std::string_view from, std::string_view to)
{
    if (from.empty())
        return text;
    size_t at = 0;
    while ((at = text.find(from, at)) != std::string::npos) {
        text.replace(at, from.size(), to);
        at += to.size();
    }
    return text;
}

std::string to_lower(std::string_view text)
{
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

size_t edit_distance(std::string_view a, std::string_view b)
{
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates)
{
    std::string best;
    size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
    for (const auto& candidate : candidates) {
        size_t d = edit_distance(to_lower(word), to_lower(candidate));
        // A suggestion must keep part of the word: 'K' is not a typo of 'M'.
        if (d < best_distance && d < word.size()) {
            best_distance = d;
            best = candidate;
        }
    }
    return best;
}

std::string truncate_text(std::string_view text, size_t max_chars)
{
    if (text.size() <= max_chars)
        return std::string(text);
    size_t cut = text.rfind('\n', max_chars);
    if (cut == std::string_view::npos || cut < max_chars / 2)
        cut = max_chars;
    return fmt::format("{}\n[... {} more characters cut]", text.substr(0, cut), text.size() - cut);
}

std::string format_duration_ns(double ns)
{
    if (ns < 1e3)
        return fmt::format("{:.0f} ns", ns);
    if (ns < 1e6)
        return fmt::format("{:.2f} us", ns / 1e3);
    if (ns < 1e9)
        return fmt::format("{:.3f} ms", ns / 1e6);
    return fmt::format("{:.2f} s", ns / 1e9);
}

std::string format_bytes(double bytes)
{
    static constexpr const char* k_units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    size_t unit = 0;
    while (bytes >= 1024 && unit + 1 < std::size(k_units)) {
        bytes /= 1024;
        ++unit;
    }
    return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, k_units[unit]);
}

std::string read_file(const std::filesystem::path& path, uint64_t max_bytes, std::string_view what)
{
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer. Only regular files
    // are read, so the flag never matters past the checks below.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        fail_input("{}: cannot read {}: {}", path.string(), what, std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        int saved = errno;
        ::close(fd);
        fail_input("{}: cannot read {}: {}", path.string(), what, std::strerror(saved));
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        if (S_ISDIR(info.st_mode))
            fail_input("{}: cannot read {}: it is a directory", path.string(), what);
        std::string_view kind = S_ISCHR(info.st_mode)    ? "a character device"
                                : S_ISBLK(info.st_mode)  ? "a block device"
                                : S_ISFIFO(info.st_mode) ? "a FIFO"
                                : S_ISSOCK(info.st_mode) ? "a socket"
                                                         : "of another kind";
        fail_input("{}: cannot read {}: it is not a regular file ({})", path.string(), what, kind);
    }
    if (static_cast<uint64_t>(info.st_size) > max_bytes) {
        ::close(fd);
        fail_input("{}: the {} is {} bytes; kforge reads at most {} bytes ({})", path.string(), what,
                   info.st_size, max_bytes, format_bytes(static_cast<double>(max_bytes)));
    }
    std::string content;
    content.reserve(static_cast<size_t>(info.st_size));
    char buffer[65536];
    for (;;) {
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0) {
            int saved = errno;
            ::close(fd);
            fail_input("{}: cannot read {}: {}", path.string(), what, std::strerror(saved));
        }
        if (n == 0)
            break;
        content.append(buffer, static_cast<size_t>(n));
        if (content.size() > max_bytes) { // the file grew while being read
            ::close(fd);
            fail_input("{}: the {} is over {} bytes, the most kforge reads", path.string(), what, max_bytes);
        }
    }
    ::close(fd);
    return content;
}

std::filesystem::path output_file_target(const std::filesystem::path& path)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path target = path;
    if (fs::is_symlink(fs::symlink_status(path, ec))) {
        target = fs::canonical(path, ec);
        if (ec) // a dangling link: writing would create its target, somewhere the user did not name
            fail(ErrorKind::usage, "{}: a symbolic link to nothing; not writing through it", path.string());
    }
    fs::file_status status = fs::status(target, ec);
    if (ec || status.type() == fs::file_type::not_found || status.type() == fs::file_type::regular)
        return target;
    std::string_view kind = status.type() == fs::file_type::directory ? "a directory"
                            : status.type() == fs::file_type::fifo    ? "a FIFO"
                            : status.type() == fs::file_type::socket  ? "a socket"
                            : status.type() == fs::file_type::character || status.type() == fs::file_type::block
                                ? "a device"
                                : "not a regular file";
    fail(ErrorKind::usage, "{}: is {}; kforge writes only regular files (use '-' for stdout)", path.string(), kind);
}

void write_file_atomic(const std::filesystem::path& requested, std::string_view content)
{
    std::filesystem::path path = output_file_target(requested);
    std::filesystem::path tmp = path;
    tmp += fmt::format(".tmp{}", ::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        fail_runtime("{}: cannot write: {}", path.string(), std::strerror(errno));
    size_t done = 0;
    while (done < content.size()) {
        ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            fail_runtime("{}: write failed: {}", path.string(), std::strerror(saved));
        }
        done += static_cast<size_t>(n);
    }
    ::fsync(fd);
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int saved = errno;
        ::unlink(tmp.c_str());
        fail_runtime("{}: cannot rename into place: {}", path.string(), std::strerror(saved));
    }
}

} // namespace kforge
