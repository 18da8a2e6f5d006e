#include "rng.hpp"

#include "portable_math.hpp"

#include <cmath>
#include <stdexcept>

namespace attn {

namespace {

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// SplitMix64 (Steele, Lea & Flood 2014): spreads a small seed over 256 bits of state.
std::uint64_t splitmix64(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

Rng::Rng(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& s : state_) s = splitmix64(x);
}

std::uint64_t Rng::next_u64() {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

double Rng::normal() {
    if (has_spare_) {
        has_spare_ = false;
        return spare_;
    }
    double u = 0.0, v = 0.0, s = 0.0;
    do {
        u = 2.0 * uniform() - 1.0;
        v = 2.0 * uniform() - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double factor = std::sqrt(-2.0 * portable::log(s) / s);
    spare_ = v * factor;
    has_spare_ = true;
    return u * factor;
}

std::size_t Rng::below(std::size_t n) {
    if (n == 0) throw std::invalid_argument("Rng::below: n must be positive");
    // Reject the top partial block so every residue is equally likely.
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t x = next_u64();
    while (x >= limit) x = next_u64();
    return static_cast<std::size_t>(x % n);
}

Vec Rng::normal_vec(std::size_t n, double stddev) {
    Vec out = xt::empty<double>({n});
    for (auto& x : out) x = stddev * normal();
    return out;
}

Mat Rng::normal_mat(std::size_t rows, std::size_t cols, double stddev) {
    Mat out = xt::empty<double>({rows, cols});
    for (auto& x : out) x = stddev * normal();
    return out;
}

}  // namespace attn
