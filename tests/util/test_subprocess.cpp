// Children over framed pipes: round trips, deadlines, crashes, large frames.
#include "kf_catch.hpp"

#include <chrono>

#include "test_support.hpp"
#include "util/subprocess.hpp"

using namespace kforge;

namespace {
// The test binary doubles as the child: main() serves echo requests when given this flag.
Subprocess spawn_echo()
{
    SpawnSpec spec;
    spec.executable = self_executable();
    spec.args = {"--kforge-test-echo-child"};
    return Subprocess::spawn(spec);
}
} // namespace

TEST_CASE("a child answers framed requests, including large binary frames", "[util][subprocess]")
{
    Subprocess child = spawn_echo();
    REQUIRE(child.send("hello"));
    std::string reply;
    REQUIRE(child.receive(reply, std::chrono::seconds(10)) == ReceiveStatus::ok);
    CHECK(reply == "echo:hello");
    std::string big(5 << 20, '\0');
    for (size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>(i * 31);
    REQUIRE(child.send(big));
    REQUIRE(child.receive(reply, std::chrono::seconds(10)) == ReceiveStatus::ok);
    CHECK(reply == "echo:" + big);
}

TEST_CASE("a child that hangs past the deadline is reported as a timeout and can be killed", "[util][subprocess]")
{
    Subprocess child = spawn_echo();
    REQUIRE(child.send("sleep"));
    std::string reply;
    auto begin = std::chrono::steady_clock::now();
    CHECK(child.receive(reply, std::chrono::milliseconds(300)) == ReceiveStatus::timeout);
    CHECK(std::chrono::steady_clock::now() - begin < std::chrono::seconds(60)); // at its deadline, not the hang's hour
    child.kill();
    CHECK_FALSE(child.running());
    CHECK_THAT(child.exit_description(), Catch::Contains("signal 9"));
}

TEST_CASE("a child that crashes is reported as closed with its signal", "[util][subprocess]")
{
    Subprocess child = spawn_echo();
    REQUIRE(child.send("crash"));
    std::string reply;
    CHECK(child.receive(reply, std::chrono::seconds(10)) == ReceiveStatus::closed);
    CHECK_THAT(child.exit_description(), Catch::Contains("signal 11") || Catch::Contains("signal 6"));
    CHECK_FALSE(child.send("anyone?"));
}
