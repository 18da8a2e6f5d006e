// The GRU of the lessons, written once: how a lesson draws one from its generator, stacks its
// gates, lets --input replace its weights, and records them. The lessons draw differently on
// purpose (lesson 1 leans its update gates towards keeping the state, lesson 7 has no biases),
// so the draw is a parameter; so are the names, which the golden files fix.
// d_in = input width, d = state width.
#pragma once

#include "core/rng.hpp"
#include "core/trace.hpp"
#include "nn/rnn.hpp"

#include <array>
#include <string>
#include <vector>

namespace attn {

// How a GRU's weights come out of the generator (Cho et al. 2014's W, U and b of each gate).
struct GruInit {
    enum class Order {
        by_gate,  // W_z, U_z, b_z, W_r, U_r, b_r, W_h, U_h, b_h, one draw per tensor
        stacked,  // W = [W_z; W_r; W_h] (3d x d_in), then U (3d x d), then b (3d)
    };
    Order order;
    double input_scale;   // standard deviation of the W_*
    double state_scale;   // standard deviation of the U_*
    double bias_scale;    // standard deviation of the biases; 0: not drawn, all zero
    double update_bias;   // added to b_z: a GRU that starts out keeping most of its state
};

// Variance 1/fan_in for the weights (every pre-activation sums fan_in products and stays near
// unit scale), biases N(0, bias_scale^2), and `update_bias` on the update gate.
GruInit fan_in_init(GruInit::Order order, std::size_t d_in, std::size_t d, double bias_scale, double update_bias);

nn::GruParams draw_gru(Rng& rng, std::size_t d_in, std::size_t d, const GruInit& init);

// The three gates stacked row-wise, [A_z; A_r; A_h], as lessons 2, 4 and 5 show them.
struct StackedGru {
    Mat W, U;  // 3d x d_in, 3d x d
    Vec b;     // 3d
};
StackedGru stacked(const nn::GruParams& p);
nn::GruParams unstacked(const StackedGru& g);

// What a lesson calls a stacked GRU's tensors: their names (also the --input keys), how the
// equations write each gate's block (subscripts {"z", "r", "h"} give "[W_z; W_r; W_h]", an empty
// one a bare "W"), the row labels' letters ("z" gives z1, z2, ...), and what W and U multiply.
struct GruNames {
    std::string W, U, b;
    std::array<std::string, 3> subscripts = {"z", "r", "h"};
    std::array<std::string, 3> row_letters = {"z", "r", "h~"};
    std::string input = "x_t";
    std::string state = "the previous state";
};

// The names lessons 2 and 4 use: W_<which>, U_<which>, b_<which>.
GruNames gru_names(const std::string& which, const std::string& input);

// --input may replace the stacked weights under their recorded names (same shapes).
StackedGru supplied(Trace& trace, const GruNames& names, StackedGru g);

// Records W, U and b in the current step, rows labelled by gate.
void record(Trace& trace, const GruNames& names, const StackedGru& g);

// Gate labels for 3d rows: z1 .. zd, r1 .. rd, h~1 .. h~d (with `names.row_letters`).
std::vector<std::string> gate_rows(const GruNames& names, std::size_t d);

// Lesson 1's form, gate by gate: --input replaces "<step>.W_z" and the eight others, and each
// of the nine tensors is recorded under its own name ("W_z", ...), `input` naming what W_* multiply.
nn::GruParams supplied_by_gate(Trace& trace, const std::string& step, nn::GruParams p);
void record_by_gate(Trace& trace, const nn::GruParams& p, const std::string& input);

}  // namespace attn
