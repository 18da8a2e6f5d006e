// One GRU step — Cho et al. 2014, eqs. 5-8 (the equations are in nn/rnn.hpp).
// The classroom exercise gru-step; the student's version is lessons/exercises/gru_step.cpp.
#include "nn/rnn.hpp"

#include <xtensor/xmath.hpp>

namespace attn::nn {

GruStep gru_step(const GruParams& p, const Vec& x, const Vec& h_prev) {
    expect_shape("GRU input x_t", x, {p.input_width()});
    expect_shape("GRU previous state h_{t-1}", h_prev, {p.hidden_width()});
    GruStep s;
    s.update_gate = sigmoid(matvec(p.W_z, x, "W_z x_t") + matvec(p.U_z, h_prev, "U_z h_{t-1}") + p.b_z);
    s.reset_gate = sigmoid(matvec(p.W_r, x, "W_r x_t") + matvec(p.U_r, h_prev, "U_r h_{t-1}") + p.b_r);
    const Vec reset_state = s.reset_gate * h_prev;
    s.candidate = tanh_each(matvec(p.W_h, x, "W_h x_t") + matvec(p.U_h, reset_state, "U_h (r_t * h_{t-1})") + p.b_h);
    s.state = s.update_gate * h_prev + (1.0 - s.update_gate) * s.candidate;
    return s;
}

}  // namespace attn::nn
