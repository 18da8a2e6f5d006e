// Exercise unrolled-weights: the GRU's state as a weighted sum of its candidates (the update of
// Cho et al. 2014, eq. 7, with the reset gate dropped, unrolled down to h_0).
// Checked by lesson 5 (gru-to-attention), step [unroll]: the weights of features 1 and 2 must
// match the golden file, and the lesson checks that they rebuild every h_t and sum to 1.
//
// Task: the recurrence h_t = u_t * h_{t-1} + (1 - u_t) * h~_t, feature by feature, unrolls to
//
//   h_t = a_{t,0} h_0 + sum_{i=1..t} a_{t,i} h~_i,   with
//   a_{t,0} = prod_{j=1..t} u_j,   a_{t,i} = (1 - u_i) prod_{j=i+1..t} u_j,   a_{t,i} = 0 for i > t
//
// (an empty product is 1). Steps t, i, j count from 1; row t-1 of update_gates (T x d) is u_t.
// Return the d x T x (T + 1) tensor a with a(k, t-1, i) = a_{t,i} of feature k, column 0 for h_0
// (declared in src/nn/unroll.hpp).
// Available: xt::zeros<double>({d, T, T + 1}), element access gates(t - 1, k), a(k, t - 1, i).
//
// Then: meson compile -C build attn-student && build/attn-student check unrolled-weights
#include "nn/unroll.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

Tensor3 unrolled_weights([[maybe_unused]] const Mat& update_gates) { throw ExerciseNotDone("unrolled-weights"); }

}  // namespace attn::nn
