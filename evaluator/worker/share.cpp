// The measuring lock of a shared GPU and its log; see worker/share.hpp for why runs share a GPU and
// what the lock keeps apart.
#include "evaluator/worker/share.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

// Appends `line` with one write(2) on an O_APPEND descriptor. A failure is logged, not thrown: the
// log feeds a statistic, and the measurement it describes is fine.
void append_line(const std::filesystem::path& path, const std::string& line)
{
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        log_warn("{}: cannot open the measuring log: {}", path.string(), std::strerror(errno));
        return;
    }
    ssize_t written = ::write(fd, line.data(), line.size());
    if (written != static_cast<ssize_t>(line.size()))
        log_warn("{}: cannot append to the measuring log: {}", path.string(),
                 written < 0 ? std::strerror(errno) : "short write");
    ::close(fd);
}

bool parse_number(const std::string& text, double& out)
{
    try {
        size_t used = 0;
        out = std::stod(text, &used);
        return used == text.size();
    } catch (const std::logic_error&) {
        return false;
    }
}

} // namespace

double epoch_seconds()
{
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::filesystem::path gpu_share_path(const std::filesystem::path& dir, const std::string& uuid, GpuShareFile file)
{
    switch (file) {
    case GpuShareFile::measure_lock: return dir / (uuid + ".measure.lock");
    case GpuShareFile::search_turn: return dir / (uuid + ".search.lock");
    case GpuShareFile::measuring_log: break;
    }
    return dir / (uuid + ".measuring");
}

std::filesystem::path search_turn_path(const std::filesystem::path& dir, const std::string& uuid, int k)
{
    return k == 0 ? gpu_share_path(dir, uuid, GpuShareFile::search_turn)
                  : dir / fmt::format("{}.search.{}.lock", uuid, k);
}

std::string format_measuring_hold(const MeasuringHold& hold)
{
    return fmt::format("{} {:.6f} {:.6f} {:.6f} {}\n", hold.pid, hold.begin_s, hold.end_s, hold.waited_s, hold.what);
}

std::optional<MeasuringHold> parse_measuring_hold(std::string_view line)
{
    std::vector<std::string> fields = split(trim(line), ' ');
    if (fields.size() != 5)
        return std::nullopt;
    MeasuringHold hold;
    double pid = 0;
    if (!parse_number(fields[0], pid) || !parse_number(fields[1], hold.begin_s) || !parse_number(fields[2], hold.end_s) ||
        !parse_number(fields[3], hold.waited_s))
        return std::nullopt;
    if (pid < 1 || hold.end_s < hold.begin_s || hold.waited_s < 0)
        return std::nullopt;
    hold.pid = static_cast<int64_t>(pid);
    hold.what = fields[4];
    return hold;
}

MeasuringLock::Hold::~Hold()
{
    if (m_owner)
        m_owner->end(*this);
}

MeasuringLock::Hold::Hold(Hold&& other) noexcept
    : m_owner(std::exchange(other.m_owner, nullptr)), m_lock(std::move(other.m_lock)), m_record(std::move(other.m_record))
{
}

void MeasuringLock::configure(const std::filesystem::path& dir, const std::string& uuid, Notice notice)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        fail_runtime("{}: cannot create the folder of the GPU's shared locks: {}", dir.string(), ec.message());
    m_dir = dir;
    m_uuid = uuid;
    m_notice = std::move(notice);
}

MeasuringLock::Hold MeasuringLock::hold(std::string what)
{
    Hold hold;
    if (!configured() || m_depth > 0) {
        ++m_depth;
        hold.m_owner = this; // ends the nesting, holds nothing
        return hold;
    }
    std::filesystem::path path = gpu_share_path(m_dir, m_uuid, GpuShareFile::measure_lock);
    auto asked = std::chrono::steady_clock::now();
    hold.m_lock = FileLock::acquire(path, LockWait::try_once);
    if (!hold.m_lock.held()) {
        if (m_notice)
            m_notice("waiting");
        hold.m_lock = FileLock::acquire(path, LockWait::block);
        if (m_notice)
            m_notice("holding");
    }
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    m_waited_s += waited;
    ++m_depth;
    hold.m_owner = this;
    hold.m_record = MeasuringHold{static_cast<int64_t>(::getpid()), epoch_seconds(), 0, waited, std::move(what)};
    return hold;
}

void MeasuringLock::end(Hold& hold)
{
    --m_depth;
    if (!hold.m_lock.held())
        return;
    hold.m_record.end_s = epoch_seconds();
    // Logged before the lock goes: the next holder's line comes after this one.
    append_line(gpu_share_path(m_dir, m_uuid, GpuShareFile::measuring_log), format_measuring_hold(hold.m_record));
    hold.m_lock.release();
}

double MeasuringLock::take_waited_s()
{
    return std::exchange(m_waited_s, 0.0);
}

} // namespace kforge
