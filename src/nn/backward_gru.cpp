// Backpropagation through time for a GRU (see nn/backward.hpp; the forward is nn/rnn.cpp's gru_forward).
// An exercise-sized function; a student's version would replace this file.
// T = time steps, d_in = input width, d = hidden width.
#include "nn/backward.hpp"

#include <xtensor/xview.hpp>

namespace attn::nn {

// From the last step to the first, carrying dL/dh_t back through every step after t.
GruRunGrads gru_backward(const GruParams& p, const Mat& X, const Vec& h0, const GruRun& run, const Mat& dH) {
    check_gru_params(p);
    const std::size_t T = X.shape(0), d = p.hidden_width();
    expect_shape("GRU backward inputs X", X, {T, p.input_width()});
    expect_shape("GRU backward initial state h0", h0, {d});
    expect_shape("GRU backward update gates", run.update_gates, {T, d});
    expect_shape("GRU backward reset gates", run.reset_gates, {T, d});
    expect_shape("GRU backward candidates", run.candidates, {T, d});
    expect_shape("GRU backward states", run.states, {T, d});
    expect_shape("GRU backward dL/dH", dH, {T, d});
    GruRunGrads g{zero_gru_grads(p), xt::zeros<double>({T, p.input_width()}), xt::zeros<double>({d})};
    // dL/dh_t through the later steps; nothing comes back past the last one
    Vec carried = xt::zeros<double>({d});
    for (std::size_t t = T; t-- > 0;) {
        const auto row_t = [t](const Mat& M) { return Vec(xt::row(M, static_cast<std::ptrdiff_t>(t))); };
        const Vec h_prev = t == 0 ? h0 : Vec(xt::row(run.states, static_cast<std::ptrdiff_t>(t - 1)));
        const GruStep step{row_t(run.update_gates), row_t(run.reset_gates), row_t(run.candidates), row_t(run.states)};
        // h_t is used twice: by the loss directly and by step t + 1
        const Vec dh = row_t(dH) + carried;
        const GruStepGrads step_grads = gru_step_backward(p, row_t(X), h_prev, step, dh, g.params);
        xt::row(g.dX, static_cast<std::ptrdiff_t>(t)) = step_grads.dx;
        carried = step_grads.dh_prev;
    }
    g.dh0 = carried;
    return g;
}

}  // namespace attn::nn
