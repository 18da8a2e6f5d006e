// Exercise lin-penalty: the penalty that keeps attention hops apart (Lin et al. 2017, section
// 2.2, eq. 8).
// Checked by lesson 4 (self-attention), step [penalty]: P for the lesson's A, for r copies of
// one hop and for one-hot hops must match the golden file.
//
// Task: for the r x n matrix A of r attention hops (row i is the distribution a_i over the n
// tokens), return the number (declared in src/nn/structured.hpp)
//
//   P = ||A A^T - I||_F^2 = sum_i sum_j (a_i . a_j - [i = j])^2
//
// where ||.||_F^2 is the sum of the squares of all entries and I is the r x r identity. Only the
// diagonal loses the 1: A A^T is r x r, not n x n.
// Available: nn::matmul(A, B, "name") (A B, with a shape check naming it), nn::transposed(A)
// (A^T as a matrix), xt::eye<double>(r), xt::sum(M)() (the sum of all entries), or plain loops.
//
// Then: meson compile -C build attn-student && build/attn-student check lin-penalty
#include "nn/structured.hpp"

#include "exercises/not_done.hpp"
#include "nn/linalg.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

namespace attn::nn {

double redundancy_penalty([[maybe_unused]] const Mat& A) { throw ExerciseNotDone("lin-penalty"); }

}  // namespace attn::nn
