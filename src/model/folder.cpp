// A model folder's identity: folder.json beside model.json, compared before any step that would
// extract into the folder or resume its suite.
#include "model/folder.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_identity_file = "folder.json";

// What kforge writes in a model folder; --force removes these and nothing else.
constexpr const char* k_written[] = {"regions", "suite",        "kernels",        "model",      "kforge_runtime",
                                     "shim",    "model.json",   "profile.json",   "winners.json", "assembled.json",
                                     k_identity_file};

std::optional<ModelFolderIdentity> read_identity(const fs::path& folder)
{
    std::error_code ec;
    fs::path path = folder / k_identity_file;
    if (!fs::is_regular_file(path, ec))
        return std::nullopt;
    Json doc = Json::parse(read_file(path), nullptr, false);
    auto text = [&](const char* key) {
        return doc.is_object() && doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : "";
    };
    if (!doc.is_object() || text("model_file").empty())
        fail_input("{}: damaged (no model_file); remove the folder or pass --force to start it again", path.string());
    ModelFolderIdentity id;
    id.model_file = text("model_file");
    id.model_hash = text("model_hash");
    id.model_class = text("model_class");
    id.inputs = text("inputs");
    id.init_inputs = text("init_inputs");
    id.sizes = text("sizes");
    if (doc.contains("top") && doc["top"].is_number_integer())
        id.top = doc["top"].get<int>();
    if (doc.contains("min_share") && doc["min_share"].is_number())
        id.min_share = doc["min_share"].get<double>();
    return id;
}

std::string described(const std::string& text)
{
    return text.empty() ? "none" : text;
}

} // namespace

Json ModelFolderIdentity::to_json() const
{
    return {{"model_file", model_file}, {"model_hash", model_hash}, {"model_class", model_class},
            {"inputs", inputs},         {"init_inputs", init_inputs}, {"sizes", sizes},
            {"top", top ? Json(*top) : Json()}, {"min_share", min_share}};
}

std::string ModelFolderIdentity::difference(const ModelFolderIdentity& other) const
{
    std::vector<std::string> out;
    if (model_file != other.model_file)
        out.push_back(fmt::format("the model file ({}, not {})", model_file, other.model_file));
    else if (model_hash != other.model_hash)
        out.push_back(fmt::format("the content of {} (it changed since)", model_file));
    if (model_class != other.model_class || inputs != other.inputs || init_inputs != other.init_inputs)
        out.push_back(fmt::format("the model class and inputs ({} {} {}, not {} {} {})", described(model_class),
                                  described(inputs), init_inputs, described(other.model_class),
                                  described(other.inputs), other.init_inputs));
    if (sizes != other.sizes)
        out.push_back(fmt::format("--sizes ({}, not {})", described(sizes), described(other.sizes)));
    if (top != other.top || min_share != other.min_share)
        out.push_back(fmt::format("the regions chosen (--top {} --min-share {:g}, not --top {} --min-share {:g})",
                                  top ? std::to_string(*top) : "none", min_share,
                                  other.top ? std::to_string(*other.top) : "none", other.min_share));
    return join(out, ", ");
}

ModelFolderIdentity model_folder_identity(const ModelCutOptions& o)
{
    ModelFolderIdentity id;
    std::error_code ec;
    id.model_file = fs::absolute(o.model, ec).lexically_normal().string();
    id.model_hash = hash_hex(read_file(id.model_file));
    id.model_class = o.model_class;
    id.inputs = o.inputs;
    id.init_inputs = o.model_class.empty() ? "" : o.init_inputs;
    id.sizes = o.sizes;
    id.top = o.top;
    id.min_share = o.min_share;
    return id;
}

bool model_folder_holds(const fs::path& folder, const ModelFolderIdentity& identity)
{
    auto held = read_identity(folder);
    return held && held->difference(identity).empty();
}

void prepare_model_folder(const fs::path& folder, const ModelFolderIdentity& identity, bool force)
{
    std::error_code ec;
    auto held = read_identity(folder);
    bool extracted = fs::exists(folder / "model.json", ec);
    std::string differs = held ? held->difference(identity) : extracted ? "an unrecorded model (no folder.json)" : "";
    if (differs.empty())
        return;
    if (!force)
        fail_input("{} holds another extraction: it differs in {}. Name another folder with -o, or pass --force to "
                   "discard what kforge wrote there (regions, suite, kernels, the assembled model) and start again",
                   folder.string(), differs);
    log_info("--force: discarding {}'s extraction ({})", folder.string(), differs);
    for (const char* name : k_written) {
        fs::remove_all(folder / name, ec);
        if (ec)
            fail_runtime("--force: cannot remove {}: {}", (folder / name).string(), ec.message());
    }
    for (const auto& entry : fs::directory_iterator(folder, ec)) // MODEL_kforge.py, the assembled model
        if (entry.path().filename().string().size() > 10 && entry.path().filename().string().ends_with("_kforge.py"))
            fs::remove(entry.path(), ec);
}

void record_model_folder(const fs::path& folder, const ModelFolderIdentity& identity)
{
    write_file_atomic(folder / k_identity_file, identity.to_json().dump(1) + "\n");
}

} // namespace kforge
