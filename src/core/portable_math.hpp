// exp, expm1, log, tanh, sigmoid, sin and cos built from IEEE additions, multiplications and
// divisions in a fixed order, so that they give the same bits on every x86-64 machine, with GCC
// and Clang. glibc's versions of these functions are picked at load time for the processor (with
// and without FMA), and the picks disagree in the last bit for a few inputs in a thousand: a
// number that a lesson records must never pass through them. Accuracy: within 2 ulp of the true
// value on the domains below (tests/test_portable_math.cpp measures it against glibc).
// Every function is inline so that a loop over a row can vectorise it; compile with
// -ffp-contract=off (the project does), since a fused multiply-add would round differently.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace attn::portable {

namespace detail {

inline double from_bits(std::uint64_t bits) {
    double x = 0;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

inline std::uint64_t to_bits(double x) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &x, sizeof x);
    return bits;
}

// 1.5 * 2^52: adding it to a double of magnitude below 2^51 rounds that double to an integer,
// which then sits in the low bits of the sum.
constexpr double round_shifter = 6755399441055744.0;

// ln 2 split as fdlibm splits it (e_exp.c): the head has 21 trailing zero bits, so k * ln2_hi is
// exact for |k| < 2^21.
constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;

// x = k ln2 + r with k = round(x / ln2) and |r| <= ln2 / 2 (Cody & Waite 1980; fdlibm e_exp.c):
// x - k ln2_hi is exact, and k ln2_lo is the small rest. `shifted` holds k in its low bits.
// For x in [-746, 710] or NaN.
struct ReducedByLn2 {
    double shifted, k, r;
};
inline ReducedByLn2 reduce_by_ln2(double x) {
    constexpr double log2e = 1.4426950408889634;
    const double shifted = x * log2e + round_shifter;
    const double k = shifted - round_shifter;
    return {shifted, k, (x - k * ln2_hi) - k * ln2_lo};
}

// (exp(r) - 1 - r) / r^2 = 1/2! + r/3! + ... + r^11/13! for |r| <= ln2 / 2, in Horner form: the
// Taylor series of exp after its first two terms; `higher` is the Horner value of the terms above
// r^13 (0 for exp, whose first term left out, |r|^14 / 14! < 5e-18, is a twentieth of an ulp;
// 1/14! for expm1, whose result can be as small as r, so it keeps one term more).
inline double exp_series_tail(double r, double higher) {
    double p = higher * r + 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    return p * r + 0.5;
}

// p 2^k, for k held in the low bits of `shifted` (reduce_by_ln2): k taken from those bits (an unsigned
// offset avoids shifting a negative number), then 2^k1 and 2^k2 (k1 = floor(k / 2)) from exponent
// fields k1 + 1023 and k2 + 1023, each a normal double for k in [-1076, 1024]: the first product is
// exact and the second rounds once, to a subnormal, to 0 or to +inf, as the true value does.
inline double times_power_of_two(double p, double shifted) {
    const std::uint64_t k_plus_2048 = to_bits(shifted) - to_bits(round_shifter) + 2048;  // in [972, 3072]
    const std::uint64_t k1_plus_1023 = (k_plus_2048 >> 1) - 1;                           // floor(k / 2) + 1023
    const std::uint64_t k2_plus_1023 = k_plus_2048 - (k_plus_2048 >> 1) - 1;             // k - floor(k / 2) + 1023
    return p * from_bits(k1_plus_1023 << 52) * from_bits(k2_plus_1023 << 52);
}

}  // namespace detail

// x clamped to [-746, 710], the domain of exp_of_clamped: -inf gives 0 and +inf gives +inf there.
// A NaN fails both comparisons and stays NaN. A function of its own so that a vectorised loop can
// clamp a whole row first (with the comparisons inside it, GCC would not vectorise the exp).
inline double exp_input(double x) {
    constexpr double lowest = -746.0, highest = 710.0;
    x = x < lowest ? lowest : x;
    return x > highest ? highest : x;
}

// exp(x) for x in [-746, 710] or NaN: no calls, no table, no branches, so a loop of it vectorises.
// 1. x = k ln2 + r with |r| <= ln2 / 2 (detail::reduce_by_ln2).
// 2. exp(r) by its Taylor polynomial of degree 13 in Horner form (detail::exp_series_tail).
//    0 * r + 1/13! there is exactly 1/13! for every r this sees, so nothing rounds differently.
// 3. exp(x) = exp(r) 2^k, the power built from its exponent bits, in two halves 2^k1 2^k2
//    (k1 = floor(k / 2)), each a normal double: the first product is exact and the second rounds
//    once, to a subnormal, to 0 or to +inf, as the true value does.
inline double exp_of_clamped(double x) {
    // 1. reduction
    const detail::ReducedByLn2 red = detail::reduce_by_ln2(x);
    const double shifted = red.shifted, r = red.r;
    // 2. exp(r) = 1 + r + r^2 (1/2! + r/3! + ... + r^11/13!)
    double p = detail::exp_series_tail(r, 0.0);
    p = p * r + 1.0;
    p = p * r + 1.0;
    // 3. exp(r) 2^k
    return detail::times_power_of_two(p, shifted);
}

// e^x for every double: exp(-inf) = 0, exp(+inf) = +inf, exp(NaN) = NaN.
inline double exp(double x) { return exp_of_clamped(exp_input(x)); }

// e^x - 1 for every double, accurate also where e^x is close to 1 (|x| small), where exp(x) - 1
// would lose the digits of x: e^x - 1 = 2^k (e^r - 1) + (2^k - 1), with e^r - 1 from its series.
inline double expm1(double x) {
    if (std::isnan(x)) return x;
    if (x > 709.0) return exp(x);   // 2^k - 1 would overflow before e^x does
    if (x < -40.0) return -1.0;     // e^x < 2^-57: within half an ulp of -1
    const detail::ReducedByLn2 red = detail::reduce_by_ln2(x);
    const double k = red.k;
    const double em = red.r + (red.r * red.r) * detail::exp_series_tail(red.r, 1.0 / 87178291200.0);  // e^r - 1
    if (k == 0.0) return em;
    const double two_k = std::ldexp(1.0, static_cast<int>(k));  // exact: k in [-58, 1023]
    return two_k * em + (two_k - 1.0);
}

// Natural logarithm: log(+0) = -inf, log(x < 0) = NaN, log(+inf) = +inf (fdlibm e_log.c):
// x = 2^k m with sqrt(2)/2 < m <= sqrt(2), f = m - 1 (exact), s = f / (2 + f), and
// log(1 + f) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R(s^2)), R a polynomial of degree 7 in s^2.
inline double log(double x) {
    constexpr double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
                     Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
                     Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                     Lg7 = 1.479819860511658591e-01;
    constexpr double sqrt_half = 0.70710678118654752440;
    if (std::isnan(x) || x < 0.0) return std::numeric_limits<double>::quiet_NaN();
    if (x == 0.0) return -std::numeric_limits<double>::infinity();
    if (x == std::numeric_limits<double>::infinity()) return x;
    int k = 0;
    double m = std::frexp(x, &k);  // x = m 2^k, m in [0.5, 1): exact, also for subnormal x
    if (m < sqrt_half) {
        m *= 2.0;
        --k;
    }
    const double f = m - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s, w = z * z;
    const double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    const double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    const double R = t2 + t1;
    const double half_f_squared = 0.5 * f * f;
    const double dk = static_cast<double>(k);
    return dk * detail::ln2_hi - ((half_f_squared - (s * (half_f_squared + R) + dk * detail::ln2_lo)) - f);
}

// Hyperbolic tangent (fdlibm s_tanh.c): tanh(x) = -t / (t + 2) with t = expm1(-2|x|) below 1,
// 1 - 2 / (e^{2|x|} + 1) above, the sign of x put back; tanh(+-inf) = +-1.
inline double tanh(double x) {
    if (std::isnan(x)) return x;
    const double a = std::fabs(x);
    double z = 0.0;
    if (a > 22.0)
        z = 1.0;  // 1 - tanh(22) < 2^-62
    else if (a < 0x1p-28)
        return x;  // tanh x = x - x^3/3 + ..., and x^3/3 is below half an ulp of x
    else if (a >= 1.0)
        z = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    else {
        const double t = expm1(-2.0 * a);
        z = -t / (t + 2.0);
    }
    return x < 0.0 ? -z : z;
}

// The logistic sigmoid 1 / (1 + e^{-x}).
inline double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

namespace detail {

// sin(r + t) and cos(r + t) for |r| <= pi/4 (a little more after rounding) and |t| at rounding
// level of r, by the Taylor polynomials of sin r and cos r (the first terms left out, r^19/19! and
// r^20/20!, are below 1e-19) and the first-order terms of t: cos(r) t and -sin(r) t (fdlibm's
// k_sin.c and k_cos.c do the same). t carries what the reduction x - n pi/2 rounded away.
inline double sin_reduced(double r, double t) {
    const double z = r * r;
    double p = -1.0 / 121645100408832000.0;
    p = p * z + 1.0 / 355687428096000.0;
    p = p * z - 1.0 / 1307674368000.0;
    p = p * z + 1.0 / 6227020800.0;
    p = p * z - 1.0 / 39916800.0;
    p = p * z + 1.0 / 362880.0;
    p = p * z - 1.0 / 5040.0;
    p = p * z + 1.0 / 120.0;
    p = p * z - 1.0 / 6.0;
    return r + ((r * z) * p + t * (1.0 - 0.5 * z));
}

inline double cos_reduced(double r, double t) {
    const double z = r * r;
    double p = 1.0 / 2432902008176640000.0;
    p = p * z - 1.0 / 6402373705728000.0;
    p = p * z + 1.0 / 20922789888000.0;
    p = p * z - 1.0 / 87178291200.0;
    p = p * z + 1.0 / 479001600.0;
    p = p * z - 1.0 / 3628800.0;
    p = p * z + 1.0 / 40320.0;
    p = p * z - 1.0 / 720.0;
    p = p * z + 1.0 / 24.0;
    // 1 - z/2 rounds; (1 - w) - z/2 is its rounding error, exactly (fdlibm k_cos.c), added back
    const double half_z = 0.5 * z, w = 1.0 - half_z;
    return w + (((1.0 - w) - half_z) + ((z * z) * p - r * t));
}

// The largest |x| sin and cos take: n = round(x / (pi/2)) below 2^19, so n times each 33-bit
// piece of pi/2 is exact and the reduction loses nothing.
constexpr double largest_angle = 823549.0;  // 2^19 pi/2, rounded down

// x = n pi/2 + r + t with |r| <= pi/4 and t the part of r below r's last bit: pi/2 in four pieces
// (fdlibm e_rem_pio2.c's pio2_1, pio2_2, pio2_3 of 33 bits each and the rest pio2_3t).
// x - n pio2_1 is exact; so is the rounding error of the next subtraction, which goes into t.
inline double reduce_half_pi(double x, double& t, std::uint64_t& quadrant) {
    if (!(std::fabs(x) <= largest_angle))
        throw std::domain_error("portable sin/cos: an angle beyond +-823549 (2^19 pi/2) or not finite");
    constexpr double two_over_pi = 6.36619772367581382433e-01;
    const double pio2_1 = from_bits(0x3FF921FB54400000ULL), pio2_2 = from_bits(0x3DD0B4611A600000ULL),
                 pio2_3 = from_bits(0x3BA3198A2E000000ULL), pio2_3t = from_bits(0x397B839A252049C1ULL);
    const double n = (x * two_over_pi + round_shifter) - round_shifter;
    const double w = x - n * pio2_1;
    const double y = w - n * pio2_2;
    const double rest = (((w - y) - n * pio2_2) - n * pio2_3) - n * pio2_3t;
    const double r = y + rest;
    t = (y - r) + rest;
    quadrant = static_cast<std::uint64_t>(static_cast<std::int64_t>(n)) & 3u;
    return r;
}

}  // namespace detail

// sin x and cos x for |x| <= 823549 (throws std::domain_error beyond, and for inf and NaN).
inline double sin(double x) {
    if (x == 0.0) return x;  // +0 or -0, as IEEE 754 asks
    std::uint64_t q = 0;
    double t = 0.0;
    const double r = detail::reduce_half_pi(x, t, q);
    switch (q) {
        case 0: return detail::sin_reduced(r, t);
        case 1: return detail::cos_reduced(r, t);
        case 2: return -detail::sin_reduced(r, t);
        default: return -detail::cos_reduced(r, t);
    }
}

inline double cos(double x) {
    std::uint64_t q = 0;
    double t = 0.0;
    const double r = detail::reduce_half_pi(x, t, q);
    switch (q) {
        case 0: return detail::cos_reduced(r, t);
        case 1: return -detail::sin_reduced(r, t);
        case 2: return -detail::cos_reduced(r, t);
        default: return detail::sin_reduced(r, t);
    }
}

namespace detail {

// a b = hi + lo exactly, with hi = a b rounded (Dekker 1971, with Veltkamp's splitting of each
// factor into two halves of 26 bits, whose products are exact): no fused multiply-add needed.
// For |a b| below 2^996, where the splitting cannot overflow.
inline void two_product(double a, double b, double& hi, double& lo) {
    constexpr double splitter = 134217729.0;  // 2^27 + 1
    const double ca = splitter * a, a_hi = ca - (ca - a), a_lo = a - a_hi;
    const double cb = splitter * b, b_hi = cb - (cb - b), b_lo = b - b_hi;
    hi = a * b;
    lo = (((a_hi * b_hi - hi) + a_hi * b_lo) + a_lo * b_hi) + a_lo * b_lo;
}

}  // namespace detail

// 10000^e, the base of the positional encoding's frequencies (Vaswani et al. 2017, section 3.5),
// for |e| <= 64, within 1 ulp: 2^(e log2 10000) with e log2 10000 carried in two doubles, so that
// its rounding (which exp(e log 10000) would multiply by up to 9.2) costs nothing.
inline double pow10000(double e) {
    if (!(std::fabs(e) <= 64.0)) throw std::domain_error("portable pow10000: an exponent beyond +-64");
    // log2(10000) = 13.28771237954944939148127771795756..., as head + tail
    constexpr double log2_hi = 0x1.a934f0979a371p+3, log2_lo = 0x1.7f2495fb7fa6dp-51;
    constexpr double ln2 = 0.69314718055994530942;
    double p_hi = 0.0, p_lo = 0.0;
    detail::two_product(e, log2_hi, p_hi, p_lo);
    p_lo += e * log2_lo;
    const double k = (p_hi + detail::round_shifter) - detail::round_shifter;  // the nearest integer
    const double r = (p_hi - k) + p_lo;  // p_hi - k is exact; |r| <= 1/2 and a little
    // 2^r = e^(r ln 2): rounding r ln 2 costs at most 2^-54 of r ln2 <= 0.35, invisible in the result
    return std::ldexp(exp(r * ln2), static_cast<int>(k));
}

}  // namespace attn::portable
