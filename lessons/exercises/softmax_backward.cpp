// Exercise softmax-backward: the backward pass of the softmax, and its Jacobian.
// Checked by lesson 8 (backprop), step [softmax-backward]: the Jacobian J of one row and the
// gradient dS that reaches the scores must match the golden file.
//
// Task: write both functions (declared in src/nn/backward.hpp). For p = softmax(s),
//
//   J = diag(p) - p p^T,          J_jk = dp_j / ds_k                 (softmax_jacobian, T x T)
//
// and for a matrix P = softmax_rows(S) and the gradient dP = dL/dP arriving at it,
//
//   dS = P * (dP - D 1^T),        D_i = sum_j P_ij dP_ij              (softmax_rows_backward)
//
// where * is elementwise: row i of dS is J(p_i) applied to row i of dP, without forming J.
// Where P_ij = 0 (a masked entry) write dS_ij = 0 exactly (not -0).
//
// Then: meson compile -C build attn-student && build/attn-student check softmax-backward
#include "nn/backward.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

Mat softmax_rows_backward([[maybe_unused]] const Mat& P, [[maybe_unused]] const Mat& dP) {
    throw ExerciseNotDone("softmax-backward");
}

Mat softmax_jacobian([[maybe_unused]] const Vec& p) { throw ExerciseNotDone("softmax-backward"); }

}  // namespace attn::nn
