// Exercise causal-mask: the causal and the padding masks (Vaswani et al. 2017, section 3.2.3).
// Checked by lesson 4 (self-attention), steps [causal] (M_causal) and [padding] (M_pad): the
// masks and the attention they produce must match the golden file.
//
// Task: write the three functions (declared in src/nn/self_attention.hpp). A mask is added to
// the scores before the softmax: 0 where query i may look at key j, -inf where it may not.
//
//   causal_mask(T):                 T x T,      M_ij = 0 for j <= i, -inf for j > i
//   padding_mask(T_q, T_k, L_k):    T_q x T_k,  M_ij = -inf for j >= L_k (padded keys), else 0
//   padding_mask(T_q, T_k, L_q, L_k):  the same, and also -inf on every row i >= L_q
//
// Indices count from 0. Throw ShapeError (core/tensor.hpp) when L_k > T_k or L_q > T_q.
// Available: xt::zeros<double>({rows, cols}), std::numeric_limits<double>::infinity(),
// element access M(i, j).
//
// Then: meson compile -C build attn-student && build/attn-student check causal-mask
#include "nn/self_attention.hpp"

#include "exercises/not_done.hpp"

#include <limits>
#include <string>

namespace attn::nn {

Mat causal_mask([[maybe_unused]] std::size_t T) { throw ExerciseNotDone("causal-mask"); }

Mat padding_mask([[maybe_unused]] std::size_t T_q, [[maybe_unused]] std::size_t T_k,
                 [[maybe_unused]] std::size_t valid_keys) {
    throw ExerciseNotDone("causal-mask");
}

Mat padding_mask([[maybe_unused]] std::size_t T_q, [[maybe_unused]] std::size_t T_k,
                 [[maybe_unused]] std::size_t valid_queries, [[maybe_unused]] std::size_t valid_keys) {
    throw ExerciseNotDone("causal-mask");
}

}  // namespace attn::nn
