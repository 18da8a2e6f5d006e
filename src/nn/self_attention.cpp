#include "nn/self_attention.hpp"

#include "nn/kernels.hpp"

namespace attn::nn {

Mat masked_scores(const Mat& scores, const Mat& mask) {
    expect_shape("attention mask", mask, shape_of(scores));
    Mat out = xt::empty<double>({scores.shape(0), scores.shape(1)});
    scale_and_mask_span(scores.data(), 1.0, mask.data(), out.data(), scores.size());
    return out;
}

}  // namespace attn::nn
