// Task specs someone hands you: every case of issue 23 gets a clear bad-input error naming the
// file and the field, at `task check` time, in bounded time and memory; nothing outside the
// spec's folder is ever read.
#include "kf_catch.hpp"

#include <functional>

#include <sys/stat.h>

#include "core/task.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

using namespace kforge;
using namespace kforge::test;

namespace {

const std::filesystem::path k_hostile_tasks = source_dir() / "tasks";

Json hostile_softmax_spec() { return Json::parse(read_file(k_hostile_tasks / "softmax_f32.json")); }

// The softmax spec, changed by `mutate`, loaded from the bundled tasks folder: "" or the error.
std::string hostile_error_after(const std::function<void(Json&)>& mutate)
{
    Json spec = hostile_softmax_spec();
    mutate(spec);
    try {
        parse_task(spec.dump(2), "tasks/softmax.json", k_hostile_tasks);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        return e.what();
    }
    return "";
}

std::string hostile_load_error(const std::filesystem::path& path)
{
    try {
        load_task(path);
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::bad_input);
        return e.what();
    }
    return "";
}

// A copy of the softmax task (spec and kernels) in a fresh folder, so files can be moved about.
struct HostileSpecCopy {
    TempDir dir;
    std::filesystem::path spec = dir / "softmax.json";
    HostileSpecCopy()
    {
        std::filesystem::copy(k_hostile_tasks / "softmax_f32", dir / "softmax_f32");
        write(hostile_softmax_spec());
    }
    void write(const Json& json) const { write_text(spec, json.dump(2)); }
};

} // namespace

TEST_CASE("a spec's kernel files must lie in its folder: no absolute paths, no '..', no links out",
          "[core][task][hostile]")
{
    CHECK_THAT(hostile_error_after([](Json& s) { s["reference"] = "../../../../etc/passwd"; }),
               Catch::Contains("tasks/softmax.json: reference: '../../../../etc/passwd' climbs out with '..'"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["reference"] = "/etc/passwd"; }),
               Catch::Contains("reference: '/etc/passwd' is an absolute path"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["seeds"] = {"softmax_f32/../softmax_f32/reference.cu"}; }),
               Catch::Contains("seeds[0]") && Catch::Contains("climbs out with '..'"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["reference"] = ""; }), Catch::Contains("reference: expected a file name"));

    HostileSpecCopy copy;
    std::filesystem::create_symlink("/etc/passwd", copy.dir / "softmax_f32" / "passwd.cu");
    Json spec = hostile_softmax_spec();
    spec["reference"] = "softmax_f32/passwd.cu";
    copy.write(spec);
    CHECK_THAT(hostile_load_error(copy.spec), Catch::Contains("leads outside the spec's folder (to /etc/passwd) through a "
                                                      "symbolic link"));
    // A link that stays inside the folder is fine.
    std::filesystem::create_symlink("reference.cu", copy.dir / "softmax_f32" / "alias.cu");
    spec["reference"] = "softmax_f32/alias.cu";
    copy.write(spec);
    CHECK(hostile_load_error(copy.spec).empty());
}

TEST_CASE("a directory, a device or a FIFO as a spec or kernel file is named as such", "[core][task][hostile]")
{
    CHECK_THAT(hostile_error_after([](Json& s) { s["reference"] = "softmax_f32"; }),
               Catch::Contains("reference: cannot read") && Catch::Contains("it is a directory, not a kernel source"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["seeds"] = {"softmax_f32"}; }),
               Catch::Contains("seeds[0]: cannot read") && Catch::Contains("it is a directory"));
    CHECK_THAT(hostile_load_error("/dev/zero"), Catch::Contains("/dev/zero: cannot read task spec: it is not a regular file"));
    CHECK_THAT(hostile_load_error(k_hostile_tasks), Catch::Contains("cannot read task spec: it is a directory"));
    HostileSpecCopy copy;
    REQUIRE(::mkfifo((copy.dir / "softmax_f32" / "fifo.cu").c_str(), 0600) == 0);
    Json spec = hostile_softmax_spec();
    spec["seeds"] = {"softmax_f32/fifo.cu"};
    copy.write(spec);
    CHECK_THAT(hostile_load_error(copy.spec), Catch::Contains("seeds[0]") && Catch::Contains("not a regular file"));
}

TEST_CASE("an oversized spec or kernel file is refused before it is read", "[core][task][hostile]")
{
    HostileSpecCopy copy;
    write_text(copy.dir / "huge.json", std::string((4 << 20) + 1, ' '));
    CHECK_THAT(hostile_load_error(copy.dir / "huge.json"), Catch::Contains("the task spec is 4194305 bytes; kforge reads at most "
                                                                   "4194304 bytes"));
    write_text(copy.dir / "softmax_f32" / "big.cu", std::string((1 << 20) + 1, ' '));
    Json spec = hostile_softmax_spec();
    spec["seeds"] = {"softmax_f32/big.cu"};
    copy.write(spec);
    CHECK_THAT(hostile_load_error(copy.spec), Catch::Contains("seeds[0]") && Catch::Contains("the kernel source is 1048577 bytes"));
}

TEST_CASE("numbers that cannot be computed on some shape are refused naming the field and the shape",
          "[core][task][hostile]")
{
    CHECK_THAT(hostile_error_after([](Json& s) { s["roofline"]["flops"] = "5 * M * N / (N - N)"; }),
               Catch::Contains("roofline.flops: flops cannot be computed on shapes.tests[0] (M=1,N=1): division by "
                               "zero"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["roofline"]["bytes"] = "0 - M"; }),
               Catch::Contains("roofline.bytes: bytes '0 - M' is -1 on shapes.tests[0]"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["args"][1]["check"]["rtol"] = "1 / (N - N)"; }),
               Catch::Contains("args[1].check.rtol: rtol cannot be computed") && Catch::Contains("division by zero"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["args"][1]["check"]["atol"] = "sqrt(-1)"; }),
               Catch::Contains("args[1].check.atol") && Catch::Contains("sqrt of a negative number"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["args"][1]["check"]["atol"] = "-1e-5"; }),
               Catch::Contains("args[1].check.atol: atol '-1e-5' is -1e-05"));
    // The stand-ins for what only the GPU knows keep honest tolerances honest.
    CHECK(hostile_error_after([](Json& s) { s["args"][1]["check"]["atol"] = "1e-6 * max_abs_ref + 1e-9 * sum_abs_x"; }).empty());
    CHECK_THAT(hostile_error_after([](Json& s) { s["args"][0]["gen"]["plants"].push_back({{"at", "M * N"}, {"value", 1}}); }),
               Catch::Contains("args[0].gen.plants[3].at: 'M * N' = 1 on shapes.tests[0] (M=1,N=1), outside 'x' "
                               "(elements 0 to 0)"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["args"][0]["gen"]["plants"].push_back({{"at", "-1"}, {"value", 1}}); }),
               Catch::Contains("args[0].gen.plants[3].at: '-1' = -1"));
}

TEST_CASE("a default plan that cannot launch on some shape is refused naming default_plan", "[core][task][hostile]")
{
    CHECK_THAT(hostile_error_after([](Json& s) { s["default_plan"]["launches"][0]["block"] = {-256}; }),
               Catch::Contains("tasks/softmax.json: default_plan: launches[0] (softmax)") &&
                   Catch::Contains("block[0] = '-256' = -256, outside 1..1024"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["default_plan"]["launches"][0]["grid"] = {"M / (N - N)"}; }),
               Catch::Contains("default_plan") && Catch::Contains("division by zero"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["default_plan"]["launches"][0]["args"] = {"x", "q", "M", "N"}; }),
               Catch::Contains("default_plan") && Catch::Contains("'q' is not an argument"));
}

TEST_CASE("JSON numbers out of range are bad input naming the file and the field", "[core][task][hostile]")
{
    std::string text = read_file(k_hostile_tasks / "softmax_f32.json");
    auto parse_error = [](const std::string& spec) {
        try {
            parse_task(spec, "tasks/softmax.json", k_hostile_tasks);
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::bad_input);
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK_THAT(parse_error(replace_all(text, "\"std\": 4", "\"std\": 1e400")),
               Catch::Contains("tasks/softmax.json: invalid JSON at args[0].gen.std: the number 1e400 does not fit in a "
                               "double"));
    CHECK_THAT(parse_error(replace_all(text, "\"seed\": 11", "\"seed\": " + std::string(5000, '9'))),
               Catch::Contains("invalid JSON at shapes.tests[0].seed: the number 99999999999999999999... (5000 "
                               "characters)"));
}

TEST_CASE("expressions nested past the limit in a spec are errors naming the field", "[core][task][hostile]")
{
    CHECK_THAT(hostile_error_after([](Json& s) { s["roofline"]["flops"] = std::string(2000, '(').append("M").append(2000, ')'); }),
               Catch::Contains("roofline.flops: nested more than 200 levels deep"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["constraints"] = Json::array();
                   s["constraints"].push_back(std::string(200000, '!').append("M")); }),
               Catch::Contains("constraints[0]: expression of 200001 characters"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["constraints"] = Json::array();
                   s["constraints"].push_back(std::string(3000, '!').append("M")); }),
               Catch::Contains("constraints[0]: nested more than 200 levels deep"));
}

TEST_CASE("forbid patterns are RE2: a backtracking bomb is accepted, syntax RE2 lacks is refused",
          "[core][task][hostile]")
{
    CHECK(hostile_error_after([](Json& s) { s["forbid"].push_back({{"pattern", "((((.*)*)*)*)*QQQ"}, {"reason", "x"}}); }).empty());
    CHECK_THAT(hostile_error_after([](Json& s) { s["forbid"].push_back({{"pattern", "(half)\\1"}, {"reason", "x"}}); }),
               Catch::Contains("forbid[1].pattern: not a valid RE2 regular expression: invalid escape sequence"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["forbid"].push_back({{"pattern", "(?!float)"}, {"reason", "x"}}); }),
               Catch::Contains("forbid[1].pattern: not a valid RE2 regular expression"));
}

TEST_CASE("limits a spec may set are bounded, and so are its shape lists", "[core][task][hostile]")
{
    CHECK_THAT(hostile_error_after([](Json& s) { s["limits"]["max_param_points"] = 100000000; }),
               Catch::Contains("limits.max_param_points: expected 1 to 4096"));
    CHECK_THAT(hostile_error_after([](Json& s) { s["limits"]["max_dynamic_smem"] = -1; }),
               Catch::Contains("limits.max_dynamic_smem"));
    CHECK_THAT(hostile_error_after([](Json& s) {
                   Json many = Json::array();
                   for (int i = 0; i < 1025; ++i)
                       many.push_back({{"M", 1}, {"N", 1}});
                   s["shapes"]["stress"] = many;
               }),
               Catch::Contains("shapes.stress: 1025 shapes; at most 1024 per list"));
}
