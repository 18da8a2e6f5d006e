#include "nn/self_attention.hpp"

#include <limits>

namespace attn::nn {

Mat masked_scores(const Mat& scores, const Mat& mask) {
    const double minus_inf = -std::numeric_limits<double>::infinity();
    expect_shape("attention mask", mask, shape_of(scores));
    Mat out = scores + mask;
    for (std::size_t i = 0; i < out.shape(0); ++i)
        for (std::size_t j = 0; j < out.shape(1); ++j)
            if (mask(i, j) == minus_inf) out(i, j) = minus_inf;
    return out;
}

}  // namespace attn::nn
