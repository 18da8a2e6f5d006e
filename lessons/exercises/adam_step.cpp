// Exercise adam-step: one step of the Adam optimizer on a block of weights.
// Checked by lesson 9 (learning-to-align), step [adam]: three steps of Adam by hand on a small block
// of weights, compared with the golden file (training itself would turn a last-bit difference into
// another trajectory; the lesson's later steps train with your adam_step too).
//
// Task: write adam_step (declared in src/nn/optimizer.hpp). For each k in [0, n), with the
// gradient g = g[k] — Kingma & Ba 2015, Algorithm 1:
//
//   m_k     = beta1 m_k + (1 - beta1) g             (first moment: a running mean of g)
//   v_k     = beta2 v_k + (1 - beta2) g^2           (second moment: a running mean of g^2)
//   m_hat   = m_k / (1 - beta1^t),  v_hat = v_k / (1 - beta2^t)      (bias correction)
//   theta_k = theta_k - alpha m_hat / (sqrt(v_hat) + epsilon)
//
// alpha, beta1, beta2 and epsilon are in `settings`; beta1_power = beta1^t and beta2_power =
// beta2^t are passed in (the caller multiplies them up, step by step). Compute in this order,
// with std::sqrt: the lesson compares the trained weights bit for bit.
//
// Then: meson compile -C build attn-student && build/attn-student check adam-step
#include "nn/optimizer.hpp"

#include "exercises/not_done.hpp"

namespace attn::nn {

void adam_step([[maybe_unused]] double* theta, [[maybe_unused]] const double* g, [[maybe_unused]] double* m,
               [[maybe_unused]] double* v, [[maybe_unused]] std::size_t n,
               [[maybe_unused]] const AdamSettings& settings, [[maybe_unused]] double beta1_power,
               [[maybe_unused]] double beta2_power) {
    throw ExerciseNotDone("adam-step");
}

}  // namespace attn::nn
