// Which model a model folder holds. A folder is made by one extraction (a model file, its sizes,
// class and inputs, the selection of regions); `optimize` on a folder that holds it resumes, and a
// command naming another model, other sizes or another selection is refused, so that a folder is
// never silently reported as something it is not. DIR/folder.json records it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "model/model.hpp"
#include "util/json_reader.hpp"

namespace kforge {

struct ModelFolderIdentity {
    std::string model_file; // absolute path, as given when extracted
    std::string model_hash; // the file's content
    std::string model_class, inputs, init_inputs, sizes;
    std::optional<int> top;
    double min_share = 0;

    Json to_json() const;
    // What differs from `other`, in words ("the model file (a.py, not b.py)"), or "" when nothing does.
    std::string difference(const ModelFolderIdentity& other) const;
};

ModelFolderIdentity model_folder_identity(const ModelCutOptions& options);

// Before an extraction into `folder`: a folder that holds another model's extraction (folder.json,
// or a model.json without one) is refused (bad input) naming both, unless `force`, which removes
// what kforge wrote there (regions, suite, kernels, the assembled model, the documents) and nothing
// else.
void prepare_model_folder(const std::filesystem::path& folder, const ModelFolderIdentity& identity, bool force);

// Whether `folder` holds an extraction of `identity` (its folder.json says so).
bool model_folder_holds(const std::filesystem::path& folder, const ModelFolderIdentity& identity);

void record_model_folder(const std::filesystem::path& folder, const ModelFolderIdentity& identity);

} // namespace kforge
