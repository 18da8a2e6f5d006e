// Exercise masked-softmax: the softmax of masked scores, row by row (Vaswani et al. 2017,
// section 3.2.3).
// Checked by lesson 5 (gru-to-attention), step [free-weights]: the weights of all steps at once,
// softmax(X H~^T / sqrt(d) + causal mask), must equal the weights the loop computed step by step.
//
// Task: for scores S (T_q x T_k) and a mask M of the same shape (0 and -inf), return
// (declared in src/nn/self_attention.hpp)
//
//   A_ij = softmax_j(S_ij + M_ij),   each row on its own
//
// A masked entry (M_ij = -inf) must get weight exactly 0 whatever its score, even +inf (+inf +
// -inf is NaN, so set it to -inf rather than adding); a row masked everywhere gets all zeros.
// Throw ShapeError (core/tensor.hpp) when M's shape differs from S's.
// Available: nn::softmax_rows (your exercise softmax: -inf gets weight 0, an all -inf row
// zeros), expect_shape("name", M, shape_of(S)), std::numeric_limits<double>::infinity().
//
// Then: meson compile -C build attn-student && build/attn-student check masked-softmax
#include "nn/self_attention.hpp"

#include "exercises/not_done.hpp"
#include "nn/softmax.hpp"

#include <limits>

namespace attn::nn {

Mat masked_softmax([[maybe_unused]] const Mat& scores, [[maybe_unused]] const Mat& mask) {
    throw ExerciseNotDone("masked-softmax");
}

}  // namespace attn::nn
