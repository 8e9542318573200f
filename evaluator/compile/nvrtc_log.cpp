// Reading NVRTC logs: host-path scrubbing, trimming for a model, and the ptxas resource report.
//
// The ptxas report (CUDA 13.0, -Xptxas=-v) names each entry function, then its properties:
//   ptxas info    : Compiling entry function 'softmax_ref' for 'sm_90a'
//   ptxas info    : Function properties for softmax_ref
//   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 48 registers, used 1 barriers, 2048 bytes smem
// Non-entry functions that were not inlined get their own "Function properties" paragraph, which
// is not a kernel and is skipped. Older ptxas versions print the properties line without the dot
// and add "N bytes cmem[B]" to the "Used" line; both forms parse. Fixtures: tests/fixtures/nvrtc.
#include "evaluator/compile/nvrtc_log.hpp"

#include <regex>
#include <vector>

#include <fmt/format.h>

#include "evaluator/compile/compile.hpp"
#include "evaluator/compile/prelude.hpp"
#include "util/text.hpp"

namespace kforge {

namespace {

std::vector<std::vector<std::string>> split_paragraphs(std::string_view log)
{
    std::vector<std::vector<std::string>> paragraphs;
    std::vector<std::string> current;
    for (auto& line : split(log, '\n')) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (trim(line).empty()) {
            if (!current.empty())
                paragraphs.push_back(std::move(current));
            current.clear();
        } else {
            current.push_back(std::move(line));
        }
    }
    if (!current.empty())
        paragraphs.push_back(std::move(current));
    return paragraphs;
}

std::string join_paragraphs(const std::vector<std::vector<std::string>>& paragraphs)
{
    std::string out;
    for (const auto& p : paragraphs) {
        if (!out.empty())
            out += '\n';
        out += join(p, "\n") + "\n";
    }
    return out;
}

// Absolute paths with at least two components, standing at a word start.
std::string scrub_paths(const std::string& line, const std::vector<std::string>& toolkit_roots)
{
    std::string text = line;
    for (const auto& root : toolkit_roots)
        text = replace_all(text, root + "/", "<cuda>/include/");
    static const std::regex path(R"((^|[\s"'(=])((?:/[A-Za-z0-9_.+\-]+){2,}))");
    std::string out;
    size_t last = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), path); it != std::sregex_iterator(); ++it) {
        const auto& m = *it;
        out.append(text, last, static_cast<size_t>(m.position(2)) - last);
        std::string full = m[2].str();
        out += full.substr(full.rfind('/') + 1);
        last = static_cast<size_t>(m.position(2) + m.length(2));
    }
    out.append(text, last);
    return out;
}

std::vector<std::string> toolkit_roots()
{
    std::vector<std::string> roots;
    try {
        auto dirs = toolkit_include_dirs();
        std::filesystem::path include = dirs.back();
        roots.push_back(include.string());
        std::error_code ec;
        auto real = std::filesystem::canonical(include, ec);
        if (!ec && real != include)
            roots.push_back(real.string());
    } catch (const std::exception&) {
        // No toolkit: the generic scrub below still removes the folders.
    }
    return roots;
}

bool is_prelude_macro_warning(const std::string& first_line)
{
    static const std::regex re(
        R"re(warning #\d+-D: incompatible redefinition of macro "(INFINITY|NAN|HUGE_VALF|HUGE_VAL)" \(declared at line \d+ of )re" +
        std::string(k_prelude_header_name) + R"(\))");
    return std::regex_search(first_line, re);
}

bool is_error_line(const std::string& line)
{
    static const std::regex re(R"(\(\d+\): (error|catastrophic error|fatal error)\b|^nvrtc: error|^ptxas (error|fatal)|^error\b)");
    return std::regex_search(line, re);
}

bool is_summary_line(const std::string& line)
{
    static const std::regex re(R"(^\d+ (catastrophic )?errors? detected in the compilation of|^Compilation terminated)");
    return std::regex_search(line, re);
}

int parse_int(const std::smatch& m, size_t group) { return std::stoi(m[group].str()); }

} // namespace

std::string sanitize_nvrtc_log(std::string_view log)
{
    std::vector<std::string> roots = toolkit_roots();
    auto paragraphs = split_paragraphs(log);
    std::vector<std::vector<std::string>> kept;
    bool other_warnings = false;
    for (auto& p : paragraphs) {
        if (is_prelude_macro_warning(p.front()))
            continue;
        if (p.front().find(": warning") != std::string::npos)
            other_warnings = true;
        for (auto& line : p)
            line = scrub_paths(line, roots);
        kept.push_back(std::move(p));
    }
    if (!other_warnings)
        std::erase_if(kept, [](const auto& p) { return p.front().rfind("Remark: The warnings can be suppressed", 0) == 0; });
    return join_paragraphs(kept);
}

std::string trim_log_for_model(std::string_view sanitized_log)
{
    std::vector<std::string> errors;
    std::string summary;
    for (const auto& p : split_paragraphs(sanitized_log)) {
        if (is_error_line(p.front()) && p.front().rfind("ptxas", 0) != 0) {
            errors.push_back(join(p, "\n"));
            continue;
        }
        for (const auto& line : p) {
            if (line.rfind("ptxas", 0) == 0 && is_error_line(line))
                errors.push_back(line);
            else if (is_summary_line(line))
                summary += (summary.empty() ? "" : "\n") + line;
        }
    }
    if (errors.empty())
        return truncate_text(trim(sanitized_log), k_max_compile_message_chars);
    std::string out;
    size_t shown = 0;
    for (const auto& e : errors) {
        if (shown == k_max_compile_message_errors ||
            (shown > 0 && out.size() + e.size() > k_max_compile_message_chars))
            break;
        out += truncate_text(e, k_max_compile_message_chars) + "\n\n";
        ++shown;
    }
    if (shown < errors.size())
        out += fmt::format("({} more error{} not shown)\n", errors.size() - shown, errors.size() - shown == 1 ? "" : "s");
    out += summary;
    return trim(out);
}

std::vector<KernelResources> parse_ptxas_report(const std::string& log)
{
    static const std::regex entry(R"(Compiling entry function '([^']+)')");
    static const std::regex properties(R"(Function properties for (\S+))");
    static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    static const std::regex used(R"(Used (\d+) registers)");
    static const std::regex barriers(R"(used (\d+) barriers)");
    static const std::regex smem(R"((\d+) bytes smem)");
    static const std::regex cmem(R"((\d+) bytes cmem\[\d+\])");

    std::vector<KernelResources> out;
    constexpr size_t none = size_t(-1);
    size_t compiling = none;   // the entry whose "Used" line comes next
    size_t described = none;   // the entry whose properties line comes next
    for (const auto& line : split(log, '\n')) {
        std::smatch m;
        if (std::regex_search(line, m, entry)) {
            out.push_back(KernelResources{m[1].str()});
            compiling = out.size() - 1;
            described = none;
        } else if (std::regex_search(line, m, properties)) {
            described = none;
            for (size_t k = 0; k < out.size(); ++k)
                if (out[k].kernel == m[1].str())
                    described = k;
        } else if (std::regex_search(line, m, frame)) {
            if (described != none) {
                out[described].stack_frame_bytes = parse_int(m, 1);
                out[described].spill_store_bytes = parse_int(m, 2);
                out[described].spill_load_bytes = parse_int(m, 3);
            }
        } else if (compiling != none && std::regex_search(line, m, used)) {
            KernelResources& k = out[compiling];
            k.registers = parse_int(m, 1);
            if (std::regex_search(line, m, barriers))
                k.barriers = parse_int(m, 1);
            if (std::regex_search(line, m, smem))
                k.static_smem_bytes = parse_int(m, 1);
            k.const_bytes = 0;
            for (auto it = std::sregex_iterator(line.begin(), line.end(), cmem); it != std::sregex_iterator(); ++it)
                k.const_bytes += std::stoi((*it)[1].str());
        }
    }
    return out;
}

} // namespace kforge
