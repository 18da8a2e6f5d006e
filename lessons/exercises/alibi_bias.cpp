// Exercise alibi-bias: ALiBi's slopes and linear biases (Press et al. 2022, Train Short, Test Long).
// Checked by lesson 15 (positions), steps [alibi-slopes], [alibi-bias] and [alibi-decay]: the slopes,
// the bias matrices and the weights they give must match the golden file.
//
// Task: write the three functions (declared in src/nn/rotary.hpp).
//
//   alibi_slopes(h): one slope per head, m_1 .. m_h.
//     h a power of two:  m_k = 2^(-8k/h), k = 1 .. h         (8 heads: 1/2, 1/4, ..., 1/256)
//     otherwise, with n the largest power of two below h: the n slopes for n heads, then every
//     other slope for 2n heads (its 1st, 3rd, 5th, ...), h - n of them (Press et al.'s code):
//     6 heads: 1/4, 1/16, 1/64, 1/256, then 1/2, 1/8. Not 2^(-8k/6).
//   alibi_bias(T, m):         B_ij = -m (i - j), T x T, i the query, j the key, both from 0
//   causal_alibi_bias(T, m):  the same for j <= i, and -infinity for j > i
//
// Throw ShapeError (core/tensor.hpp) from alibi_slopes when h is 0.
// Available: std::pow, std::exp2 and std::ldexp (<cmath>; portable::exp of core/portable_math.hpp is
// attn's own), xt::empty<double>({T, T}), element access B(i, j), and
// -std::numeric_limits<double>::infinity() (<limits>).
//
// Then: meson compile -C build attn-student && build/attn-student check alibi-bias
#include "nn/rotary.hpp"

#include "exercises/not_done.hpp"
#include "core/portable_math.hpp"

#include <cmath>
#include <limits>

namespace attn::nn {

Vec alibi_slopes([[maybe_unused]] std::size_t heads) {
    throw ExerciseNotDone("alibi-bias");
}

Mat alibi_bias([[maybe_unused]] std::size_t T, [[maybe_unused]] double slope) {
    throw ExerciseNotDone("alibi-bias");
}

Mat causal_alibi_bias([[maybe_unused]] std::size_t T, [[maybe_unused]] double slope) {
    throw ExerciseNotDone("alibi-bias");
}

}  // namespace attn::nn
