// try_parse_cbor() (json_reader.hpp): CBOR frames from another process, read without trusting them.
//
// nlohmann's CBOR reader recurses once per nested array, map or tag, so a frame of a million nested
// arrays (a few MB) overflows the stack of whoever decodes it: the controller, for frames from
// its workers. Before handing a frame to nlohmann, one iterative pass walks the items (RFC 8949:
// major type and argument, definite and indefinite lengths) with an explicit stack, refusing
// nesting past k_max_json_depth, truncation and reserved encodings. The walk consumes at least one
// byte per item, so it is linear in the frame whatever the declared lengths say.
#include <cstring>

#include <fmt/format.h>

#include "util/json_reader.hpp"

namespace kforge {
namespace {

// Where the walk is: a container with `left` items to read (UINT64_MAX: indefinite, until a break).
struct Open {
    uint64_t left;
    bool indefinite;
    bool is_string; // an indefinite byte or text string: only its own chunks and a break
};

class CborWalk
{
public:
    explicit CborWalk(std::string_view bytes) : m_bytes(bytes) {}

    // "" when the frame is one well-formed item with nothing after it, otherwise why not.
    std::string check()
    {
        std::vector<Open> open;
        bool first = true;
        while (first || !open.empty()) {
            first = false;
            if (m_at >= m_bytes.size())
                return fmt::format("the frame ends inside an item (at byte {})", m_at);
            auto initial = static_cast<uint8_t>(m_bytes[m_at++]);
            int major = initial >> 5;
            int info = initial & 31;
            if (initial == 0xff) { // break
                if (open.empty() || !open.back().indefinite)
                    return fmt::format("a break byte outside an indefinite-length item (at byte {})", m_at - 1);
                open.pop_back();
                finish_item(open);
                continue;
            }
            if (!open.empty() && open.back().is_string && (major != 2 && major != 3))
                return fmt::format("an indefinite string holds a non-string chunk (at byte {})", m_at - 1);
            uint64_t argument = 0;
            bool indefinite = info == 31;
            if (info >= 28 && info <= 30)
                return fmt::format("a reserved additional-information value {} (at byte {})", info, m_at - 1);
            if (indefinite) {
                if (major == 0 || major == 1 || major == 6 || major == 7)
                    return fmt::format("an indefinite length on major type {} (at byte {})", major, m_at - 1);
            } else if (!read_argument(info, argument)) {
                return fmt::format("the frame ends inside an item's length (at byte {})", m_at);
            }
            switch (major) {
            case 0:
            case 1:
            case 7: finish_item(open); break;
            case 2:
            case 3:
                if (indefinite) {
                    if (!push(open, {UINT64_MAX, true, true}))
                        return depth_problem();
                    break;
                }
                if (m_bytes.size() - m_at < argument)
                    return fmt::format("a string of {} bytes runs past the end of the frame", argument);
                m_at += argument;
                finish_item(open);
                break;
            case 4:
            case 5: {
                uint64_t items = argument;
                if (major == 5 && !indefinite && __builtin_mul_overflow(argument, uint64_t{2}, &items))
                    return "a map with an impossible number of entries";
                if (!push(open, {indefinite ? UINT64_MAX : items, indefinite, false}))
                    return depth_problem();
                if (!indefinite && items == 0) {
                    open.pop_back();
                    finish_item(open);
                }
                break;
            }
            case 6: // a tag: one item follows, nested
                if (!push(open, {1, false, false}))
                    return depth_problem();
                break;
            }
        }
        if (m_at != m_bytes.size())
            return fmt::format("{} bytes follow the frame's item", m_bytes.size() - m_at);
        return "";
    }

private:
    bool read_argument(int info, uint64_t& argument)
    {
        size_t width = info < 24 ? 0 : info == 24 ? 1 : info == 25 ? 2 : info == 26 ? 4 : 8;
        if (width == 0) {
            argument = static_cast<uint64_t>(info);
            return true;
        }
        if (m_bytes.size() - m_at < width)
            return false;
        argument = 0;
        for (size_t i = 0; i < width; ++i)
            argument = argument << 8 | static_cast<uint8_t>(m_bytes[m_at + i]);
        m_at += width;
        return true;
    }

    bool push(std::vector<Open>& open, Open item)
    {
        if (open.size() >= k_max_json_depth)
            return false;
        open.push_back(item);
        return true;
    }

    std::string depth_problem() const
    {
        return fmt::format("items nested more than {} levels deep (at byte {})", k_max_json_depth, m_at);
    }

    // One item of the innermost open container is complete; closes the containers that it fills.
    static void finish_item(std::vector<Open>& open)
    {
        while (!open.empty() && !open.back().indefinite) {
            if (--open.back().left > 0)
                return;
            open.pop_back();
        }
    }

    std::string_view m_bytes;
    size_t m_at = 0;
};

} // namespace

std::optional<Json> try_parse_cbor(std::string_view bytes, std::string& problem)
{
    problem = CborWalk(bytes).check();
    if (!problem.empty())
        return std::nullopt;
    Json value;
    try {
        value = Json::from_cbor(bytes.begin(), bytes.end(), true, false);
    } catch (const Json::exception& e) {
        problem = e.what();
        return std::nullopt;
    }
    if (value.is_discarded()) {
        problem = "not a CBOR value nlohmann/json can represent";
        return std::nullopt;
    }
    return value;
}

} // namespace kforge
