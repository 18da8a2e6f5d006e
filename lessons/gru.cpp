#include "gru.hpp"

#include "support.hpp"

#include "nn/reductions.hpp"

#include <cmath>

namespace attn {

GruInit fan_in_init(GruInit::Order order, std::size_t d_in, std::size_t d, double bias_scale, double update_bias) {
    return {order, 1.0 / std::sqrt(as_double(d_in)), 1.0 / std::sqrt(as_double(d)), bias_scale, update_bias};
}

namespace {

Vec draw_bias(Rng& rng, std::size_t n, double scale) {
    return scale > 0.0 ? rng.normal_vec(n, scale) : nn::zeros(n);
}

}  // namespace

nn::GruParams draw_gru(Rng& rng, std::size_t d_in, std::size_t d, const GruInit& init) {
    nn::GruParams p;
    if (init.order == GruInit::Order::stacked) {
        StackedGru g{rng.normal_mat(3 * d, d_in, init.input_scale), rng.normal_mat(3 * d, d, init.state_scale),
                     draw_bias(rng, 3 * d, init.bias_scale)};
        p = unstacked(g);
    } else {
        p.W_z = rng.normal_mat(d, d_in, init.input_scale);
        p.U_z = rng.normal_mat(d, d, init.state_scale);
        p.b_z = draw_bias(rng, d, init.bias_scale);
        p.W_r = rng.normal_mat(d, d_in, init.input_scale);
        p.U_r = rng.normal_mat(d, d, init.state_scale);
        p.b_r = draw_bias(rng, d, init.bias_scale);
        p.W_h = rng.normal_mat(d, d_in, init.input_scale);
        p.U_h = rng.normal_mat(d, d, init.state_scale);
        p.b_h = draw_bias(rng, d, init.bias_scale);
    }
    if (init.update_bias != 0.0) p.b_z += init.update_bias;
    return p;
}

StackedGru stacked(const nn::GruParams& p) {
    const std::size_t d = p.hidden_width(), d_in = p.input_width();
    StackedGru g{xt::empty<double>({3 * d, d_in}), xt::empty<double>({3 * d, d}), xt::empty<double>({3 * d})};
    nn::set_rows(g.W, 0, p.W_z);
    nn::set_rows(g.W, d, p.W_r);
    nn::set_rows(g.W, 2 * d, p.W_h);
    nn::set_rows(g.U, 0, p.U_z);
    nn::set_rows(g.U, d, p.U_r);
    nn::set_rows(g.U, 2 * d, p.U_h);
    nn::set_entries(g.b, 0, p.b_z);
    nn::set_entries(g.b, d, p.b_r);
    nn::set_entries(g.b, 2 * d, p.b_h);
    return g;
}

nn::GruParams unstacked(const StackedGru& g) {
    const std::size_t d = g.U.shape(1);
    const auto W = [&](std::size_t k) { return nn::rows_of(g.W, k * d, (k + 1) * d); };
    const auto U = [&](std::size_t k) { return nn::rows_of(g.U, k * d, (k + 1) * d); };
    const auto b = [&](std::size_t k) { return nn::entries_of(g.b, k * d, (k + 1) * d); };
    return {W(0), U(0), b(0), W(1), U(1), b(1), W(2), U(2), b(2)};
}

GruNames gru_names(const std::string& which, const std::string& input) {
    GruNames names{"W_" + which, "U_" + which, "b_" + which};
    names.input = input;
    return names;
}

StackedGru supplied(Trace& trace, const GruNames& names, StackedGru g) {
    g.W = trace.input(names.W, g.W);
    g.U = trace.input(names.U, g.U);
    g.b = trace.input(names.b, g.b);
    return g;
}

std::vector<std::string> gate_rows(const GruNames& names, std::size_t d) {
    std::vector<std::string> out;
    for (const auto& letter : names.row_letters)
        for (const auto& label : numbered(letter, 1, d)) out.push_back(label);
    return out;
}

namespace {

// "[W_z; W_r; W_h]" from "W" and the subscripts; an empty subscript leaves the letter bare.
std::string stacked_symbol(const std::string& letter, const std::array<std::string, 3>& subscripts) {
    std::string out = "[";
    for (std::size_t k = 0; k < 3; ++k) {
        if (k > 0) out += "; ";
        out += subscripts[k].empty() ? letter : letter + "_" + subscripts[k];
    }
    return out + "]";
}

}  // namespace

void record(Trace& trace, const GruNames& names, const StackedGru& g) {
    const std::vector<std::string> rows = gate_rows(names, g.U.shape(1));
    trace.parameter(names.W, stacked_symbol("W", names.subscripts) + ", applied to " + names.input, g.W, rows);
    trace.parameter(names.U, stacked_symbol("U", names.subscripts) + ", applied to " + names.state, g.U, rows);
    trace.parameter(names.b, stacked_symbol("b", names.subscripts), g.b, rows);
}

nn::GruParams supplied_by_gate(Trace& trace, const std::string& step, nn::GruParams p) {
    const auto supplied_as = [&](const char* name, auto& value) { value = trace.input(step + "." + name, value); };
    supplied_as("W_z", p.W_z);
    supplied_as("U_z", p.U_z);
    supplied_as("b_z", p.b_z);
    supplied_as("W_r", p.W_r);
    supplied_as("U_r", p.U_r);
    supplied_as("b_r", p.b_r);
    supplied_as("W_h", p.W_h);
    supplied_as("U_h", p.U_h);
    supplied_as("b_h", p.b_h);
    return p;
}

void record_by_gate(Trace& trace, const nn::GruParams& p, const std::string& input) {
    trace.parameter("W_z", "update gate, input weights (" + input + ")", p.W_z);
    trace.parameter("U_z", "update gate, state weights", p.U_z);
    trace.parameter("b_z", "update gate bias", p.b_z);
    trace.parameter("W_r", "reset gate, input weights (" + input + ")", p.W_r);
    trace.parameter("U_r", "reset gate, state weights", p.U_r);
    trace.parameter("b_r", "reset gate bias", p.b_r);
    trace.parameter("W_h", "candidate, input weights (" + input + ")", p.W_h);
    trace.parameter("U_h", "candidate, state weights", p.U_h);
    trace.parameter("b_h", "candidate bias", p.b_h);
}

}  // namespace attn
