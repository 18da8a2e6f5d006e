// A portable seeded generator: the same seed gives the same numbers with every
// compiler and standard library. std::normal_distribution and friends are not used
// because their algorithms are implementation-defined (goldens would differ between
// libstdc++, libc++ and MSVC).
//
// Integers: xoshiro256** (Blackman & Vigna 2018), state filled by SplitMix64 from the seed.
// Uniform: the top 53 bits of a draw, scaled to [0, 1).
// Normal: Marsaglia's polar method (Marsaglia & Bray 1964), which needs only log and sqrt.
#pragma once

#include "tensor.hpp"

#include <array>
#include <cstdint>

namespace attn {

class Rng {
public:
    explicit Rng(std::uint64_t seed);

    std::uint64_t next_u64();
    double uniform();                      // in [0, 1)
    double uniform(double lo, double hi);  // in [lo, hi)
    double normal();                       // mean 0, variance 1
    std::size_t below(std::size_t n);      // in [0, n), n > 0, without modulo bias

    // Tensors of independent N(0, stddev^2) draws, filled in row-major order.
    Vec normal_vec(std::size_t n, double stddev = 1.0);
    Mat normal_mat(std::size_t rows, std::size_t cols, double stddev = 1.0);

    // The generator's whole state, for a training run saved and resumed (a checkpoint): a generator
    // made from_state(g.state()) draws what g would draw next, bit for bit.
    struct State {
        std::array<std::uint64_t, 4> words{};
        bool has_spare = false;
        double spare = 0.0;
    };
    State state() const { return {state_, has_spare_, spare_}; }
    static Rng from_state(const State& s) {
        Rng g(0);
        g.state_ = s.words;
        g.has_spare_ = s.has_spare;
        g.spare_ = s.spare;
        return g;
    }

private:
    std::array<std::uint64_t, 4> state_{};
    bool has_spare_ = false;  // the polar method yields normals in pairs
    double spare_ = 0.0;
};

}  // namespace attn
