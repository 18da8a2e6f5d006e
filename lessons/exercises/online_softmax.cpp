// Exercise online-softmax: the softmax of a row with its normaliser found in one pass (Milakov &
// Gimelshein 2018, "Online normalizer calculation for softmax", algorithm 3).
// Checked by lesson 10 (online-softmax), steps [online] and [edges]: the weights of a row whose
// largest logit (712) comes last, and of five rows chosen to show the usual slips, must match the
// golden file (the lesson also checks them against the two-pass nn::softmax).
//
// Task: write the three functions (declared in src/nn/online_softmax.hpp). Read the row once,
// from m = -inf and l = 0, keeping the largest entry so far and the sum of exponentials relative
// to it:
//
//   m_j = max(m_{j-1}, x_j),   l_j = l_{j-1} * exp(m_{j-1} - m_j) + exp(x_j - m_j)
//
// online_normalizer_steps returns that pass as a table, n x 2: row j holds m_j and l_j after
// entry j (lesson 10's step [online] shows it and checks it against the golden file).
// online_softmax then writes the weights in a second pass: alpha_i = exp(x_i - m_n) / l_n. Only the two passes:
// no separate pass for the maximum first.
// online_softmax_rows does the same to each row of a T_q x T_k matrix on its own.
// The conventions of nn::softmax hold here too: an entry of -inf gets weight 0, a row that is -inf
// everywhere gets all zeros (not NaN: while m is still -inf, exp(m_{j-1} - m_j) would be
// exp(-inf - (-inf)) = NaN, so add nothing then), entries of +inf share the weight equally, and a
// NaN entry makes its row NaN.
// Available: portable::exp (core/portable_math.hpp; use it rather than std::exp, so that your
// numbers have the same bits as the golden file's on every machine), std::max,
// std::numeric_limits<double>::infinity().
//
// Then: meson compile -C build attn-student && build/attn-student check online-softmax
#include "nn/online_softmax.hpp"

#include "core/portable_math.hpp"
#include "exercises/not_done.hpp"

#include <algorithm>
#include <limits>

namespace attn::nn {

Mat online_normalizer_steps([[maybe_unused]] const Vec& logits) { throw ExerciseNotDone("online-softmax"); }

Vec online_softmax([[maybe_unused]] const Vec& logits) { throw ExerciseNotDone("online-softmax"); }

Mat online_softmax_rows([[maybe_unused]] const Mat& logits) { throw ExerciseNotDone("online-softmax"); }

}  // namespace attn::nn
