// Exercise gru-step: one step of a gated recurrent unit (Cho et al. 2014, eqs. 5-8).
// Checked by lesson 1 (bottleneck), step [encoder]: the encoder runs your step over
// "turn off the lights" and every gate and state must match the golden file.
//
// Task: given the input x_t (d_in), the previous state h_{t-1} (d) and the weights p, compute
//
//   z_t  = sigmoid(W_z x_t + U_z h_{t-1} + b_z)            update gate
//   r_t  = sigmoid(W_r x_t + U_r h_{t-1} + b_r)            reset gate
//   h~_t = tanh(W_h x_t + U_h (r_t * h_{t-1}) + b_h)       candidate
//   h_t  = z_t * h_{t-1} + (1 - z_t) * h~_t                new state
//
// where * is elementwise, and return all four in a GruStep (declared in src/nn/rnn.hpp).
// Available: nn::sigmoid(v), nn::matvec(W, x, "name") (W x, with a shape check naming it),
// nn::tanh_each(v) (attn's own tanh, the reference's: the same bits on every machine; xt::tanh
// passes too, within the tolerance), and Vec arithmetic (+, -, * elementwise; 1.0 - v).
//
// Then: meson compile -C build attn-student && build/attn-student check gru-step
#include "nn/rnn.hpp"

#include "exercises/not_done.hpp"

#include <xtensor/xmath.hpp>

namespace attn::nn {

GruStep gru_step([[maybe_unused]] const GruParams& p, [[maybe_unused]] const Vec& x,
                 [[maybe_unused]] const Vec& h_prev) {
    throw ExerciseNotDone("gru-step");
}

}  // namespace attn::nn
