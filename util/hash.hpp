// Content hashes (xxHash XXH3, 128 bits) for cache keys and duplicate detection. Not cryptographic:
// nothing here defends against a chosen collision, only against accidental reuse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kforge {

// 32 lowercase hex digits of the XXH3-128 of `data`.
std::string hash_hex(std::string_view data);

// Feeds several parts; each part is length-prefixed so ("ab","c") and ("a","bc") differ.
class Hasher
{
public:
    Hasher();
    ~Hasher();
    Hasher(const Hasher&) = delete;
    Hasher& operator=(const Hasher&) = delete;
    Hasher& add(std::string_view part);
    Hasher& add(int64_t value);
    std::string hex() const;

private:
    void* m_state;
};

// 64-bit hash, for seeds.
uint64_t hash64(std::string_view data, uint64_t seed = 0);

} // namespace kforge
