// The project's own exp, expm1, log, tanh, sigmoid, sin, cos and pow10000 (core/portable_math.hpp),
// measured against the true value: glibc's x87 long double functions (64-bit significands, 11 bits
// more than a double, so their result rounded to double is the correctly rounded value but for
// rare ties). The bounds below are the measured worst cases over a million or more points each;
// where the bound is 1 ulp, our result is one of the two doubles around the true value. The inputs
// come from std::mt19937_64, whose output the C++ standard fixes.
#include "core/portable_math.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_portable_math {

namespace {

namespace portable = attn::portable;

// How many doubles lie between a and b (0 when equal): for doubles of one sign the order of the
// bit patterns is the order of the numbers, so the patterns are mapped onto one line first.
std::uint64_t ulps_apart(double a, double b) {
    const auto line = [](double x) {
        std::int64_t bits = 0;
        std::memcpy(&bits, &x, sizeof x);
        return bits < 0 ? std::numeric_limits<std::int64_t>::min() - bits : bits;
    };
    const std::int64_t la = line(a), lb = line(b);
    return la > lb ? static_cast<std::uint64_t>(la) - static_cast<std::uint64_t>(lb)
                   : static_cast<std::uint64_t>(lb) - static_cast<std::uint64_t>(la);
}

// `count` points spread evenly over [lo, hi] (one at a random place in each of `count` equal
// intervals), then the boundaries themselves.
std::vector<double> spread(double lo, double hi, std::size_t count, std::uint64_t seed) {
    std::mt19937_64 generator(seed);
    std::vector<double> x;
    const double width = (hi - lo) / static_cast<double>(count);
    for (std::size_t i = 0; i < count; ++i) {
        const double u = static_cast<double>(generator() >> 11) * 0x1p-53;
        x.push_back(lo + width * (static_cast<double>(i) + u));
    }
    x.push_back(lo);
    x.push_back(hi);
    return x;
}

// The largest distance in ulp between ours(x) and the true value over the points, with where.
template <class Ours, class Truth>
void check_within(const std::vector<double>& points, Ours ours, Truth truth, std::uint64_t most_ulp) {
    std::uint64_t worst = 0;
    double worst_at = 0.0;
    for (const double x : points) {
        const std::uint64_t apart = ulps_apart(ours(x), static_cast<double>(truth(static_cast<long double>(x))));
        if (apart > worst) {
            worst = apart;
            worst_at = x;
        }
    }
    INFO("largest difference " << worst << " ulp, at x = " << worst_at);
    CHECK(worst <= most_ulp);
}

constexpr std::size_t many = std::size_t{1} << 20;

}  // namespace

TEST_CASE("portable::exp is within 2 ulp of the true value from underflow to overflow", "[portable_math]") {
    const auto ours = [](double x) { return portable::exp(x); };
    const auto truth = [](long double x) { return std::exp(x); };
    check_within(spread(-745.2, 709.79, many, 1), ours, truth, 2);
    check_within(spread(-1.0, 1.0, many, 2), ours, truth, 1);
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(portable::exp(-inf) == 0.0);
    CHECK(portable::exp(inf) == inf);
    CHECK(portable::exp(0.0) == 1.0);
    CHECK(portable::exp(1000.0) == inf);
    CHECK(portable::exp(-1000.0) == 0.0);
    CHECK(std::isnan(portable::exp(std::nan(""))));
    CHECK(portable::exp(-745.0) > 0.0);  // the smallest subnormal, as glibc gives it
}

TEST_CASE("portable::expm1 keeps the digits of small arguments", "[portable_math]") {
    const auto ours = [](double x) { return portable::expm1(x); };
    const auto truth = [](long double x) { return std::expm1(x); };
    check_within(spread(-1e-8, 1e-8, many / 4, 3), ours, truth, 1);
    check_within(spread(-3.0, 3.0, many, 4), ours, truth, 2);
    check_within(spread(-50.0, 709.0, many / 4, 5), ours, truth, 2);
    CHECK(portable::expm1(0.0) == 0.0);
    CHECK(portable::expm1(1e-300) == 1e-300);
    CHECK(portable::expm1(-std::numeric_limits<double>::infinity()) == -1.0);
}

TEST_CASE("portable::log is within 1 ulp of the true value, subnormals included", "[portable_math]") {
    const auto ours = [](double x) { return portable::log(x); };
    const auto truth = [](long double x) { return std::log(x); };
    // the polar method takes log(s) for s in (0, 1): where the generator needs it most
    check_within(spread(1e-300, 1.0, many, 6), ours, truth, 1);
    check_within(spread(0.5, 2.0, many, 7), ours, truth, 1);
    check_within(spread(1.0, 1e300, many / 4, 8), ours, truth, 1);
    check_within(spread(4.9e-324, 1e-307, many / 4, 9), ours, truth, 1);
    CHECK(portable::log(1.0) == 0.0);
    CHECK(portable::log(0.0) == -std::numeric_limits<double>::infinity());
    CHECK(portable::log(-0.0) == -std::numeric_limits<double>::infinity());
    CHECK(std::isnan(portable::log(-1.0)));
    CHECK(std::isnan(portable::log(std::nan(""))));
    CHECK(portable::log(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
}

TEST_CASE("portable::tanh and sigmoid are within 2 ulp of the true value", "[portable_math]") {
    const auto ours = [](double x) { return portable::tanh(x); };
    const auto truth = [](long double x) { return std::tanh(x); };
    check_within(spread(-1.0, 1.0, many, 10), ours, truth, 2);
    check_within(spread(-30.0, 30.0, many, 11), ours, truth, 2);
    check_within(spread(-1e-6, 1e-6, many / 4, 12), ours, truth, 1);
    CHECK(portable::tanh(0.0) == 0.0);
    CHECK(std::signbit(portable::tanh(-0.0)));
    CHECK(portable::tanh(std::numeric_limits<double>::infinity()) == 1.0);
    CHECK(portable::tanh(-std::numeric_limits<double>::infinity()) == -1.0);
    CHECK(portable::tanh(-1.0) == -portable::tanh(1.0));  // odd, exactly
    CHECK(std::isnan(portable::tanh(std::nan(""))));
    const auto sigmoid_truth = [](long double x) { return 1.0L / (1.0L + std::exp(-x)); };
    check_within(spread(-40.0, 40.0, many, 13), [](double x) { return portable::sigmoid(x); }, sigmoid_truth, 2);
    CHECK(portable::sigmoid(0.0) == 0.5);
}

TEST_CASE("portable::sin and cos are within 1 ulp of the true value over the angles of the positional encoding",
          "[portable_math]") {
    const auto sin_ours = [](double x) { return portable::sin(x); };
    const auto sin_truth = [](long double x) { return std::sin(x); };
    const auto cos_ours = [](double x) { return portable::cos(x); };
    const auto cos_truth = [](long double x) { return std::cos(x); };
    for (const auto& [lo, hi, seed] : {std::tuple{-4.0, 4.0, 14}, std::tuple{0.0, 70000.0, 15},
                                       std::tuple{-823549.0, 823549.0, 16}}) {
        INFO("angles in [" << lo << ", " << hi << "]");
        check_within(spread(lo, hi, many / 2, static_cast<std::uint64_t>(seed)), sin_ours, sin_truth, 1);
        check_within(spread(lo, hi, many / 2, static_cast<std::uint64_t>(seed) + 100), cos_ours, cos_truth, 1);
    }
    // the angles of the encoding itself: position p at frequency 1 / 10000^(2i/d)
    std::vector<double> angles;
    for (std::size_t p = 0; p < 4096; p += 7)
        for (std::size_t i = 0; i < 32; ++i) angles.push_back(static_cast<double>(p) / std::pow(10000.0, i / 32.0));
    check_within(angles, sin_ours, sin_truth, 1);
    check_within(angles, cos_ours, cos_truth, 1);
    CHECK(portable::sin(0.0) == 0.0);
    CHECK(portable::cos(0.0) == 1.0);
    CHECK(std::signbit(portable::sin(-0.0)));
    CHECK_THROWS_AS(portable::sin(1e6), std::domain_error);
    CHECK_THROWS_AS(portable::cos(std::numeric_limits<double>::infinity()), std::domain_error);
    CHECK_THROWS_AS(portable::sin(std::nan("")), std::domain_error);
}

TEST_CASE("portable::pow10000 is within 1 ulp for the frequencies of the positional encoding", "[portable_math]") {
    std::vector<double> exponents;
    for (std::size_t d = 2; d <= 1024; d += 2)
        for (std::size_t i = 0; i < d / 2; ++i) exponents.push_back(static_cast<double>(2 * i) / static_cast<double>(d));
    const auto ours = [](double e) { return portable::pow10000(e); };
    const auto truth = [](long double e) { return std::pow(10000.0L, e); };
    check_within(exponents, ours, truth, 1);
    check_within(spread(-64.0, 64.0, many / 4, 17), ours, truth, 1);
    CHECK(portable::pow10000(0.0) == 1.0);
    CHECK(portable::pow10000(1.0) == 10000.0);
    CHECK(portable::pow10000(-2.0) == 1e-8);
    CHECK_THROWS_AS(portable::pow10000(65.0), std::domain_error);
}

}  // namespace test_portable_math
