// libkforge_vendor.so and its loader without a GPU: the library loads with no driver, exports its
// C interface, knows the baselines core knows, checks a task's operands by name before touching
// CUDA; the loader says clearly why a library cannot be used.
#include "kf_catch.hpp"

#include <algorithm>
#include <cstdlib>

#include <dlfcn.h>

#include "evaluator/worker/vendor_baseline.hpp"
#include "test_support.hpp"
#include "util/error.hpp"
#include "vendor_test_support.hpp"

using namespace kforge;

namespace {

// C = A B at 16 x 16 x 16, every operand present and right.
VendorBindings sgemm_bindings()
{
    VendorBindings b;
    for (const char* name : {"A", "B", "C"})
        b.tensors.push_back(VendorBindings::Tensor{name, uint64_t{1} << 40 | static_cast<uint64_t>(name[0]) << 20,
                                                   DType::f32, 256});
    for (const char* name : {"M", "N", "K"})
        b.values.push_back(VendorBindings::Value{name, 16, 16.0});
    return b;
}

VendorBindings::Tensor& tensor(VendorBindings& b, const std::string& name)
{
    auto it = std::find_if(b.tensors.begin(), b.tensors.end(), [&](const auto& t) { return t.name == name; });
    REQUIRE(it != b.tensors.end());
    return *it;
}

const VendorBindings::Value* value(const VendorBindings& b, const std::string& name)
{
    auto it = std::find_if(b.values.begin(), b.values.end(), [&](const auto& v) { return v.name == name; });
    return it == b.values.end() ? nullptr : &*it;
}

} // namespace

TEST_CASE("libkforge_vendor.so loads without needing a driver and knows every baseline core knows", "[vendor]")
{
    VendorLibrary library(test::vendor_library_file());
    if (!vendor_library_build_note().empty()) {
        // This build has no nvcc: the loader must say so rather than fail obscurely.
        CHECK_FALSE(library.available());
        CHECK_THAT(library.reason(), Catch::Contains("this kforge was built without it"));
        return;
    }
    INFO(library.reason());
    REQUIRE(library.available());
    std::vector<std::string> names = library.routine_names();
    std::vector<std::string> known = known_vendor_baselines();
    std::sort(names.begin(), names.end());
    std::sort(known.begin(), known.end());
    CHECK(names == known);
    CHECK_THAT(library.versions(), Catch::Contains("CUB ") && Catch::Contains("CUDA runtime"));
    for (const auto& name : known_vendor_baselines()) {
        INFO(name);
        std::string status = library.routine_status(name);
        // Either built in, or left out by configure with the reason.
        CHECK((status.empty() || status.find("this build of libkforge_vendor.so has no") != std::string::npos));
    }
    CHECK_THAT(library.routine_status("cublas_dgemm"), Catch::Contains("not a vendor baseline"));
}

TEST_CASE("the vendor loader says why a library cannot be used: missing, not a library, not kforge's, wrong version",
          "[vendor]")
{
    test::TempDir dir;
    VendorLibrary missing(dir / "libkforge_vendor.so");
    CHECK_FALSE(missing.available());
    CHECK_THAT(missing.reason(), Catch::Contains((dir / "libkforge_vendor.so").string() + " not found"));

    test::write_text(dir / "garbage.so", "this is not an ELF file\n");
    VendorLibrary garbage(dir / "garbage.so");
    CHECK_FALSE(garbage.available());
    CHECK_THAT(garbage.reason(), Catch::Contains("cannot be loaded"));

    Dl_info info{};
    REQUIRE(::dladdr(reinterpret_cast<void*>(&::fopen), &info) != 0);
    VendorLibrary libc(info.dli_fname);
    CHECK_FALSE(libc.available());
    CHECK_THAT(libc.reason(), Catch::Contains("is not kforge's vendor library") &&
                                  Catch::Contains("kforge_vendor_abi_version"));
    // An unavailable library refuses everything with its reason instead of calling anything.
    VendorBaseline baseline = libc.prepare("cublas_sgemm", sgemm_bindings());
    CHECK_FALSE(baseline.ready());
    CHECK(baseline.problem() == libc.reason());
    CHECK(baseline.run(nullptr).find("not prepared") != std::string::npos);

    if (vendor_library_build_note().empty()) {
        VendorLibrary other_version(test::vendor_library_file(), 999);
        CHECK_FALSE(other_version.available());
        CHECK_THAT(other_version.reason(), Catch::Contains("where this kforge needs 999"));
    }
}

TEST_CASE("the vendor library is found through KFORGE_VENDOR_LIB, else beside the running binary", "[vendor]")
{
    ::setenv("KFORGE_VENDOR_LIB", "/opt/elsewhere/libkforge_vendor.so", 1);
    CHECK(vendor_library_path() == "/opt/elsewhere/libkforge_vendor.so");
    ::unsetenv("KFORGE_VENDOR_LIB");
    auto beside = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "libkforge_vendor.so";
    CHECK(vendor_library_path() == beside);
}

TEST_CASE("vendor operands carry the task's tensors, scalars and sizes by name", "[vendor]")
{
    Task axpy = load_task(test::source_dir() / "tasks" / "axpy_f32.json");
    const Shape& shape = axpy.bench.front();
    auto addresses = test::fake_addresses(axpy);
    VendorBindings b = bind_vendor_operands(axpy, shape, addresses);
    int64_t n = shape.sizes.at("n");
    for (const char* name : {"x", "y", "z"}) {
        INFO(name);
        CHECK(tensor(b, name).device_ptr == addresses.at(name));
        CHECK(tensor(b, name).count == static_cast<uint64_t>(n));
        CHECK(tensor(b, name).dtype == DType::f32);
    }
    REQUIRE(value(b, "a") != nullptr);
    CHECK(value(b, "a")->real_value == Approx(1.7));
    REQUIRE(value(b, "n") != nullptr);
    CHECK(value(b, "n")->int_value == n);
    // The size symbol n is passed once, as the scalar argument of the same name.
    CHECK(std::count_if(b.values.begin(), b.values.end(), [](const auto& v) { return v.name == "n"; }) == 1);

    Task spmv = load_task(test::source_dir() / "tasks" / "spmv_csr_f32.json");
    VendorBindings s = bind_vendor_operands(spmv, spmv.bench.front(), test::fake_addresses(spmv));
    REQUIRE(value(s, "SKEW") != nullptr); // a size symbol that is no argument still comes as a value
    CHECK(value(s, "SKEW")->int_value == spmv.bench.front().sizes.at("SKEW"));

    addresses.erase("y");
    CHECK_THROWS_AS(bind_vendor_operands(axpy, shape, addresses), Error);
}

TEST_CASE("every bundled task that names a vendor baseline gives its routine the operands it needs, at every shape",
          "[vendor]")
{
    VendorLibrary library(test::vendor_library_file());
    std::vector<Task> tasks = test::tasks_with_vendor_baselines();
    CHECK(tasks.size() == 8);
    for (const auto& task : tasks) {
        auto addresses = test::fake_addresses(task);
        std::vector<const Shape*> shapes;
        for (const auto* list : {&task.tests, &task.bench, &task.held_out, &task.stress})
            for (const auto& shape : *list)
                shapes.push_back(&shape);
        for (const auto* shape : shapes) {
            VendorBindings bindings = bind_vendor_operands(task, *shape, addresses);
            for (const auto& routine : task.vendor_baselines) {
                INFO(task.name << " " << routine << " at " << shape->label);
                std::string problem = library.check(routine, bindings);
                if (library.available())
                    CHECK(problem == "");
                else
                    CHECK_THAT(problem, Catch::Contains("not found"));
            }
        }
    }
}

TEST_CASE("a vendor routine refuses operands that do not fit, naming the operand, before touching CUDA", "[vendor]")
{
    VendorLibrary library(test::vendor_library_file());
    if (!library.available()) {
        CHECK_THAT(library.check("cublas_sgemm", sgemm_bindings()), Catch::Contains("not found"));
        return;
    }
    if (!library.routine_status("cublas_sgemm").empty())
        return; // configure found no cuBLAS; the status test above covers the message
    CHECK(library.check("cublas_sgemm", sgemm_bindings()) == "");

    VendorBindings no_a = sgemm_bindings();
    no_a.tensors.erase(no_a.tensors.begin());
    CHECK_THAT(library.check("cublas_sgemm", no_a), Catch::Contains("cublas_sgemm: the task has no tensor 'A'"));
    // prepare checks the operands first, so it fails the same way without initialising CUDA.
    VendorBaseline baseline = library.prepare("cublas_sgemm", no_a);
    CHECK_FALSE(baseline.ready());
    CHECK_THAT(baseline.problem(), Catch::Contains("no tensor 'A'"));

    VendorBindings bf16 = sgemm_bindings();
    tensor(bf16, "A").dtype = DType::bf16;
    CHECK_THAT(library.check("cublas_sgemm", bf16), Catch::Contains("tensor 'A' is bf16, the routine needs f32"));

    VendorBindings short_c = sgemm_bindings();
    tensor(short_c, "C").count = 255;
    CHECK_THAT(library.check("cublas_sgemm", short_c), Catch::Contains("'C' has 255 elements where the sizes give 256"));

    VendorBindings no_k = sgemm_bindings();
    no_k.values.pop_back();
    CHECK_THAT(library.check("cublas_sgemm", no_k), Catch::Contains("no size or scalar 'K'"));

    VendorBindings huge = sgemm_bindings();
    huge.values[0].int_value = int64_t{1} << 31;
    CHECK_THAT(library.check("cublas_sgemm", huge), Catch::Contains("M = 2147483648 is outside"));

    CHECK_THAT(library.check("cublas_dgemm", sgemm_bindings()), Catch::Contains("not a vendor baseline"));

    // Without a driver, preparing right operands fails with the CUDA runtime's own reason.
    if (!test::gpu_unavailable_reason().empty()) {
        VendorBaseline no_gpu = library.prepare("cublas_sgemm", sgemm_bindings());
        CHECK_FALSE(no_gpu.ready());
        CHECK_THAT(no_gpu.problem(), Catch::Contains("cudaFree(nullptr) failed"));
    }
}
