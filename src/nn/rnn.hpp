// The gated recurrent unit of Cho et al. 2014.
// T = time steps, d_in = input width, d = hidden width.
#pragma once

#include "core/tensor.hpp"
#include "nn/activations.hpp"

namespace attn::nn {

// One GRU's weights: W_* map the input (d x d_in), U_* the previous state (d x d), b_* are biases (d).
struct GruParams {
    Mat W_z, U_z;
    Vec b_z;
    Mat W_r, U_r;
    Vec b_r;
    Mat W_h, U_h;
    Vec b_h;

    std::size_t input_width() const { return W_z.shape(1); }
    std::size_t hidden_width() const { return W_z.shape(0); }
};

// Throws ShapeError naming the first weight whose shape disagrees with W_z's.
void check_gru_params(const GruParams& p);

// Everything one step computes, so a lesson can show the gates.
struct GruStep {
    Vec update_gate;  // z_t
    Vec reset_gate;   // r_t
    Vec candidate;    // h~_t
    Vec state;        // h_t
};

// z_t  = sigmoid(W_z x_t + U_z h_{t-1} + b_z)              — Cho et al. 2014, eq. 6
// r_t  = sigmoid(W_r x_t + U_r h_{t-1} + b_r)              — eq. 5
// h~_t = tanh(W_h x_t + U_h (r_t * h_{t-1}) + b_h)         — eq. 8
// h_t  = z_t * h_{t-1} + (1 - z_t) * h~_t (elementwise)    — eq. 7
// (PyTorch's nn.GRUCell writes h' = (1 - z) * n + z * h: the same convention.)
GruStep gru_step(const GruParams& p, const Vec& x, const Vec& h_prev);

// All steps of one sequence.
struct GruRun {
    Mat update_gates;  // T x d, row t is z_t
    Mat reset_gates;   // T x d
    Mat candidates;    // T x d
    Mat states;        // T x d, row t is h_t
};

// Runs the GRU over the rows of X (T x d_in) from the state h0 (d).
GruRun gru_forward(const GruParams& p, const Mat& X, const Vec& h0);

// A bidirectional GRU encoder — Bahdanau et al. 2015, section 3.2. The forward GRU reads
// x_1..x_T, the backward GRU reads x_T..x_1, both from zero states, and the annotation of
// x_j is h_j = [h→_j; h←_j]: a summary of the words on both sides of x_j.
struct BiGruRun {
    GruRun forward;   // row j: h→_j, which has read x_1..x_j
    GruRun backward;  // row j: h←_j, which has read x_T..x_j (rows kept in source order)
    Mat annotations;  // T x (d_fwd + d_bwd), row j: h_j = [h→_j; h←_j]
};

// The rows of X (T x n) in reverse order; reversing twice gives X back.
Mat reversed_rows(const Mat& X);

// Runs both GRUs over the rows of X (T x d_in); both must take inputs of width d_in.
BiGruRun bigru_forward(const GruParams& fwd, const GruParams& bwd, const Mat& X);

// W x for a matrix and a vector; the shapes are checked and named. Entry i sums W_ij x_j over j
// in order, from 0 (the numbers of nn::matmul with one column).
Vec matvec(const Mat& W, const Vec& x, const char* what);

// W^T x without forming W^T: entry j sums W_ij x_i over i in order, from 0, so the result has the
// bits of matvec(transposed(W), x).
Vec matvec_transposed(const Mat& W, const Vec& x, const char* what);

// W += a x^T, entry by entry (W_ij += a_i x_j): how a weight's gradient collects one step's share.
void add_outer_product(Mat& W, const Vec& a, const Vec& x);

}  // namespace attn::nn
