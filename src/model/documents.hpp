// The model folder's JSON documents (model.json, winners.json, assembled.json), read back with every
// field the model room uses checked for its type first, so that a damaged or hand-edited document is
// refused naming the file and the field ("model.json: regions[3].count must be a number, got a
// string"), never read into a JSON library exception.
#pragma once

#include <filesystem>
#include <string>

#include "util/json_reader.hpp"

namespace kforge {

enum class ModelDocument {
    model,     // model.json (extract): the regions, their times, the problems written
    winners,   // winners.json (assemble): the regions replaced and why the others were not
    assembled, // assembled.json (the check): matches, the ways timed, the time between kernels
};

// DIR/<the document's file>, parsed and checked; Error(bad_input) naming the file (and the field) when
// it is missing, not JSON or of the wrong shape; `hint` says which step writes it.
Json read_model_document(const std::filesystem::path& folder, ModelDocument which, const std::string& hint);

const char* model_document_name(ModelDocument which);

// The checks alone, for a document already parsed (`file` names it in messages).
void check_model_document(const Json& doc, ModelDocument which, const std::string& file);

} // namespace kforge
