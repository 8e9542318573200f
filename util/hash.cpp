// XXH3 compiled inline from the system header, so the binary needs no libxxhash at run time.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/hash.hpp"

#include <fmt/format.h>

namespace kforge {

namespace {
std::string hex128(XXH128_hash_t h) { return fmt::format("{:016x}{:016x}", h.high64, h.low64); }
} // namespace

std::string hash_hex(std::string_view data) { return hex128(XXH3_128bits(data.data(), data.size())); }

Hasher::Hasher() : m_state(XXH3_createState()) { XXH3_128bits_reset(static_cast<XXH3_state_t*>(m_state)); }

Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(m_state)); }

Hasher& Hasher::add(std::string_view part)
{
    uint64_t size = part.size();
    XXH3_128bits_update(static_cast<XXH3_state_t*>(m_state), &size, sizeof size);
    XXH3_128bits_update(static_cast<XXH3_state_t*>(m_state), part.data(), part.size());
    return *this;
}

Hasher& Hasher::add(int64_t value)
{
    return add(std::string_view(reinterpret_cast<const char*>(&value), sizeof value));
}

std::string Hasher::hex() const { return hex128(XXH3_128bits_digest(static_cast<XXH3_state_t*>(m_state))); }

uint64_t hash64(std::string_view data, uint64_t seed) { return XXH3_64bits_withSeed(data.data(), data.size(), seed); }

} // namespace kforge
