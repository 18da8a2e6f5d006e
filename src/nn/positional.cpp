// Sinusoidal positional encoding — Vaswani et al. 2017, section 3.5 (see nn/positional.hpp).
// The classroom exercise positional; the student's version is lessons/exercises/positional.cpp.
#include "nn/positional.hpp"

#include "core/portable_math.hpp"

namespace attn::nn {

Mat sinusoidal_encoding(std::size_t T, std::size_t d) {
    if (d == 0 || d % 2 != 0)
        throw ShapeError("sinusoidal encoding: the width d must be even and positive, got " + std::to_string(d));
    Mat pe = xt::empty<double>({T, d});
    for (std::size_t pos = 0; pos < T; ++pos)
        for (std::size_t i = 0; i < d / 2; ++i) {
            // each pair (2i, 2i+1) turns at its own frequency, from 1 down to 1/10000
            const double angle = static_cast<double>(pos) /
                                 portable::pow10000(static_cast<double>(2 * i) / static_cast<double>(d));
            pe(pos, 2 * i) = portable::sin(angle);
            pe(pos, 2 * i + 1) = portable::cos(angle);
        }
    return pe;
}

}  // namespace attn::nn
