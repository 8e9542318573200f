// The emulator's data for PyTorch-program tasks; see torch_data.hpp.
//
// The reference process is the one the GPU worker keeps (python/kforge_torch/reference.py, through
// evaluator/worker/torch_reference.cpp, compiled into this tool): setup on the "cpu" device, then
// one `prepare expected` per shape and input set, which makes the inputs exactly as get_inputs()
// does, builds the model from get_init_inputs() and writes inputs, parameters and the fp64 outputs
// (rounded to each output's dtype) into one file per tensor. The files are read into the
// emulator's canaried buffers; nothing else about the program is known here, so a kernel is judged
// against the program itself, as on the GPU.
#include "torch_data.hpp"

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "util/rng.hpp"

namespace {

std::vector<unsigned char> read_bytes(const std::filesystem::path& path, size_t bytes)
{
    std::vector<unsigned char> data(bytes);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes)))
        throw std::runtime_error("cannot read " + std::to_string(bytes) + " bytes of " + path.string());
    return data;
}

void create_file(const std::filesystem::path& path, size_t bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        throw std::runtime_error("cannot create " + path.string());
    if (bytes > 0) {
        out.seekp(static_cast<std::streamoff>(bytes - 1));
        out.put('\0');
    }
}

} // namespace

uint64_t program_input_seed(const Shape& shape, uint64_t secret, int trial)
{
    return splitmix64(splitmix64(shape.seed) ^ splitmix64(secret + 0x9e37 * static_cast<uint64_t>(trial + 1)));
}

ProgramData prepare_program_data(TorchReference& reference, const Task& task, const Shape& shape, uint64_t input_seed,
                                 const std::filesystem::path& scratch)
{
    std::filesystem::create_directories(scratch);
    TensorLocations locations;
    std::map<std::string, std::filesystem::path> files;
    for (const auto& arg : task.args) {
        if (!arg.is_tensor)
            continue;
        auto bytes = static_cast<uint64_t>(task.element_count(arg, shape)) * dtype_size(arg.dtype);
        std::filesystem::path path = scratch / (arg.name + ".bin");
        create_file(path, bytes);
        TensorLocation location;
        location.file = path.string();
        location.bytes = bytes;
        locations[arg.name] = location;
        files[arg.name] = path;
    }
    Json reply = reference.prepare(shape, input_seed, ProgramOutputs::expected, locations);

    ProgramData data;
    data.precision = reply.value("precision", "");
    data.note = reply.value("note", "");
    for (const auto& arg : task.args) {
        if (!arg.is_tensor)
            continue;
        int64_t count = task.element_count(arg, shape);
        auto bytes = read_bytes(files.at(arg.name), static_cast<size_t>(count) * dtype_size(arg.dtype));
        if (arg.intent == Intent::out) {
            Buffer expected = make_buffer(arg.dtype, count, 0);
            std::memcpy(expected.data(), bytes.data(), bytes.size());
            data.expected[arg.name] = buffer_values(expected);
            data.buffers[arg.name] = make_buffer(arg.dtype, count, 0xFF); // NaN / 0xFF... poison
        } else {
            Buffer input = make_buffer(arg.dtype, count, 0);
            std::memcpy(input.data(), bytes.data(), bytes.size());
            data.buffers[arg.name] = std::move(input);
        }
        std::filesystem::remove(files.at(arg.name));
    }
    return data;
}
