// The operand mapping of every vendor baseline, without a GPU: for every bundled task that names
// one, at every shape, libkforge_vendor.so describes the library calls it would make (sizes,
// leading dimensions, transpose flags, which task tensor goes where: the very values run() passes),
// and these tests replay the BLAS calls on the host with column-major semantics, on the task's
// test shapes, against the task's row-major definition. A swapped operand, a wrong leading
// dimension or transpose flag reads out of bounds or gives a different product here, long before
// the [gpu] tests would see it.
#include "kf_catch.hpp"

#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "evaluator/worker/vendor_baseline.hpp"
#include "util/rng.hpp"
#include "vendor_test_support.hpp"

using namespace kforge;

namespace {

// One described call: "cublasGemmEx transa=N m=4 ..." -> name and key/value pairs.
struct Call {
    std::string name;
    std::map<std::string, std::string> args;
    const std::string& at(const std::string& key) const
    {
        auto it = args.find(key);
        if (it == args.end())
            throw std::invalid_argument(fmt::format("{} has no {}", name, key));
        return it->second;
    }
    int64_t integer(const std::string& key) const { return std::stoll(at(key)); }
};

std::vector<Call> parse_calls(const std::string& text)
{
    std::vector<Call> calls;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find("; ", start);
        std::istringstream in(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
        Call call;
        in >> call.name;
        for (std::string word; in >> word;) {
            size_t eq = word.find('=');
            if (eq != std::string::npos)
                call.args[word.substr(0, eq)] = word.substr(eq + 1);
        }
        calls.push_back(std::move(call));
        start = end == std::string::npos ? text.size() : end + 2;
    }
    return calls;
}

// Host copies of the task's tensors, by name; every access is bounds-checked.
class HostTensors
{
public:
    void add(const std::string& name, uint64_t count, uint64_t seed)
    {
        std::vector<double>& data = m_data[name];
        data.resize(count);
        for (uint64_t i = 0; i < count; ++i)
            data[i] = static_cast<double>(splitmix64(seed * 1000003 + i) % 2001) / 1000.0 - 1.0;
    }
    double& at(const std::string& name, int64_t index)
    {
        auto it = m_data.find(name);
        if (it == m_data.end())
            throw std::out_of_range(fmt::format("the call names '{}', which is no tensor of the task", name));
        if (index < 0 || static_cast<uint64_t>(index) >= it->second.size())
            throw std::out_of_range(fmt::format("the call reads or writes '{}' at {}, outside its {} elements", name,
                                                index, it->second.size()));
        return it->second[static_cast<size_t>(index)];
    }
    std::vector<double>& operator[](const std::string& name) { return m_data.at(name); }

private:
    std::map<std::string, std::vector<double>> m_data;
};

// op(X)[i, j] of a column-major X with leading dimension ld.
double op_element(HostTensors& host, const std::string& name, const std::string& op, int64_t ld, int64_t i, int64_t j)
{
    return op == "N" ? host.at(name, i + j * ld) : host.at(name, j + i * ld);
}

// Column-major BLAS semantics of the described calls.
void replay(const std::vector<Call>& calls, HostTensors& host)
{
    for (const Call& c : calls) {
        if (c.name == "cublasGemmEx") {
            int64_t m = c.integer("m"), n = c.integer("n"), k = c.integer("k");
            for (int64_t j = 0; j < n; ++j)
                for (int64_t i = 0; i < m; ++i) {
                    double sum = 0;
                    for (int64_t l = 0; l < k; ++l)
                        sum += op_element(host, c.at("A"), c.at("transa"), c.integer("lda"), i, l) *
                               op_element(host, c.at("B"), c.at("transb"), c.integer("ldb"), l, j);
                    host.at(c.at("C"), i + j * c.integer("ldc")) = sum;
                }
        } else if (c.name == "cublasSgeam") {
            int64_t m = c.integer("m"), n = c.integer("n");
            for (int64_t j = 0; j < n; ++j)
                for (int64_t i = 0; i < m; ++i) {
                    double a = op_element(host, c.at("A"), c.at("transa"), c.integer("lda"), i, j);
                    double b = op_element(host, c.at("B"), c.at("transb"), c.integer("ldb"), i, j);
                    host.at(c.at("C"), i + j * c.integer("ldc")) = std::stod(c.at("alpha")) * a + std::stod(c.at("beta")) * b;
                }
        } else if (c.name == "cudaMemcpyAsync") {
            for (int64_t i = 0; i < c.integer("bytes") / 4; ++i)
                host.at(c.at("dst"), i) = host.at(c.at("src"), i);
        } else if (c.name == "cublasSaxpy") {
            for (int64_t i = 0; i < c.integer("n"); ++i)
                host.at(c.at("y"), i * c.integer("incy")) += std::stod(c.at("alpha")) * host.at(c.at("x"), i * c.integer("incx"));
        } else {
            throw std::invalid_argument("no host replay for " + c.name);
        }
    }
}

// The task's own row-major definition of the output, from the host inputs.
std::vector<double> expected_output(const std::string& routine, HostTensors& host, const Shape& shape, double a)
{
    auto size = [&](const char* s) { return shape.sizes.at(s); };
    std::vector<double> out;
    if (routine == "cublas_sgemm" || routine == "cublas_gemm_bf16") {
        int64_t m = size("M"), n = size("N"), k = size("K");
        bool b_is_n_by_k = routine == "cublas_gemm_bf16"; // C = A B^T
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                double sum = 0;
                for (int64_t l = 0; l < k; ++l)
                    sum += host["A"][i * k + l] * (b_is_n_by_k ? host["B"][j * k + l] : host["B"][l * n + j]);
                out.push_back(sum);
            }
    } else if (routine == "cublas_geam_transpose") {
        int64_t m = size("M"), n = size("N");
        out.resize(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j)
                out[j * m + i] = host["in"][i * n + j];
    } else if (routine == "cublas_saxpy") {
        for (size_t i = 0; i < host["x"].size(); ++i)
            out.push_back(a * host["x"][i] + host["y"][i]);
    }
    return out;
}

const std::map<std::string, std::string> k_output_of = {
    {"cublas_sgemm", "C"}, {"cublas_gemm_bf16", "C"}, {"cublas_geam_transpose", "out"}, {"cublas_saxpy", "z"}};

std::vector<const Shape*> all_shapes(const Task& task)
{
    std::vector<const Shape*> shapes;
    for (const auto* list : {&task.tests, &task.stress, &task.bench, &task.held_out})
        for (const auto& shape : *list)
            shapes.push_back(&shape);
    return shapes;
}

const VendorBindings::Value* find_value(const VendorBindings& b, const std::string& name)
{
    for (const auto& v : b.values)
        if (v.name == name)
            return &v;
    return nullptr;
}

} // namespace

TEST_CASE("every cuBLAS baseline, replayed on the host as described, computes its task's output on the test shapes",
          "[vendor][extended]")
{
    VendorLibrary library(test::vendor_library_file());
    if (!library.available()) {
        CHECK_FALSE(vendor_library_build_note().empty()); // only a build without nvcc may lack it
        return;
    }
    int replayed = 0;
    for (const auto& task : test::tasks_with_vendor_baselines()) {
        for (const auto& routine : task.vendor_baselines) {
            if (!k_output_of.count(routine) || !library.routine_status(routine).empty())
                continue;
            for (const auto& shape : task.tests) {
                int64_t work = 1;
                for (const auto& [symbol, value] : shape.sizes)
                    work *= std::max<int64_t>(value, 1);
                if (work > (int64_t{1} << 25))
                    continue;
                INFO(task.name << " " << routine << " at " << shape.label);
                VendorBindings bindings = bind_vendor_operands(task, shape, test::fake_addresses(task));
                VendorLibrary::Call described = library.describe(routine, bindings);
                INFO(described.text);
                REQUIRE(described.ok);
                HostTensors host;
                uint64_t seed = 1;
                for (const auto& t : bindings.tensors)
                    host.add(t.name, t.count, seed++);
                const VendorBindings::Value* a = find_value(bindings, "a");
                std::vector<double> expected = expected_output(routine, host, shape, a ? a->real_value : 0);
                std::string output = k_output_of.at(routine);
                for (auto& v : host[output])
                    v = std::nan(""); // what the call never writes stays NaN
                try {
                    replay(parse_calls(described.text), host);
                } catch (const std::exception& e) {
                    FAIL("the described call is wrong: " << e.what());
                }
                const std::vector<double>& got = host[output];
                REQUIRE(got.size() == expected.size());
                size_t wrong = 0, first = 0;
                for (size_t i = 0; i < got.size(); ++i)
                    if (!(std::abs(got[i] - expected[i]) <= 1e-9 * (1 + std::abs(expected[i]))) && wrong++ == 0)
                        first = i;
                INFO(wrong << " of " << got.size() << " elements of '" << output << "' differ; first at " << first
                           << ": expected " << expected[first] << ", got " << got[first]);
                CHECK(wrong == 0);
                ++replayed;
            }
        }
    }
    CHECK(replayed >= 10); // every cuBLAS task has at least two small test shapes
}

TEST_CASE("every vendor baseline gets the task's sizes and tensors by name at every shape, bench and held-out "
          "included",
          "[vendor]")
{
    VendorLibrary library(test::vendor_library_file());
    if (!library.available()) {
        CHECK_FALSE(vendor_library_build_note().empty());
        return;
    }
    for (const auto& task : test::tasks_with_vendor_baselines()) {
        for (const auto& routine : task.vendor_baselines) {
            if (!library.routine_status(routine).empty())
                continue;
            for (const Shape* shape : all_shapes(task)) {
                INFO(task.name << " " << routine << " at " << shape->label);
                VendorBindings bindings = bind_vendor_operands(task, *shape, test::fake_addresses(task));
                VendorLibrary::Call described = library.describe(routine, bindings);
                INFO(described.text);
                REQUIRE(described.ok);
                std::vector<Call> calls = parse_calls(described.text);
                const Call& main = calls.back();
                auto size = [&](const char* symbol) { return std::to_string(shape->sizes.at(symbol)); };
                if (main.name == "cublasGemmEx") {
                    // C^T = op(B)^T op(A)^T: cuBLAS's m is the task's N, n its M; C is N-contiguous.
                    CHECK(main.at("m") == size("N"));
                    CHECK(main.at("n") == size("M"));
                    CHECK(main.at("k") == size("K"));
                    CHECK(main.at("A") == "B");
                    CHECK(main.at("B") == "A");
                    CHECK(main.at("ldc") == size("N"));
                    CHECK(main.at("lda") == (task.name == "hgemm_bf16" ? size("K") : size("N")));
                    CHECK(main.at("transa") == (task.name == "hgemm_bf16" ? "T" : "N"));
                    CHECK(main.at("ldb") == size("K"));
                    CHECK(main.at("transb") == "N");
                } else if (main.name == "cublasSgeam") {
                    CHECK(main.at("m") == size("M"));
                    CHECK(main.at("n") == size("N"));
                    CHECK(main.at("lda") == size("N"));
                    CHECK(main.at("ldc") == size("M"));
                    CHECK(main.at("C") == "out");
                    CHECK(main.at("beta") == "0");
                } else if (main.name == "cublasSaxpy") {
                    CHECK(main.at("n") == size("n"));
                    CHECK(main.at("y") == "z");
                    CHECK(calls.front().at("src") == "y");
                    CHECK(calls.front().at("bytes") == std::to_string(4 * shape->sizes.at("n")));
                } else if (main.name == "cusparseSpMV") {
                    const Call& matrix = calls.at(1);
                    CHECK(matrix.at("rows") == size("R"));
                    CHECK(matrix.at("cols") == size("C"));
                    CHECK(matrix.at("nnz") == std::to_string(task.element_count(*task.find_arg("col_idx"), *shape)));
                    CHECK(matrix.at("row_ptr") == "row_ptr");
                    CHECK(main.at("y") == "y");
                    CHECK(calls.front().at("dst") == "y"); // y is zeroed before each run
                } else {
                    // The CUB routines: one item count, the task's n.
                    CHECK(main.name.rfind("cub::", 0) == 0);
                    CHECK(main.at("n") == size("n"));
                }
            }
        }
    }
}
