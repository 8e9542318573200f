// Random numbers whose whole state can be saved and restored.
//
// The search draws every random choice from an Rng whose state lives in the archive, so `resume`
// continues the very sequence an uninterrupted run would have drawn. xoshiro256** (Blackman and
// Vigna) seeded through splitmix64: small, fast, and its state is four integers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kforge {

// One step of splitmix64: a good 64-bit mixing function of its input.
uint64_t splitmix64(uint64_t x);

class Rng
{
public:
    explicit Rng(uint64_t seed = 0x6b666f726765ULL);
    uint64_t next();
    // Uniform in [0, bound); bound > 0.
    uint64_t below(uint64_t bound);
    // Uniform in [0, 1).
    double uniform();
    // Index drawn with probability proportional to weights (all >= 0, at least one > 0).
    size_t weighted(const std::vector<double>& weights);

    // "s0:s1:s2:s3" in hex; restore() accepts what save() wrote and throws std::invalid_argument
    // otherwise.
    std::string save() const;
    static Rng restore(const std::string& state);

private:
    std::array<uint64_t, 4> m_s{};
};

} // namespace kforge
