// Exercise context: context vectors, the attention-weighted sums of the values
// (Bahdanau et al. 2015, eq. 5).
// Checked by lesson 2 (additive), step [context]: one context vector per target word.
//
// Task: for attention weights A (T_q x T_k, row i is alpha_i) and values H (T_k x d_v, row j
// is h_j), return the T_q x d_v matrix C whose row i is
//
//   c_i = sum_j alpha_ij h_j,   that is   C = A H
//
// (declared in src/nn/attention.hpp). Each c_i is a weighted average of the rows of H, so the
// sum runs over j, the positions being attended to, not over i.
// Available: nn::matmul(A, B, "name") (A B, with a shape check naming it), or plain loops.
//
// Then: meson compile -C build attn-student && build/attn-student check context
#include "nn/attention.hpp"

#include "exercises/not_done.hpp"
#include "nn/linalg.hpp"

namespace attn::nn {

Mat context_vectors([[maybe_unused]] const Mat& weights, [[maybe_unused]] const Mat& values) {
    throw ExerciseNotDone("context");
}

}  // namespace attn::nn
