// The seeded generator: fixed outputs for fixed seeds, so goldens never depend on the platform.
// Expected values come from an independent Python implementation of SplitMix64 seeding and
// xoshiro256** written from Vigna's reference C code (prng.di.unimi.it), and of Marsaglia's
// polar method on top of it (uniform = (x >> 11) * 2^-53).
#include "core/rng.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <set>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_rng {

using attn::Rng;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

TEST_CASE("the integer stream is fixed for a seed", "[rng]") {
    Rng seven(7);
    CHECK(seven.next_u64() == 0xb358faf74ef9765aULL);
    CHECK(seven.next_u64() == 0x475c3d964f482cd2ULL);
    CHECK(seven.next_u64() == 0xd6f1d349952c7996ULL);
    Rng zero(0);
    CHECK(zero.next_u64() == 0x99ec5f36cb75f2b4ULL);
    CHECK(zero.next_u64() == 0xbf6e1f784956452aULL);
}

TEST_CASE("uniform draws are the top 53 bits scaled to [0, 1)", "[rng]") {
    Rng seven(7);
    CHECK(seven.uniform() == 0.7005764821796896);  // exact: a 53-bit integer times a power of two
}

TEST_CASE("normal draws follow the polar method", "[rng]") {
    Rng rng(42);
    // libm's log may differ in the last bit between platforms, hence WithinRel.
    CHECK_THAT(rng.normal(), WithinRel(-0.7262191382447857, 1e-14));
    CHECK_THAT(rng.normal(), WithinRel(-0.21119691823195985, 1e-14));
    CHECK_THAT(rng.normal(), WithinRel(0.2216227015035933, 1e-14));
    CHECK_THAT(rng.normal(), WithinRel(0.5227716877560146, 1e-14));
}

TEST_CASE("normal draws have mean 0 and variance 1", "[rng]") {
    const auto seed = GENERATE(1u, 7u, 123456789u);
    Rng rng(seed);
    const int n = 200000;
    double sum = 0, sum_sq = 0;
    for (int i = 0; i < n; ++i) {
        const double x = rng.normal();
        sum += x;
        sum_sq += x * x;
    }
    const double mean = sum / n, variance = sum_sq / n - mean * mean;
    // standard errors: 1/sqrt(n) = 0.0022 for the mean, sqrt(2/n) = 0.0032 for the variance
    CHECK_THAT(mean, WithinAbs(0.0, 0.012));
    CHECK_THAT(variance, WithinAbs(1.0, 0.016));
}

TEST_CASE("below(n) stays in range and reaches every value", "[rng]") {
    Rng rng(3);
    std::set<std::size_t> seen;
    for (int i = 0; i < 1000; ++i) {
        const auto x = rng.below(7);
        REQUIRE(x < 7);
        seen.insert(x);
    }
    CHECK(seen.size() == 7);
    CHECK_THROWS_AS(rng.below(0), std::invalid_argument);
}

TEST_CASE("different seeds give different streams; the same seed the same", "[rng]") {
    Rng a(1), b(1), c(2);
    const auto va = a.normal_mat(3, 4), vb = b.normal_mat(3, 4), vc = c.normal_mat(3, 4);
    CHECK(va == vb);
    CHECK_FALSE(va == vc);
}


TEST_CASE("a generator made from another's state draws what it would draw next, a spare normal included", "[rng]") {
    attn::Rng g(11);
    for (int k = 0; k < 5; ++k) g.next_u64();
    g.normal();  // the polar method keeps the second of its pair: the state holds it
    const attn::Rng::State saved = g.state();
    CHECK(saved.has_spare);
    attn::Rng copy = attn::Rng::from_state(saved);
    for (int k = 0; k < 4; ++k) CHECK(copy.normal() == g.normal());
    for (int k = 0; k < 4; ++k) CHECK(copy.next_u64() == g.next_u64());
    // and a state without a spare: the next normal is drawn afresh, not the stale spare
    attn::Rng::State other = g.state();
    other.has_spare = false;
    other.spare = 123.0;
    attn::Rng a = attn::Rng::from_state(other), b = attn::Rng::from_state(other);
    const double first = a.normal();
    CHECK(first != 123.0);
    CHECK(first == b.normal());
}

}  // namespace test_rng
