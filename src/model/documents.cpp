// Shape checks of the model folder's documents. Each check lists the fields the C++ side reads
// (report, assemble, optimize) with the type it needs; optional fields may be absent or null. The
// documents are written by kforge itself (python/kforge_torch/model and src/model), so a failed check
// means a damaged, truncated or hand-edited file: bad input, named.
#include "model/documents.hpp"

#include <fmt/format.h>

#include "util/error.hpp"
#include "util/text.hpp"

namespace kforge {
namespace {

namespace fs = std::filesystem;

enum class Kind { string, number, boolean, array, object };

const char* kind_name(Kind k)
{
    switch (k) {
    case Kind::string: return "a string";
    case Kind::number: return "a number";
    case Kind::boolean: return "true or false";
    case Kind::array: return "a list";
    case Kind::object: return "an object";
    }
    return "?";
}

const char* json_kind(const Json& v)
{
    if (v.is_null())
        return "null";
    if (v.is_string())
        return "a string";
    if (v.is_boolean())
        return "a boolean";
    if (v.is_number())
        return "a number";
    if (v.is_array())
        return "a list";
    return "an object";
}

bool is(const Json& v, Kind k)
{
    switch (k) {
    case Kind::string: return v.is_string();
    case Kind::number: return v.is_number();
    case Kind::boolean: return v.is_boolean();
    case Kind::array: return v.is_array();
    case Kind::object: return v.is_object();
    }
    return false;
}

// Checks fields of one object; `where` is its path in the document ("regions[3]").
class Fields
{
public:
    Fields(const Json& object, std::string file, std::string where)
        : m_object(object), m_file(std::move(file)), m_where(std::move(where))
    {
        if (!object.is_object())
            fail_input("{}: {} must be an object, got {}", m_file, m_where.empty() ? "the document" : m_where,
                       json_kind(object));
    }

    // A field that must be there, of `kind`.
    const Json& need(const char* key, Kind kind) const
    {
        if (!m_object.contains(key) || m_object[key].is_null())
            fail_input("{}: {} is missing", m_file, path(key));
        return check(key, kind);
    }

    // A field that may be absent or null; when there, of `kind`. Returns null when absent.
    const Json& may(const char* key, Kind kind) const
    {
        static const Json null_json;
        if (!m_object.contains(key) || m_object[key].is_null())
            return null_json;
        return check(key, kind);
    }

    // Every element of an array field (already checked), each of `kind`.
    void each(const char* key, Kind kind) const
    {
        const Json& list = m_object.contains(key) ? m_object[key] : Json();
        if (!list.is_array())
            return;
        for (size_t i = 0; i < list.size(); ++i)
            if (!is(list[i], kind))
                fail_input("{}: {}[{}] must be {}, got {}", m_file, path(key), i, kind_name(kind), json_kind(list[i]));
    }

    // Every value of an object field (already checked), each of `kind` or null.
    void values(const char* key, Kind kind) const
    {
        const Json& map = m_object.contains(key) ? m_object[key] : Json();
        if (!map.is_object())
            return;
        for (const auto& [name, value] : map.items())
            if (!value.is_null() && !is(value, kind))
                fail_input("{}: {}.{} must be {}, got {}", m_file, path(key), name, kind_name(kind), json_kind(value));
    }

    std::string path(const std::string& key) const { return m_where.empty() ? key : m_where + "." + key; }
    const std::string& file() const { return m_file; }

private:
    const Json& check(const char* key, Kind kind) const
    {
        const Json& v = m_object[key];
        if (!is(v, kind))
            fail_input("{}: {} must be {}, got {}", m_file, path(key), kind_name(kind), json_kind(v));
        return v;
    }

    const Json& m_object;
    std::string m_file, m_where;
};

void check_model(const Json& doc, const std::string& file)
{
    Fields top(doc, file, "");
    top.need("model", Kind::string);
    top.may("measured", Kind::boolean);
    top.may("regions_total", Kind::number);
    top.may("total_s", Kind::number);
    top.may("size_symbols", Kind::object);
    top.values("size_symbols", Kind::number);
    top.may("size_notes", Kind::array);
    top.each("size_notes", Kind::string);
    top.may("sizes_given", Kind::object);
    const Json& timing = top.may("timing", Kind::object);
    if (timing.is_object()) {
        Fields t(timing, file, "timing");
        t.may("model_s", Kind::number);
        t.may("compile_s", Kind::number);
        const Json& ops = t.may("operators", Kind::array);
        for (size_t i = 0; i < ops.size(); ++i) {
            Fields op(ops[i], file, fmt::format("timing.operators[{}]", i));
            op.may("op", Kind::string);
            op.may("calls", Kind::number);
            op.may("device_us", Kind::number);
            op.may("share", Kind::number);
            op.may("shapes", Kind::string);
        }
    }
    const Json& regions = top.need("regions", Kind::array);
    for (size_t i = 0; i < regions.size(); ++i) {
        Fields r(regions[i], file, fmt::format("regions[{}]", i));
        r.need("id", Kind::string);
        r.may("key", Kind::string);
        r.may("kind", Kind::string);
        r.may("count", Kind::number);
        r.may("share", Kind::number);
        r.may("rank", Kind::number);
        r.may("time_s", Kind::number);
        r.may("estimate_s", Kind::number);
        r.may("flops", Kind::number);
        r.may("bytes", Kind::number);
        r.may("problem", Kind::string);
        r.may("selected", Kind::boolean);
        r.may("why_not", Kind::string);
        r.may("attrs", Kind::array);
        r.each("attrs", Kind::string);
        r.may("modules", Kind::array);
        r.each("modules", Kind::string);
    }
}

void check_winners(const Json& doc, const std::string& file)
{
    Fields top(doc, file, "");
    const Json& winners = top.need("winners", Kind::array);
    for (size_t i = 0; i < winners.size(); ++i) {
        Fields w(winners[i], file, fmt::format("winners[{}]", i));
        w.need("problem", Kind::string);
        w.need("loader", Kind::string);
        w.may("speedup_eager", Kind::number);
        w.may("speedup_compile", Kind::number);
        w.may("best_time_ns", Kind::number);
        w.may("checks", Kind::array);
    }
    const Json& considered = top.may("considered", Kind::array);
    for (size_t i = 0; i < considered.size(); ++i) {
        Fields c(considered[i], file, fmt::format("considered[{}]", i));
        c.need("problem", Kind::string);
        c.need("outcome", Kind::string);
        c.may("speedup_eager", Kind::number);
        c.may("speedup_compile", Kind::number);
    }
}

void check_assembled(const Json& doc, const std::string& file)
{
    Fields top(doc, file, "");
    top.may("matches", Kind::boolean);
    top.may("mode", Kind::string);
    top.may("device", Kind::string);
    top.may("replaced", Kind::array);
    top.each("replaced", Kind::string);
    for (const char* key : {"eager_s", "compile_s", "assembled_s", "assembled_compile_s", "assembled_kernels_s",
                            "iterations", "rounds"})
        top.may(key, Kind::number);
    top.may("assembled_compile_error", Kind::string);
    top.may("times", Kind::object);
    top.values("times", Kind::number);
    top.may("kernels_s", Kind::object);
    top.values("kernels_s", Kind::number);
    top.may("build_errors", Kind::object);
    top.values("build_errors", Kind::string);
    top.may("matches_by_way", Kind::object);
    top.values("matches_by_way", Kind::boolean);
    const Json& under = top.may("under_compile", Kind::object);
    if (under.is_object()) {
        Fields u(under, file, "under_compile");
        u.may("kept", Kind::array);
        u.each("kept", Kind::string);
        u.may("trials", Kind::array);
        u.may("error", Kind::string);
    }
}

} // namespace

const char* model_document_name(ModelDocument which)
{
    switch (which) {
    case ModelDocument::model: return "model.json";
    case ModelDocument::winners: return "winners.json";
    case ModelDocument::assembled: return "assembled.json";
    }
    return "?";
}

void check_model_document(const Json& doc, ModelDocument which, const std::string& file)
{
    switch (which) {
    case ModelDocument::model: check_model(doc, file); break;
    case ModelDocument::winners: check_winners(doc, file); break;
    case ModelDocument::assembled: check_assembled(doc, file); break;
    }
}

Json read_model_document(const fs::path& folder, ModelDocument which, const std::string& hint)
{
    fs::path path = folder / model_document_name(which);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        fail_input("{}: no {}{}", folder.string(), model_document_name(which), hint.empty() ? "" : " (" + hint + ")");
    Json document = Json::parse(read_file(path), nullptr, false);
    if (document.is_discarded())
        fail_input("{}: not JSON (damaged or truncated){}", path.string(), hint.empty() ? "" : "; " + hint);
    check_model_document(document, which, path.string());
    return document;
}

} // namespace kforge
