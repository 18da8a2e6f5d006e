// The masked softmax, softmax_j(S_ij + M_ij) row by row (see nn/self_attention.hpp).
// The classroom exercise masked-softmax; the student's version is lessons/exercises/masked_softmax.cpp.
#include "nn/self_attention.hpp"

#include "nn/softmax.hpp"

#include <limits>

namespace attn::nn {

Mat masked_softmax(const Mat& scores, const Mat& mask) {
    expect_shape("attention mask", mask, shape_of(scores));
    // S + M, but -inf wherever M is -inf whatever the score: +inf + -inf would be NaN
    const double minus_inf = -std::numeric_limits<double>::infinity();
    Mat masked = xt::empty<double>({scores.shape(0), scores.shape(1)});
    for (std::size_t k = 0; k < scores.size(); ++k)
        masked.data()[k] = mask.data()[k] == minus_inf ? minus_inf : scores.data()[k] + mask.data()[k];
    return softmax_rows(masked);
}

}  // namespace attn::nn
