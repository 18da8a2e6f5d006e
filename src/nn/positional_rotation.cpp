// The rotation behind the sinusoidal encoding (see nn/positional.hpp). Its entries are those of
// the encoding's row k (sin and cos of k w_i), so it takes them from nn::sinusoidal_encoding, the
// exercise positional (a student's, in attn-student), rather than computing the encoding again.
#include "nn/positional.hpp"

namespace attn::nn {

Mat offset_rotation(std::size_t d, std::size_t k) {
    if (d == 0 || d % 2 != 0)
        throw ShapeError("offset rotation: the width d must be even and positive, got " + std::to_string(d));
    const Mat pe = sinusoidal_encoding(k + 1, d);
    Mat R = xt::zeros<double>({d, d});
    for (std::size_t i = 0; i < d / 2; ++i) {
        // the angle of pair i grows by b = k w_i over k positions: sin(a + b) = cos(b) sin(a) + sin(b) cos(a),
        // cos(a + b) = -sin(b) sin(a) + cos(b) cos(a); PE(k, 2i) = sin(b), PE(k, 2i + 1) = cos(b)
        const double c = pe(k, 2 * i + 1), s = pe(k, 2 * i);
        R(2 * i, 2 * i) = c;
        R(2 * i, 2 * i + 1) = s;
        R(2 * i + 1, 2 * i) = -s;
        R(2 * i + 1, 2 * i + 1) = c;
    }
    return R;
}

}  // namespace attn::nn
