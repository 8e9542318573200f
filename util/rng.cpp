// xoshiro256** with splitmix64 seeding; see the header.
#include "util/rng.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "util/text.hpp"

namespace kforge {

uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

Rng::Rng(uint64_t seed)
{
    uint64_t x = seed;
    for (auto& word : m_s) {
        x = splitmix64(x);
        word = x;
    }
}

uint64_t Rng::next()
{
    auto rotl = [](uint64_t v, int k) { return (v << k) | (v >> (64 - k)); };
    uint64_t result = rotl(m_s[1] * 5, 7) * 9;
    uint64_t t = m_s[1] << 17;
    m_s[2] ^= m_s[0];
    m_s[3] ^= m_s[1];
    m_s[1] ^= m_s[2];
    m_s[0] ^= m_s[3];
    m_s[2] ^= t;
    m_s[3] = rotl(m_s[3], 45);
    return result;
}

uint64_t Rng::below(uint64_t bound)
{
    // Rejection sampling removes the modulo bias.
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    for (;;) {
        uint64_t v = next();
        if (v < limit)
            return v % bound;
    }
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

size_t Rng::weighted(const std::vector<double>& weights)
{
    double total = 0;
    for (double w : weights)
        total += w > 0 ? w : 0;
    if (total <= 0)
        throw std::invalid_argument("Rng::weighted: no positive weight");
    double pick = uniform() * total;
    for (size_t i = 0; i < weights.size(); ++i) {
        if (weights[i] <= 0)
            continue;
        if (pick < weights[i])
            return i;
        pick -= weights[i];
    }
    for (size_t i = weights.size(); i-- > 0;)
        if (weights[i] > 0)
            return i;
    return 0;
}

std::string Rng::save() const
{
    return fmt::format("{:016x}:{:016x}:{:016x}:{:016x}", m_s[0], m_s[1], m_s[2], m_s[3]);
}

Rng Rng::restore(const std::string& state)
{
    auto parts = split(state, ':');
    if (parts.size() != 4)
        throw std::invalid_argument("bad random-generator state '" + state + "'");
    Rng rng;
    for (size_t i = 0; i < 4; ++i) {
        if (parts[i].size() != 16)
            throw std::invalid_argument("bad random-generator state '" + state + "'");
        rng.m_s[i] = std::stoull(parts[i], nullptr, 16);
    }
    return rng;
}

} // namespace kforge
