// Exercise heads: splitting a matrix into attention heads and merging them back (Vaswani et al.
// 2017, section 3.2.2).
// Checked by lesson 6 (multi-head), steps [batched] (Q_heads = split_heads(X W^Q)) and [concat]
// (Concat = merge_heads of the head outputs): both must match the golden file.
//
// Task: write both functions (declared in src/nn/multi_head.hpp), with d_k = d_model / h:
//
//   split_heads(X, h):  T x d_model -> h x T x d_k,   out(i, t, a) = X(t, i d_k + a)
//   merge_heads(H):     h x T x d_v -> T x h d_v,     out(t, i d_v + a) = H(i, t, a)
//
// Head i gets the i-th block of d_k adjacent columns; merge_heads(split_heads(X, h)) = X.
// nn::head_width(d_model, h) gives d_k and throws when h does not divide d_model.
// Available: xt::empty<double>({h, T, d_k}), element access X(t, c), out(i, t, a).
//
// Then: meson compile -C build attn-student && build/attn-student check heads
#include "nn/multi_head.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

Heads split_heads([[maybe_unused]] const Mat& X, [[maybe_unused]] std::size_t heads) {
    throw ExerciseNotDone("heads");
}

Mat merge_heads([[maybe_unused]] const Heads& heads) { throw ExerciseNotDone("heads"); }

}  // namespace attn::nn
