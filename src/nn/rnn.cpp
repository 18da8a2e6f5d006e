#include "nn/rnn.hpp"

#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <cmath>

namespace attn::nn {

Vec matvec(const Mat& W, const Vec& x, const char* what) {
    if (W.shape(1) != x.size())
        throw ShapeError(std::string(what) + ": matrix " + shape_string(shape_of(W)) + " cannot multiply vector " +
                         shape_string(shape_of(x)));
    // A plain loop: these are tiny and the order of the additions is fixed on every platform.
    const std::size_t rows = W.shape(0), cols = W.shape(1);
    Vec out = xt::empty<double>({rows});
    const double* w = W.data();
    const double* v = x.data();
    // four rows at a time: four independent chains of additions, each still in the order of j
    std::size_t i = 0;
    for (; i + 4 <= rows; i += 4) {
        const double *w0 = w + i * cols, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (std::size_t j = 0; j < cols; ++j) {
            s0 += w0[j] * v[j];
            s1 += w1[j] * v[j];
            s2 += w2[j] * v[j];
            s3 += w3[j] * v[j];
        }
        out(i) = s0;
        out(i + 1) = s1;
        out(i + 2) = s2;
        out(i + 3) = s3;
    }
    for (; i < rows; ++i) {
        double sum = 0.0;
        for (std::size_t j = 0; j < cols; ++j) sum += w[i * cols + j] * v[j];
        out(i) = sum;
    }
    return out;
}

void add_outer_product(Mat& W, const Vec& a, const Vec& x) {
    expect_shape("outer product a x^T", W, {a.size(), x.size()});
    const std::size_t rows = a.size(), cols = x.size();
    double* w = W.data();
    const double* ap = a.data();
    const double* xp = x.data();
    for (std::size_t i = 0; i < rows; ++i) {
        const double ai = ap[i];
        double* wi = w + i * cols;
        for (std::size_t j = 0; j < cols; ++j) wi[j] += ai * xp[j];
    }
}

Vec matvec_transposed(const Mat& W, const Vec& x, const char* what) {
    if (W.shape(0) != x.size())
        throw ShapeError(std::string(what) + ": the transpose of matrix " + shape_string(shape_of(W)) +
                         " cannot multiply vector " + shape_string(shape_of(x)));
    const std::size_t rows = W.shape(0), cols = W.shape(1);
    Vec out = xt::zeros<double>({cols});
    const double* w = W.data();
    const double* v = x.data();
    double* o = out.data();
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j) o[j] += w[i * cols + j] * v[i];
    return out;
}

void check_gru_params(const GruParams& p) {
    const std::size_t d = p.hidden_width(), d_in = p.input_width();
    expect_shape("GRU W_r", p.W_r, {d, d_in});
    expect_shape("GRU W_h", p.W_h, {d, d_in});
    expect_shape("GRU U_z", p.U_z, {d, d});
    expect_shape("GRU U_r", p.U_r, {d, d});
    expect_shape("GRU U_h", p.U_h, {d, d});
    expect_shape("GRU b_z", p.b_z, {d});
    expect_shape("GRU b_r", p.b_r, {d});
    expect_shape("GRU b_h", p.b_h, {d});
}

GruRun gru_forward(const GruParams& p, const Mat& X, const Vec& h0) {
    check_gru_params(p);
    const std::size_t T = X.shape(0), d = p.hidden_width();
    expect_shape("GRU inputs X", X, {T, p.input_width()});
    GruRun run{xt::empty<double>({T, d}), xt::empty<double>({T, d}), xt::empty<double>({T, d}),
               xt::empty<double>({T, d})};
    Vec h = h0;
    for (std::size_t t = 0; t < T; ++t) {
        const GruStep s = gru_step(p, xt::row(X, static_cast<std::ptrdiff_t>(t)), h);
        xt::row(run.update_gates, static_cast<std::ptrdiff_t>(t)) = s.update_gate;
        xt::row(run.reset_gates, static_cast<std::ptrdiff_t>(t)) = s.reset_gate;
        xt::row(run.candidates, static_cast<std::ptrdiff_t>(t)) = s.candidate;
        xt::row(run.states, static_cast<std::ptrdiff_t>(t)) = s.state;
        h = s.state;
    }
    return run;
}

Mat reversed_rows(const Mat& X) {
    Mat out = xt::empty<double>({X.shape(0), X.shape(1)});
    for (std::size_t t = 0; t < X.shape(0); ++t)
        xt::row(out, static_cast<std::ptrdiff_t>(t)) = xt::row(X, static_cast<std::ptrdiff_t>(X.shape(0) - 1 - t));
    return out;
}

BiGruRun bigru_forward(const GruParams& fwd, const GruParams& bwd, const Mat& X) {
    check_gru_params(fwd);
    check_gru_params(bwd);
    const std::size_t T = X.shape(0), d_fwd = fwd.hidden_width(), d_bwd = bwd.hidden_width();
    expect_shape("BiGRU inputs X (forward GRU)", X, {T, fwd.input_width()});
    expect_shape("BiGRU inputs X (backward GRU)", X, {T, bwd.input_width()});
    // 1. read left to right, and right to left by running on the reversed sentence
    BiGruRun run;
    run.forward = gru_forward(fwd, X, xt::zeros<double>({d_fwd}));
    const GruRun reversed = gru_forward(bwd, reversed_rows(X), xt::zeros<double>({d_bwd}));
    // 2. put the backward rows back in source order, so row j of both halves belongs to x_j
    run.backward = GruRun{reversed_rows(reversed.update_gates), reversed_rows(reversed.reset_gates),
                          reversed_rows(reversed.candidates), reversed_rows(reversed.states)};
    // 3. h_j = [h→_j; h←_j]
    run.annotations = xt::empty<double>({T, d_fwd + d_bwd});
    xt::view(run.annotations, xt::all(), xt::range(0, d_fwd)) = run.forward.states;
    xt::view(run.annotations, xt::all(), xt::range(d_fwd, d_fwd + d_bwd)) = run.backward.states;
    return run;
}

}  // namespace attn::nn
