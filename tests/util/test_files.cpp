// Reading and writing files named by users: only regular files are read (never /dev/zero, a FIFO
// or a directory), within a size bound; writes never replace a FIFO or a device.
#include "kf_catch.hpp"

#include <fstream>

#include <sys/stat.h>

#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

std::string file_read_error(const std::filesystem::path& path, uint64_t limit = k_max_read_bytes)
{
    try {
        read_file(path, limit, "task spec");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        return e.what();
    }
    return "";
}

std::string file_write_error(const std::filesystem::path& path)
{
    try {
        write_file_atomic(path, "text");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::usage);
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("read_file refuses devices, FIFOs and directories without reading them", "[util][files][hostile]")
{
    TempDir dir;
    CHECK_THAT(file_read_error("/dev/zero"), Catch::Contains("/dev/zero: cannot read task spec: it is not a regular file"));
    CHECK_THAT(file_read_error(dir.path()), Catch::Contains("it is a directory"));
    auto fifo = dir / "fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    // Opening a FIFO for reading would wait for a writer; it is refused at once instead.
    CHECK_THAT(file_read_error(fifo), Catch::Contains("not a regular file"));
    CHECK_THAT(file_read_error(dir / "missing.json"), Catch::Contains("No such file or directory"));
}

TEST_CASE("read_file refuses a file over its limit, naming both sizes", "[util][files][hostile]")
{
    TempDir dir;
    write_text(dir / "big.json", std::string(5000, ' '));
    CHECK_THAT(file_read_error(dir / "big.json", 4096), Catch::Contains("is 5000 bytes; kforge reads at most 4096 bytes"));
    CHECK(read_file(dir / "big.json", 5000).size() == 5000);
}

TEST_CASE("writes refuse FIFOs, devices and directories and leave them as they are", "[util][files][hostile]")
{
    TempDir dir;
    auto fifo = dir / "out.fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THAT(file_write_error(fifo), Catch::Contains("is a FIFO; kforge writes only regular files"));
    CHECK(std::filesystem::is_fifo(fifo));
    CHECK_THAT(file_write_error("/dev/full"), Catch::Contains("/dev/full: is a device"));
    CHECK(std::filesystem::is_character_file("/dev/full"));
    CHECK_THAT(file_write_error(dir.path()), Catch::Contains("is a directory"));
    std::filesystem::create_symlink(dir / "nowhere", dir / "dangling");
    CHECK_THAT(file_write_error(dir / "dangling"), Catch::Contains("a symbolic link to nothing"));
}

TEST_CASE("writes replace a regular file, and through a link write the file it leads to", "[util][files]")
{
    TempDir dir;
    write_text(dir / "real.cu", "old");
    std::filesystem::create_symlink(dir / "real.cu", dir / "link.cu");
    write_file_atomic(dir / "link.cu", "new");
    CHECK(std::filesystem::is_symlink(dir / "link.cu"));
    CHECK(slurp_file(dir / "real.cu") == "new");
    write_file_atomic(dir / "fresh.cu", "made");
    CHECK(slurp_file(dir / "fresh.cu") == "made");
}
