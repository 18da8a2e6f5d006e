// Exercise gru-step-backward: one GRU step, backwards.
// Checked by lesson 8 (backprop), step [gru-backward]: the gradients of the last cell and of
// backpropagation through time (which calls your step once per time step) must match the
// golden file.
//
// Task: the forward step is nn::gru_step (Cho et al. 2014, eqs. 5-8; `step` holds what it
// computed: z, r, h~ and h):
//
//   z = sigmoid(W_z x + U_z h_prev + b_z),   r = sigmoid(W_r x + U_r h_prev + b_r)
//   h~ = tanh(W_h x + U_h (r * h_prev) + b_h),   h = z * h_prev + (1 - z) * h~
//
// Given dh = dL/dh, return dx and dh_prev in a GruStepGrads, and ADD the gradients of the nine
// weights into `grads` (declared in src/nn/backward.hpp): backpropagation through time calls the
// step at every time step with one GruGrads that sums them.
// Available: nn::matvec(W, x, "name"), nn::transposed(M), Vec arithmetic (+, -, * elementwise),
// element access M(i, j) and v(k); sigmoid'(a) = z (1 - z), tanh'(a) = 1 - h~^2.
//
// Then: meson compile -C build attn-student && build/attn-student check gru-step-backward
#include "nn/backward.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

GruStepGrads gru_step_backward([[maybe_unused]] const GruParams& p, [[maybe_unused]] const Vec& x,
                               [[maybe_unused]] const Vec& h_prev, [[maybe_unused]] const GruStep& step,
                               [[maybe_unused]] const Vec& dh, [[maybe_unused]] GruGrads& grads) {
    throw ExerciseNotDone("gru-step-backward");
}

}  // namespace attn::nn
