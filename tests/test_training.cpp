// The training pieces of lesson 9: Adam and gradient clipping (nn/optimizer.hpp) against their
// equations worked by hand, and the whole-model backward of nn/seq2seq.hpp against central finite
// differences on every weight of a tiny model, with and without attention.
// T_x / T_y = source / target words, u = width.
#include "core/rng.hpp"
#include "nn/optimizer.hpp"
#include "nn/seq2seq.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_training {

using namespace attn;

namespace {

nn::GruParams tiny_gru(Rng& rng, std::size_t d_in, std::size_t u) {
    return {rng.normal_mat(u, d_in, 0.5), rng.normal_mat(u, u, 0.5), rng.normal_vec(u, 0.1),
            rng.normal_mat(u, d_in, 0.5), rng.normal_mat(u, u, 0.5), rng.normal_vec(u, 0.1),
            rng.normal_mat(u, d_in, 0.5), rng.normal_mat(u, u, 0.5), rng.normal_vec(u, 0.1)};
}

// A model of width 3 over 5 source and 6 target words (0 = <sos>, 1 = <eos>), biases not zero so
// that every gradient is exercised.
nn::Seq2Seq tiny_model(bool attention) {
    Rng rng(11);
    const std::size_t u = 3, context = attention ? 2 * u : u;
    nn::Seq2Seq m;
    m.attention = attention;
    m.E_src = rng.normal_mat(5, u);
    m.E_tgt = rng.normal_mat(6, u);
    m.enc_fwd = tiny_gru(rng, u, u);
    if (attention) m.enc_bwd = tiny_gru(rng, u, u);
    m.dec = tiny_gru(rng, u + context, u);
    if (attention) {
        m.W_a = rng.normal_mat(4, u, 0.5);
        m.U_a = rng.normal_mat(4, context, 0.5);
        m.v_a = rng.normal_vec(4);
    }
    m.W_o = rng.normal_mat(6, u);
    m.b_o = rng.normal_vec(6, 0.1);
    return m;
}

const std::vector<std::size_t> src = {2, 4, 3, 2}, dec_in = {0, 3, 5}, dec_out = {3, 5, 1};

}  // namespace

TEST_CASE("adam_step's first step moves every weight by the learning rate against its gradient", "[training]") {
    // at t = 1, m_hat = g and v_hat = g^2, so the step is alpha g / (|g| + eps) ~ alpha sign(g)
    const nn::AdamSettings s{0.1, 0.9, 0.999, 1e-8};
    std::vector<double> theta = {1.0, -2.0, 0.5}, g = {0.3, -4.0, 0.0}, m(3, 0.0), v(3, 0.0);
    nn::adam_step(theta.data(), g.data(), m.data(), v.data(), 3, s, s.beta1, s.beta2);
    CHECK_THAT(theta[0], Catch::WithinAbs(0.9, 1e-6));
    CHECK_THAT(theta[1], Catch::WithinAbs(-1.9, 1e-6));
    CHECK(theta[2] == 0.5);  // no gradient, no step
    CHECK_THAT(m[0], Catch::WithinRel(0.03, 1e-12));
    CHECK_THAT(v[1], Catch::WithinRel(0.016, 1e-12));
    // a second step with the same gradient: the moments' bias correction keeps the step at alpha
    nn::adam_step(theta.data(), g.data(), m.data(), v.data(), 3, s, s.beta1 * s.beta1, s.beta2 * s.beta2);
    CHECK_THAT(theta[0], Catch::WithinAbs(0.8, 1e-6));
}

TEST_CASE("clip_by_global_norm scales all blocks together, and only above the threshold", "[training]") {
    std::vector<double> a = {3.0, 0.0}, b = {4.0};
    const std::vector<nn::Block> blocks = {{a.data(), a.size()}, {b.data(), b.size()}};
    CHECK(nn::clip_by_global_norm(blocks, 10.0) == 5.0);
    CHECK(a[0] == 3.0);
    CHECK(nn::clip_by_global_norm(blocks, 1.0) == 5.0);
    CHECK_THAT(a[0], Catch::WithinRel(0.6, 1e-15));
    CHECK_THAT(b[0], Catch::WithinRel(0.8, 1e-15));
    CHECK_THAT(nn::global_norm(blocks), Catch::WithinRel(1.0, 1e-15));
}

TEST_CASE("the seq2seq backward matches central differences on every weight", "[training]") {
    for (const bool attention : {false, true}) {
        INFO((attention ? "with attention" : "without attention"));
        nn::Seq2Seq m = tiny_model(attention);
        nn::Seq2Seq grads = nn::zeros_like(m);
        const double loss = nn::seq2seq_backward(m, src, dec_in, dec_out, grads).loss;
        CHECK(loss == nn::seq2seq_forward(m, src, dec_in, dec_out).loss);
        const std::vector<nn::Block> w = nn::blocks(m), g = nn::blocks(grads);
        REQUIRE(w.size() == g.size());
        double worst = 0.0;
        for (std::size_t b = 0; b < w.size(); ++b)
            for (std::size_t k = 0; k < w[b].size; ++k) {
                const double saved = w[b].data[k], h = 1e-6;
                w[b].data[k] = saved + h;
                const double up = nn::seq2seq_forward(m, src, dec_in, dec_out).loss;
                w[b].data[k] = saved - h;
                const double down = nn::seq2seq_forward(m, src, dec_in, dec_out).loss;
                w[b].data[k] = saved;
                const double numeric = (up - down) / (2.0 * h);
                worst = std::max(worst, std::abs(g[b].data[k] - numeric) / std::max(1.0, std::abs(numeric)));
            }
        // the rounding of two losses of order 10 divided by 2h is about 1e-9; a wrong term is of order 0.1
        CHECK(worst < 1e-7);
    }
}

TEST_CASE("greedy decoding stops at <eos> or at the word limit", "[training]") {
    const nn::Seq2Seq m = tiny_model(true);
    Mat weights;
    const std::vector<std::size_t> out = nn::greedy_decode(m, src, 0, 1, 4, &weights);
    CHECK(out.size() <= 4);
    for (std::size_t y : out) CHECK(y != 1);
    CHECK(weights.shape(0) == out.size());
    CHECK(weights.shape(1) == src.size());
    CHECK(nn::greedy_decode(m, src, 0, 1, 0).empty());
}

}  // namespace test_training
