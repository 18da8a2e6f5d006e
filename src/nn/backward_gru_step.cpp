// The backward of one GRU step — Cho et al. 2014, eqs. 5-8 (the equations are in nn/backward.hpp).
// An exercise-sized function; a student's version would replace this file.
// d_in = input width, d = hidden width.
#include "nn/backward.hpp"

#include "nn/linalg.hpp"

#include <xtensor/xmath.hpp>

namespace attn::nn {

namespace {

// The gradients are written through raw indices below, so a wrongly shaped one must stop us first.
void expect_grads_shaped_like(const GruGrads& g, const GruParams& p) {
    expect_shape("GRU gradient dW_z", g.dW_z, shape_of(p.W_z));
    expect_shape("GRU gradient dU_z", g.dU_z, shape_of(p.U_z));
    expect_shape("GRU gradient db_z", g.db_z, shape_of(p.b_z));
    expect_shape("GRU gradient dW_r", g.dW_r, shape_of(p.W_r));
    expect_shape("GRU gradient dU_r", g.dU_r, shape_of(p.U_r));
    expect_shape("GRU gradient db_r", g.db_r, shape_of(p.b_r));
    expect_shape("GRU gradient dW_h", g.dW_h, shape_of(p.W_h));
    expect_shape("GRU gradient dU_h", g.dU_h, shape_of(p.U_h));
    expect_shape("GRU gradient db_h", g.db_h, shape_of(p.b_h));
}

}  // namespace

// Backwards through the forward's lines: 1. h_t, 2. h~_t, 3. r_t and z_t.
GruStepGrads gru_step_backward(const GruParams& p, const Vec& x, const Vec& h_prev, const GruStep& step,
                               const Vec& dh, GruGrads& grads) {
    check_gru_params(p);
    const std::size_t d = p.hidden_width();
    expect_shape("GRU backward input x_t", x, {p.input_width()});
    expect_shape("GRU backward previous state h_{t-1}", h_prev, {d});
    expect_shape("GRU backward update gate z_t", step.update_gate, {d});
    expect_shape("GRU backward reset gate r_t", step.reset_gate, {d});
    expect_shape("GRU backward candidate h~_t", step.candidate, {d});
    expect_shape("GRU backward dL/dh_t", dh, {d});
    expect_grads_shaped_like(grads, p);
    const Vec& z = step.update_gate;
    const Vec& r = step.reset_gate;
    const Vec& candidate = step.candidate;
    // 1. h_t = z * h_{t-1} + (1 - z) * h~: z weighs the old state against the candidate
    const Vec dz = dh * (h_prev - candidate);
    const Vec d_candidate = dh * (1.0 - z);
    // 2. h~ = tanh(a_h), a_h = W_h x + U_h (r * h_{t-1}) + b_h; tanh' = 1 - tanh^2
    const Vec da_h = d_candidate * (1.0 - candidate * candidate);
    const Vec reset_state = r * h_prev;
    const Vec d_reset_state = matvec_transposed(p.U_h, da_h, "U_h^T da_h");
    // 3. z = sigmoid(a_z), r = sigmoid(a_r); sigmoid' = sigmoid (1 - sigmoid)
    const Vec da_z = dz * z * (1.0 - z);
    const Vec da_r = d_reset_state * h_prev * r * (1.0 - r);
    add_outer_product(grads.dW_z, da_z, x);
    add_outer_product(grads.dU_z, da_z, h_prev);
    grads.db_z += da_z;
    add_outer_product(grads.dW_r, da_r, x);
    add_outer_product(grads.dU_r, da_r, h_prev);
    grads.db_r += da_r;
    add_outer_product(grads.dW_h, da_h, x);
    add_outer_product(grads.dU_h, da_h, reset_state);
    grads.db_h += da_h;
    // x feeds all three pre-activations; h_{t-1} those of z and r, r * h_{t-1}, and h_t directly
    GruStepGrads g;
    g.dx = matvec_transposed(p.W_z, da_z, "W_z^T da_z") + matvec_transposed(p.W_r, da_r, "W_r^T da_r") +
           matvec_transposed(p.W_h, da_h, "W_h^T da_h");
    g.dh_prev = dh * z + d_reset_state * r + matvec_transposed(p.U_z, da_z, "U_z^T da_z") +
                matvec_transposed(p.U_r, da_r, "U_r^T da_r");
    return g;
}

}  // namespace attn::nn
