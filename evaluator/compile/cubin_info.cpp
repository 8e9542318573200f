// Reading a CUBIN's ELF sections; see cubin_info.hpp for why.
//
// The layout used here is the ELF64 one (section headers, a symbol table) plus NVIDIA's `.nv.info`
// attribute stream, a run of entries of a 1-byte format, a 1-byte attribute and a 2-byte field:
// format 1-3 hold their (small) value in that field, format 4 ("SVAL") is followed by that many
// bytes. EIATTR_REGCOUNT (0x2f) and EIATTR_FRAME_SIZE (0x11) are SVALs of (symbol index, value)
// pairs in the file-wide `.nv.info`; EIATTR_MAX_THREADS (0x05) is an SVAL of x, y, z in a kernel's
// own `.nv.info.<kernel>`, and so is EIATTR_KPARAM_INFO (0x17), one per parameter: a 32-bit index,
// a 16-bit ordinal, a 16-bit offset into the parameter bank and a 32-bit word whose bits 18-31 are
// the parameter's size in bytes (checked against nvcc's own output for char, short, int, pointer,
// double and 3- and 16-byte structs). Entries with other attributes are skipped by their length, so a newer
// toolkit that adds attributes does not break the reader; one with an unknown format ends the
// walk of that section. A CUBIN that has a `.nv.shared.reserved.*` section (sm_90 ones do) starts
// each kernel's shared window with the 1 KiB the driver reserves per block; ptxas does not count it
// in its "bytes smem", and neither does this reader.
#include "evaluator/compile/cubin_info.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>

#include "util/hash.hpp"

namespace kforge {
namespace {

constexpr uint32_t k_section_nobits = 8;
constexpr uint32_t k_section_symtab = 2;
constexpr uint8_t k_attr_max_threads = 0x05;
constexpr uint8_t k_attr_kparam_info = 0x17;
constexpr uint8_t k_attr_frame_size = 0x11;
constexpr uint8_t k_attr_regcount = 0x2f;
constexpr uint8_t k_format_sval = 4;
constexpr uint64_t k_reserved_smem_bytes = 1024; // cudaDevAttrReservedSharedMemoryPerBlock on sm_80+

struct Section {
    std::string name;
    uint32_t type = 0;
    uint64_t flags = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
    uint32_t link = 0;
    std::string_view bytes;             // empty for NOBITS sections
};

template <typename T>
std::optional<T> read_at(std::string_view data, uint64_t offset)
{
    if (offset > data.size() || data.size() - offset < sizeof(T))
        return std::nullopt;
    T value;
    std::memcpy(&value, data.data() + offset, sizeof(T));
    return value;
}

std::string_view c_string_at(std::string_view table, uint64_t offset)
{
    if (offset >= table.size())
        return {};
    std::string_view rest = table.substr(offset);
    return rest.substr(0, std::min(rest.find('\0'), rest.size()));
}

// The section table, or a problem. Only little-endian ELF64 is accepted (all CUBINs are).
std::vector<Section> read_sections(std::string_view elf, std::string& problem)
{
    if (elf.size() < 64 || elf.substr(0, 4) != "\x7f" "ELF" || elf[4] != 2 || elf[5] != 1) {
        problem = "not a 64-bit little-endian ELF file";
        return {};
    }
    auto table = read_at<uint64_t>(elf, 0x28);
    auto entry_size = read_at<uint16_t>(elf, 0x3a);
    auto count = read_at<uint16_t>(elf, 0x3c);
    auto names_index = read_at<uint16_t>(elf, 0x3e);
    if (!table || !entry_size || !count || !names_index || *entry_size < 64 || *names_index >= *count) {
        problem = "a malformed ELF header";
        return {};
    }
    std::vector<Section> sections;
    std::vector<uint32_t> name_offsets;
    for (uint16_t i = 0; i < *count; ++i) {
        uint64_t at = *table + uint64_t{i} * *entry_size;
        auto name = read_at<uint32_t>(elf, at);
        auto type = read_at<uint32_t>(elf, at + 4);
        auto flags = read_at<uint64_t>(elf, at + 8);
        auto offset = read_at<uint64_t>(elf, at + 24);
        auto size = read_at<uint64_t>(elf, at + 32);
        auto link = read_at<uint32_t>(elf, at + 40);
        if (!name || !type || !flags || !offset || !size || !link) {
            problem = "a section header lies outside the file";
            return {};
        }
        Section s{"", *type, *flags, *offset, *size, *link, {}};
        if (s.type != k_section_nobits) {
            if (s.offset > elf.size() || elf.size() - s.offset < s.size) {
                problem = "a section lies outside the file";
                return {};
            }
            s.bytes = elf.substr(s.offset, s.size);
        }
        sections.push_back(s);
        name_offsets.push_back(*name);
    }
    std::string_view names = sections[*names_index].bytes;
    for (size_t i = 0; i < sections.size(); ++i)
        sections[i].name = std::string(c_string_at(names, name_offsets[i]));
    return sections;
}

bool is_debug_section(const std::string& name)
{
    for (const char* prefix : {".debug", ".nv_debug", ".rel.debug", ".rela.debug", ".rel.nv_debug", ".rela.nv_debug"})
        if (name.rfind(prefix, 0) == 0)
            return true;
    return false;
}

// Symbol names by index, from the first symbol table.
std::vector<std::string> read_symbols(const std::vector<Section>& sections)
{
    std::vector<std::string> names;
    for (const auto& s : sections) {
        if (s.type != k_section_symtab || s.link >= sections.size())
            continue;
        std::string_view strings = sections[s.link].bytes;
        for (uint64_t at = 0; at + 24 <= s.bytes.size(); at += 24)
            names.emplace_back(c_string_at(strings, read_at<uint32_t>(s.bytes, at).value_or(0)));
        break;
    }
    return names;
}

// Calls `visit(attribute, payload)` for each SVAL entry of an .nv.info section.
template <typename Visit>
void walk_attributes(std::string_view info, Visit visit)
{
    uint64_t at = 0;
    while (at + 4 <= info.size()) {
        uint8_t format = static_cast<uint8_t>(info[at]);
        uint8_t attribute = static_cast<uint8_t>(info[at + 1]);
        uint16_t field = read_at<uint16_t>(info, at + 2).value_or(0);
        at += 4;
        if (format == k_format_sval) {
            if (info.size() - at < field)
                return;
            visit(attribute, info.substr(at, field));
            at += field;
        } else if (format < 1 || format > 3) {
            return; // unknown entry format: its length is unknown too
        }
    }
}

} // namespace

CubinReport read_cubin_resources(std::string_view cubin)
{
    CubinReport report;
    std::vector<Section> sections = read_sections(cubin, report.problem);
    if (!report.problem.empty())
        return report;
    std::vector<std::string> symbols = read_symbols(sections);
    std::map<std::string, CubinKernel> by_symbol;
    auto kernel_at = [&](uint32_t index) -> CubinKernel* {
        if (index >= symbols.size() || symbols[index].empty())
            return nullptr;
        CubinKernel& k = by_symbol[symbols[index]];
        k.symbol = symbols[index];
        return &k;
    };
    for (const auto& s : sections) {
        if (s.name == ".nv.info") {
            walk_attributes(s.bytes, [&](uint8_t attribute, std::string_view payload) {
                if ((attribute != k_attr_regcount && attribute != k_attr_frame_size) || payload.size() != 8)
                    return;
                CubinKernel* k = kernel_at(read_at<uint32_t>(payload, 0).value_or(~0u));
                int value = static_cast<int>(read_at<uint32_t>(payload, 4).value_or(0));
                if (k && attribute == k_attr_regcount)
                    k->registers = value;
                else if (k)
                    k->frame_bytes = value;
            });
        }
    }
    bool reserved_smem = std::any_of(sections.begin(), sections.end(),
                                     [](const Section& s) { return s.name.rfind(".nv.shared.reserved.", 0) == 0; });
    for (const auto& s : sections) {
        constexpr std::string_view info_prefix = ".nv.info.", shared_prefix = ".nv.shared.";
        if (s.name.rfind(info_prefix, 0) == 0) {
            auto it = by_symbol.find(s.name.substr(info_prefix.size()));
            if (it == by_symbol.end())
                continue;
            walk_attributes(s.bytes, [&](uint8_t attribute, std::string_view payload) {
                if (attribute != k_attr_max_threads || payload.size() != 12)
                    return;
                int64_t threads = 1;
                for (int d = 0; d < 3; ++d)
                    threads *= read_at<uint32_t>(payload, 4 * d).value_or(0);
                it->second.max_threads = static_cast<int>(std::min<int64_t>(threads, 1 << 30));
            });
        } else if (s.name.rfind(shared_prefix, 0) == 0) {
            uint64_t reserved = reserved_smem && s.size >= k_reserved_smem_bytes ? k_reserved_smem_bytes : 0;
            if (auto it = by_symbol.find(s.name.substr(shared_prefix.size())); it != by_symbol.end())
                it->second.static_smem_bytes = static_cast<int>(s.size - reserved);
        }
    }
    for (auto& [symbol, kernel] : by_symbol)
        if (kernel.registers > 0)
            report.kernels.push_back(kernel);
    if (report.kernels.empty())
        report.problem = "no register counts in .nv.info";
    return report;
}

std::map<std::string, std::vector<uint32_t>> read_cubin_params(std::string_view cubin)
{
    std::map<std::string, std::vector<uint32_t>> out;
    std::string problem;
    std::vector<Section> sections = read_sections(cubin, problem);
    constexpr std::string_view info_prefix = ".nv.info.";
    for (const auto& s : sections) {
        if (s.name.rfind(info_prefix, 0) != 0)
            continue;
        std::map<uint32_t, uint32_t> by_ordinal;
        bool consistent = true;
        walk_attributes(s.bytes, [&](uint8_t attribute, std::string_view payload) {
            if (attribute != k_attr_kparam_info)
                return;
            auto ordinal = read_at<uint16_t>(payload, 4);
            auto flags = read_at<uint32_t>(payload, 8);
            if (payload.size() != 12 || !ordinal || !flags || !by_ordinal.emplace(*ordinal, (*flags >> 18) & 0x3fff).second)
                consistent = false;
        });
        std::vector<uint32_t> sizes;
        for (const auto& [ordinal, size] : by_ordinal) {
            if (ordinal != sizes.size())
                consistent = false;
            sizes.push_back(size);
        }
        if (consistent)
            out[s.name.substr(info_prefix.size())] = std::move(sizes);
    }
    return out;
}

std::string cubin_behaviour_hash(std::string_view cubin)
{
    std::string problem;
    std::vector<Section> sections = read_sections(cubin, problem);
    Hasher hasher;
    if (!problem.empty()) {
        hasher.add("whole").add(cubin);
        return hasher.hex();
    }
    hasher.add("sections");
    for (const auto& s : sections) {
        if (is_debug_section(s.name))
            continue;
        hasher.add(s.name).add(static_cast<int64_t>(s.type)).add(static_cast<int64_t>(s.flags));
        hasher.add(static_cast<int64_t>(s.size)).add(s.bytes);
    }
    return hasher.hex();
}

size_t add_cubin_resources(CompileResult& result, const std::vector<std::string>& kernels)
{
    std::vector<std::string> missing;
    for (const auto& k : kernels)
        if (std::none_of(result.resources.begin(), result.resources.end(), [&](const auto& r) { return r.kernel == k; }) &&
            std::find(missing.begin(), missing.end(), k) == missing.end())
            missing.push_back(k);
    if (missing.empty() || result.cubin.empty())
        return 0;
    CubinReport report = read_cubin_resources(result.cubin);
    size_t added = 0;
    for (const auto& name : missing) {
        auto lowered = result.lowered_names.find(name);
        std::string symbol = lowered == result.lowered_names.end() ? name : lowered->second;
        auto it = std::find_if(report.kernels.begin(), report.kernels.end(),
                               [&](const CubinKernel& k) { return k.symbol == symbol; });
        if (it == report.kernels.end())
            continue;
        KernelResources r;
        r.kernel = name;
        r.registers = it->registers;
        r.stack_frame_bytes = it->frame_bytes;
        r.static_smem_bytes = it->static_smem_bytes;
        r.from_cubin = true;
        result.resources.push_back(r);
        ++added;
    }
    return added;
}

} // namespace kforge
