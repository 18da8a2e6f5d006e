// Exercise softmax: a numerically stable softmax.
// Checked by lesson 1 (bottleneck), step [decoder]: the word probabilities P = softmax(S W_o^T)
// must match the golden file. Later lessons use it for every attention weight.
//
// Task: write both functions (declared in src/nn/softmax.hpp):
//
//   alpha_i = exp(e_i - m) / sum_k exp(e_k - m),   m = max_k e_k
//
// softmax takes one vector of logits; softmax_rows takes a T_q x T_k matrix and applies the
// same to each row on its own (each row of the result sums to 1).
// Subtracting the largest logit m changes nothing mathematically, since it cancels between
// numerator and denominator, but it keeps exp() from overflowing: exp(710) is already inf.
// Later lessons also rely on: an entry of -inf (masked) gets weight exactly 0, and a row that
// is -inf everywhere gets all zeros rather than 0/0 = NaN.
//
// Then: meson compile -C build attn-student && build/attn-student check softmax
#include "nn/softmax.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

Vec softmax([[maybe_unused]] const Vec& logits) { throw ExerciseNotDone("softmax"); }

Mat softmax_rows([[maybe_unused]] const Mat& logits) { throw ExerciseNotDone("softmax"); }

}  // namespace attn::nn
