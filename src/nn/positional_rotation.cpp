// The rotation behind the sinusoidal encoding (see nn/positional.hpp).
#include "nn/positional.hpp"

#include "core/portable_math.hpp"

namespace attn::nn {

Mat offset_rotation(std::size_t d, std::size_t k) {
    if (d == 0 || d % 2 != 0)
        throw ShapeError("offset rotation: the width d must be even and positive, got " + std::to_string(d));
    Mat R = xt::zeros<double>({d, d});
    for (std::size_t i = 0; i < d / 2; ++i) {
        // the angle of pair i grows by k w_i over k positions: sin(a + b) = cos(b) sin(a) + sin(b) cos(a),
        // cos(a + b) = -sin(b) sin(a) + cos(b) cos(a)
        const double b = static_cast<double>(k) / portable::pow10000(static_cast<double>(2 * i) / static_cast<double>(d));
        const double c = portable::cos(b), s = portable::sin(b);
        R(2 * i, 2 * i) = c;
        R(2 * i, 2 * i + 1) = s;
        R(2 * i + 1, 2 * i) = -s;
        R(2 * i + 1, 2 * i + 1) = c;
    }
    return R;
}

}  // namespace attn::nn
