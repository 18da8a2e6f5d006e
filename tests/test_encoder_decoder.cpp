// The Transformer encoder-decoder (nn/encoder_decoder.hpp) against independent computations:
// cross-attention against its equation in long double, loop by loop; every backward (cross-attention,
// the decoder block, the whole model's loss) against central differences; the decoder's causality;
// greedy decoding against the teacher-forced pass; the warm-up schedule against its equation; lesson
// 13's decoding: the key-value cache against the uncached pass to the bit (sinusoidal and learned
// positions), the aligned causal mask, beam search against greedy decoding and an exhaustive search;
// the decoder alone as a language model: its backward against central differences, its causality.
// T_y = decoder tokens, T_x = encoder tokens, d = model width, h = heads.
#include "core/rng.hpp"
#include "nn/beam_search.hpp"
#include "nn/bleu.hpp"
#include "nn/bleu_bins.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/encoder_decoder_batch.hpp"
#include "nn/kernels.hpp"
#include "nn/kv_cache.hpp"
#include "nn/language_model.hpp"
#include "nn/linalg.hpp"
#include "nn/finite_differences.hpp"
#include "nn/position_schemes.hpp"
#include "nn/positional.hpp"
#include "nn/rotary.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstddef>
#include <stdexcept>
#include <vector>

// Everything of this file in a namespace of its own (the test program is built as unity files).
namespace test_encoder_decoder {

using namespace attn;

namespace {

// The step and tolerance of test_transformer.cpp for the losses sum(G * output) of order 1 to 10:
// at h = 1e-6 the truncation h^2 L''' / 6 stays near 1e-12 and rounding near eps |L| / h ~ 1e-9, so
// 1e-7 relative to max(1, |numeric|) holds with a margin of 100, and a dropped term (the keys'
// share of dH, say) is off by the size of the gradient itself.
constexpr double fd_step = 1e-6;
constexpr double tolerance = 1e-7;

double weighted_sum(const Mat& G, const Mat& Y) {
    REQUIRE(shape_of(G) == shape_of(Y));
    double L = 0.0;
    for (std::size_t k = 0; k < Y.size(); ++k) L += G.data()[k] * Y.data()[k];
    return L;
}

template <class Loss>
double worst_error(double* data, const double* analytic, std::size_t n, const Loss& loss) {
    double worst = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        const double numeric = nn::central_difference(data[k], loss, fd_step);
        worst = std::max(worst, std::abs(numeric - analytic[k]) / std::max(1.0, std::abs(numeric)));
    }
    return worst;
}

nn::MultiHeadParams random_attention(Rng& rng, std::size_t d, double s) {
    return {rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s)};
}

nn::LayerNormParams random_norm(Rng& rng, std::size_t d) {
    return {Vec(1.0 + 0.3 * rng.normal_vec(d)), rng.normal_vec(d, 0.3), 1e-5};
}

nn::DecoderBlockParams random_decoder_block(Rng& rng, std::size_t d, std::size_t d_ff) {
    const double s = 1.0 / std::sqrt(static_cast<double>(d));
    return {random_norm(rng, d),
            random_attention(rng, d, s),
            random_norm(rng, d),
            random_attention(rng, d, s),
            random_norm(rng, d),
            {rng.normal_mat(d_ff, d, s), rng.normal_vec(d_ff, 0.1), rng.normal_mat(d, d_ff, s), rng.normal_vec(d, 0.1)}};
}

// encoder_decoder_backward's gradients (added to `grads`) against central differences of the loss on every
// trained tensor of m (one encoder block, two decoder blocks, no position tables); returns the loss.
double check_every_tensor(nn::EncoderDecoder& m, const std::vector<std::size_t>& src, const std::vector<std::size_t>& in,
                          const std::vector<std::size_t>& out, nn::EncoderDecoder& grads) {
    const double L = nn::encoder_decoder_backward(m, src, in, out, grads).loss;
    CHECK(L == nn::encoder_decoder_forward(m, src, in, out).loss);
    const auto loss = [&] { return nn::encoder_decoder_forward(m, src, in, out).loss; };
    const auto params = nn::named_tensors(m), g = nn::named_tensors(grads);
    REQUIRE(params.size() == 2 + 12 + 2 + 2 * 18 + 2 + 2);
    for (std::size_t k = 0; k < params.size(); ++k) {
        INFO(params[k].name);
        CHECK(worst_error(params[k].data, g[k].data, params[k].size, loss) <= tolerance);
    }
    return L;
}

nn::EncoderDecoder random_model(Rng& rng, std::size_t V_src, std::size_t V_tgt, std::size_t d, std::size_t h) {
    const double s = 1.0 / std::sqrt(static_cast<double>(d));
    nn::EncoderDecoder m;
    m.heads = h;
    m.E_src = rng.normal_mat(V_src, d, s);
    m.E_tgt = rng.normal_mat(V_tgt, d, s);
    nn::BlockParams enc{random_norm(rng, d), random_attention(rng, d, s), random_norm(rng, d),
                        {rng.normal_mat(2 * d, d, s), rng.normal_vec(2 * d, 0.1), rng.normal_mat(d, 2 * d, s),
                         rng.normal_vec(d, 0.1)}};
    m.encoder = {enc};
    m.encoder_norm = random_norm(rng, d);
    m.decoder = {random_decoder_block(rng, d, 2 * d), random_decoder_block(rng, d, 2 * d)};
    m.decoder_norm = random_norm(rng, d);
    m.W_o = rng.normal_mat(V_tgt, d, s);
    m.b_o = rng.normal_vec(V_tgt, 0.1);
    return m;
}

// Cross-attention from its definition, one query, key and head at a time, in long double.
std::vector<std::vector<long double>> cross_attention_oracle(const Mat& Y, const Mat& H, const nn::MultiHeadParams& p,
                                                             std::size_t h) {
    const std::size_t T_y = Y.shape(0), T_x = H.shape(0), d = Y.shape(1), d_k = d / h;
    const auto project = [&](const Mat& X, const Mat& W, std::size_t t, std::size_t c) {
        long double s = 0.0L;
        for (std::size_t a = 0; a < d; ++a) s += static_cast<long double>(X(t, a)) * W(a, c);
        return s;
    };
    std::vector<std::vector<long double>> concat(T_y, std::vector<long double>(d, 0.0L));
    for (std::size_t head = 0; head < h; ++head)
        for (std::size_t i = 0; i < T_y; ++i) {
            std::vector<long double> score(T_x);
            long double top = -1e300L, total = 0.0L;
            for (std::size_t j = 0; j < T_x; ++j) {
                long double s = 0.0L;
                for (std::size_t c = head * d_k; c < (head + 1) * d_k; ++c) s += project(Y, p.W_Q, i, c) * project(H, p.W_K, j, c);
                score[j] = s / std::sqrt(static_cast<long double>(d_k));
                top = std::max(top, score[j]);
            }
            for (std::size_t j = 0; j < T_x; ++j) total += (score[j] = std::exp(score[j] - top));
            for (std::size_t c = head * d_k; c < (head + 1) * d_k; ++c)
                for (std::size_t j = 0; j < T_x; ++j) concat[i][c] += score[j] / total * project(H, p.W_V, j, c);
        }
    std::vector<std::vector<long double>> out(T_y, std::vector<long double>(d, 0.0L));
    for (std::size_t i = 0; i < T_y; ++i)
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t a = 0; a < d; ++a) out[i][c] += concat[i][a] * p.W_O(a, c);
    return out;
}

}  // namespace

TEST_CASE("cross_attention against its equation in long double, T_y != T_x", "[encoder_decoder]") {
    Rng rng(21);
    const std::size_t h = GENERATE(1, 2);
    const Mat Y = rng.normal_mat(3, 4), H = rng.normal_mat(5, 4);
    const nn::MultiHeadParams p = random_attention(rng, 4, 0.8);
    const nn::MultiHeadResult r = nn::cross_attention(Y, H, p, h);
    REQUIRE(shape_of(r.output) == std::vector<std::size_t>{3, 4});
    REQUIRE(shape_of(r.weights) == std::vector<std::size_t>{h, 3, 5});
    const auto expected = cross_attention_oracle(Y, H, p, h);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t c = 0; c < 4; ++c)
            CHECK_THAT(r.output(i, c), Catch::WithinAbs(static_cast<double>(expected[i][c]), 1e-13));
    // no mask: every weight is positive, also above the diagonal (a causal mask would zero those)
    for (std::size_t k = 0; k < r.weights.size(); ++k) CHECK(r.weights.data()[k] > 0.0);
    // the queries come from Y: swapping the roles gives T_x rows, not T_y
    CHECK(nn::multi_head_attention(H, Y, p, h).output.shape(0) == 5);
}

TEST_CASE("cross_attention_backward against central differences: dY, dH and every projection",
          "[encoder_decoder]") {
    Rng rng(22);
    const std::size_t h = GENERATE(1, 2), T_y = 3, T_x = 5, d = 4;
    Mat Y = rng.normal_mat(T_y, d), H = rng.normal_mat(T_x, d);
    nn::MultiHeadParams p = random_attention(rng, d, 0.8);
    const Mat G = rng.normal_mat(T_y, d);
    const auto loss = [&] { return weighted_sum(G, nn::cross_attention(Y, H, p, h).output); };
    const nn::CrossAttentionGrads g = nn::cross_attention_backward(Y, H, p, h, nn::cross_attention(Y, H, p, h), G);
    CHECK(worst_error(Y.data(), g.dY.data(), Y.size(), loss) <= tolerance);
    CHECK(worst_error(H.data(), g.dH.data(), H.size(), loss) <= tolerance);
    CHECK(worst_error(p.W_Q.data(), g.params.W_Q.data(), p.W_Q.size(), loss) <= tolerance);
    CHECK(worst_error(p.W_K.data(), g.params.W_K.data(), p.W_K.size(), loss) <= tolerance);
    CHECK(worst_error(p.W_V.data(), g.params.W_V.data(), p.W_V.size(), loss) <= tolerance);
    CHECK(worst_error(p.W_O.data(), g.params.W_O.data(), p.W_O.size(), loss) <= tolerance);
    // the keys' and values' share really reaches H (a backward that treats H as constant is far off)
    CHECK(nn::max_abs_of(g.dH) > 1e-2);
}

TEST_CASE("decoder_block_backward against central differences: dX, dH and all 18 parameter tensors",
          "[encoder_decoder]") {
    Rng rng(23);
    const std::size_t T_y = GENERATE(1, 4), T_x = 3, d = 4, h = 2;
    Mat X = rng.normal_mat(T_y, d), H = rng.normal_mat(T_x, d);
    nn::DecoderBlockParams p = random_decoder_block(rng, d, 6);
    const Mat causal = nn::causal_mask(T_y), G = rng.normal_mat(T_y, d);
    const auto loss = [&] { return weighted_sum(G, nn::decoder_block(X, H, p, h, causal).output); };
    nn::DecoderBlockGrads g = nn::decoder_block_backward(H, p, h, nn::decoder_block(X, H, p, h, causal), G);
    INFO("T_y = " << T_y);
    CHECK(worst_error(X.data(), g.dX.data(), X.size(), loss) <= tolerance);
    CHECK(worst_error(H.data(), g.dH.data(), H.size(), loss) <= tolerance);
    const auto params = nn::decoder_block_tensors(p), grads = nn::decoder_block_tensors(g.params);
    REQUIRE(params.size() == 18);
    for (std::size_t k = 0; k < params.size(); ++k) {
        INFO(params[k].name);
        REQUIRE(grads[k].size == params[k].size);
        CHECK(worst_error(params[k].data, grads[k].data, params[k].size, loss) <= tolerance);
    }
}

TEST_CASE("decoder_block: zero output projections make it the identity; the causal mask hides the future",
          "[encoder_decoder]") {
    Rng rng(24);
    const std::size_t d = 4, h = 2;
    const Mat X = rng.normal_mat(4, d), H = rng.normal_mat(6, d), causal = nn::causal_mask(4);
    nn::DecoderBlockParams p = random_decoder_block(rng, d, 5);
    const nn::DecoderBlockForward f = nn::decoder_block(X, H, p, h, causal);
    // self-attention weights above the diagonal are 0, cross-attention's all positive
    for (std::size_t k = 0; k < h; ++k)
        for (std::size_t i = 0; i < 4; ++i) {
            for (std::size_t j = i + 1; j < 4; ++j) CHECK(f.self_attention.weights(k, i, j) == 0.0);
            for (std::size_t j = 0; j < 6; ++j) CHECK(f.cross.weights(k, i, j) > 0.0);
        }
    // changing the last token changes no earlier output row
    Mat X2 = X;
    X2(3, 0) += 1.0;
    const nn::DecoderBlockForward f2 = nn::decoder_block(X2, H, p, h, causal);
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t c = 0; c < d; ++c) CHECK(f2.output(i, c) == f.output(i, c));
    CHECK(std::abs(f2.output(3, 0) - f.output(3, 0)) > 0.1);
    p.self_attention.W_O = nn::zeros(d, d);
    p.cross_attention.W_O = nn::zeros(d, d);
    p.feed_forward.W_2 = nn::zeros(d, 5);
    p.feed_forward.b_2 = nn::zeros(d);
    CHECK(nn::max_abs_of(Mat(nn::decoder_block(X, H, p, h, causal).output - X)) == 0.0);
}

TEST_CASE("encoder_decoder_backward against central differences on every trained tensor", "[encoder_decoder]") {
    Rng rng(25);
    nn::EncoderDecoder m = random_model(rng, 7, 6, 4, 2);
    const std::vector<std::size_t> src = {3, 0, 5, 5, 1}, in = {0, 2, 4}, out = {2, 4, 1};
    nn::EncoderDecoder grads = nn::zeros_like(m);
    check_every_tensor(m, src, in, out, grads);
    // a word that is not in the sentence gets no gradient; one that is, does
    for (std::size_t c = 0; c < 4; ++c) CHECK(grads.E_src(2, c) == 0.0);
    CHECK(nn::max_abs_of(nn::row_of(grads.E_src, 5)) > 1e-3);
    // gradients add up: a second pass doubles them
    nn::EncoderDecoder twice = grads;
    nn::encoder_decoder_backward(m, src, in, out, twice);
    CHECK(twice.W_o(1, 2) == 2.0 * grads.W_o(1, 2));
}

TEST_CASE("encoder_decoder with learned positions: gradients of P_src and P_tgt by central differences, rows "
          "past the sentence untouched, too long a sentence refused",
          "[encoder_decoder]") {
    Rng rng(27);
    nn::EncoderDecoder m = random_model(rng, 7, 6, 4, 2);
    m.P_src = rng.normal_mat(8, 4, 0.5);
    m.P_tgt = rng.normal_mat(5, 4, 0.5);
    const std::vector<std::size_t> src = {3, 0, 5, 5, 1}, in = {0, 2, 4}, out = {2, 4, 1};
    nn::EncoderDecoder grads = nn::zeros_like(m);
    nn::encoder_decoder_backward(m, src, in, out, grads);
    const auto loss = [&] { return nn::encoder_decoder_forward(m, src, in, out).loss; };
    const auto params = nn::named_tensors(m), g = nn::named_tensors(grads);
    REQUIRE(params.size() == 2 + 2 + 12 + 2 + 2 * 18 + 2 + 2);
    REQUIRE(params[2].name == "P_src");
    REQUIRE(params[3].name == "P_tgt");
    for (std::size_t k = 2; k < 4; ++k) {
        INFO(params[k].name);
        CHECK(worst_error(params[k].data, g[k].data, params[k].size, loss) <= tolerance);
    }
    // positions 5..7 of the source and 3..4 of the target were not used: no gradient; used ones have one
    for (std::size_t c = 0; c < 4; ++c) {
        CHECK(grads.P_src(6, c) == 0.0);
        CHECK(grads.P_tgt(4, c) == 0.0);
    }
    CHECK(nn::max_abs_of(nn::row_of(grads.P_src, 4)) > 1e-3);
    // the positions are what the model adds: the sinusoids in P give the sinusoidal model's loss exactly
    nn::EncoderDecoder sinusoidal = m;
    sinusoidal.P_src = Mat();
    sinusoidal.P_tgt = Mat();
    m.P_src = nn::sinusoidal_encoding(8, 4);
    m.P_tgt = nn::sinusoidal_encoding(5, 4);
    CHECK(nn::encoder_decoder_forward(m, src, in, out).loss ==
          nn::encoder_decoder_forward(sinusoidal, src, in, out).loss);
    const std::vector<std::size_t> long_src(9, 2);
    CHECK_THROWS_WITH(nn::encoder_decoder_forward(m, long_src, in, out),
                      Catch::Contains("a sequence of 9 tokens is longer than the 8 positions learned"));
}

TEST_CASE("encoder_decoder: causal in the target, greedy decoding is the teacher-forced argmax of its own words",
          "[encoder_decoder]") {
    Rng rng(26);
    const nn::EncoderDecoder m = random_model(rng, 7, 6, 4, 2);
    const std::vector<std::size_t> src = {3, 0, 5, 2};
    const auto a = nn::encoder_decoder_forward(m, src, {0, 2, 4, 3}, {2, 4, 3, 1});
    const auto b = nn::encoder_decoder_forward(m, src, {0, 2, 4, 5}, {2, 4, 5, 1});
    CHECK(a.predicted[0] == b.predicted[0]);
    for (std::size_t k = 0; k < 2; ++k)
        for (std::size_t i = 0; i < 3; ++i)
            for (std::size_t j = 0; j < 4; ++j) CHECK(a.cross_weights[k](0, i, j) == b.cross_weights[k](0, i, j));
    const std::vector<std::size_t> words = nn::encoder_decoder_greedy(m, src, 0, 1, 6);
    std::vector<std::size_t> in = {0}, out = words;
    in.insert(in.end(), words.begin(), words.end());
    out.push_back(1);
    const auto pass = nn::encoder_decoder_forward(m, src, in, out);
    for (std::size_t i = 0; i < words.size(); ++i) CHECK(pass.predicted[i] == words[i]);
    if (words.size() < 6) CHECK(pass.predicted[words.size()] == 1);  // it stopped at <eos>
}

// ---------------------------------------------------------------- positions in the scores (lesson 15's race)

// Multi-head self-attention with RoPE or ALiBi from the definitions, in long double: head i's queries and
// keys X W^Q and X W^K on its columns, turned pair by pair (2a, 2a + 1) by t / 10000^(2a/d_k) under RoPE,
// the scores divided by sqrt(d_k), minus m_i |t - s| under ALiBi (m_i = 2^(-8(i+1)/h)), the future
// hidden when causal, a softmax, the values, then W^O.
std::vector<std::vector<long double>> positioned_oracle(const Mat& X, const nn::MultiHeadParams& p, std::size_t h,
                                                        nn::PositionScheme scheme, bool causal) {
    const std::size_t T = X.shape(0), d = X.shape(1), d_k = d / h;
    const auto project = [&](const Mat& W, std::size_t t, std::size_t c) {
        long double s = 0.0L;
        for (std::size_t a = 0; a < d; ++a) s += static_cast<long double>(X(t, a)) * W(a, c);
        return s;
    };
    // the turned query or key of head `head` at position t, coordinate c of the head
    const auto turned = [&](const Mat& W, std::size_t head, std::size_t t) {
        std::vector<long double> v(d_k);
        for (std::size_t c = 0; c < d_k; ++c) v[c] = project(W, t, head * d_k + c);
        if (scheme != nn::PositionScheme::rope) return v;
        for (std::size_t a = 0; a < d_k / 2; ++a) {
            const long double angle = static_cast<long double>(t) / std::pow(10000.0L, 2.0L * a / static_cast<long double>(d_k));
            const long double x = v[2 * a], y = v[2 * a + 1];
            v[2 * a] = x * std::cos(angle) - y * std::sin(angle);
            v[2 * a + 1] = x * std::sin(angle) + y * std::cos(angle);
        }
        return v;
    };
    std::vector<std::vector<long double>> concat(T, std::vector<long double>(d, 0.0L));
    for (std::size_t head = 0; head < h; ++head) {
        const long double slope = std::pow(2.0L, -8.0L * static_cast<long double>(head + 1) / static_cast<long double>(h));
        for (std::size_t i = 0; i < T; ++i) {
            const std::vector<long double> q = turned(p.W_Q, head, i);
            std::vector<long double> w(T, 0.0L);
            long double total = 0.0L;
            for (std::size_t j = 0; j < T; ++j) {
                if (causal && j > i) continue;
                const std::vector<long double> k = turned(p.W_K, head, j);
                long double s = 0.0L;
                for (std::size_t c = 0; c < d_k; ++c) s += q[c] * k[c];
                s /= std::sqrt(static_cast<long double>(d_k));
                if (scheme == nn::PositionScheme::alibi) s -= slope * std::abs(static_cast<long double>(i) - j);
                total += (w[j] = std::exp(s));
            }
            for (std::size_t c = 0; c < d_k; ++c)
                for (std::size_t j = 0; j < T; ++j) concat[i][head * d_k + c] += w[j] / total * project(p.W_V, j, head * d_k + c);
        }
    }
    std::vector<std::vector<long double>> out(T, std::vector<long double>(d, 0.0L));
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t c = 0; c < d; ++c)
            for (std::size_t a = 0; a < d; ++a) out[i][c] += concat[i][a] * p.W_O(a, c);
    return out;
}

TEST_CASE("positioned_self_attention against its definition in long double: RoPE and ALiBi, causal and both ways, "
          "two pairs per head",
          "[encoder_decoder]") {
    Rng rng(45);
    const std::size_t T = 6, d = 8, h = 2;
    const Mat X = rng.normal_mat(T, d);
    const nn::MultiHeadParams p = random_attention(rng, d, 0.8);
    for (const nn::PositionScheme scheme : {nn::PositionScheme::rope, nn::PositionScheme::alibi})
        for (const bool causal : {false, true}) {
            INFO(nn::position_scheme_name(scheme) << (causal ? ", causal" : ", both ways"));
            const nn::MultiHeadResult r = nn::positioned_self_attention(X, p, h, scheme, causal);
            const auto expected = positioned_oracle(X, p, h, scheme, causal);
            double worst = 0.0;
            for (std::size_t i = 0; i < T; ++i)
                for (std::size_t c = 0; c < d; ++c)
                    worst = std::max(worst, static_cast<double>(std::abs(r.output(i, c) - expected[i][c])));
            CHECK(worst <= 1e-12);
            // the positions matter: without them (the same weights, no mask) the output moves well past rounding
            const nn::MultiHeadResult bare = nn::positioned_self_attention(X, p, h, nn::PositionScheme::none, causal);
            CHECK(nn::max_abs_of(Mat(bare.output - r.output)) > 1e-3);
        }
    // RoPE's transpose undoes it, and moves a gradient as <R g, x> = <g, R^T x> says
    const Mat G = rng.normal_mat(T, 4), Y = rng.normal_mat(T, 4);
    CHECK(nn::max_abs_of(Mat(nn::rotary_rotation_transposed(nn::rotary_rotation(G, std::size_t{0})) - G)) <= 1e-15);
    double left = 0.0, right = 0.0;
    const Mat RG = nn::rotary_rotation(G, std::size_t{0}), RtY = nn::rotary_rotation_transposed(Y);
    for (std::size_t k = 0; k < G.size(); ++k) left += RG.data()[k] * Y.data()[k], right += G.data()[k] * RtY.data()[k];
    CHECK(std::abs(left - right) <= 1e-13);
    // the encoder's ALiBi bias is the causal one's mirror image
    const Mat B = nn::symmetric_alibi_bias(5, 0.25), C = nn::alibi_bias(5, 0.25);
    for (std::size_t i = 0; i < 5; ++i)
        for (std::size_t j = 0; j < 5; ++j) CHECK(B(i, j) == (j <= i ? C(i, j) : C(j, i)));
}

TEST_CASE("encoder_decoder with RoPE, ALiBi and no positions in the decoder: backward against central differences on "
          "every trained tensor",
          "[encoder_decoder]") {
    const std::vector<std::size_t> src = {3, 0, 5, 5, 1}, in = {0, 2, 4, 4}, out = {2, 4, 4, 1};
    for (const nn::PositionScheme scheme : {nn::PositionScheme::rope, nn::PositionScheme::alibi, nn::PositionScheme::none}) {
        INFO(nn::position_scheme_name(scheme));
        Rng rng(46);
        nn::EncoderDecoder m = random_model(rng, 7, 6, 8, 2);  // d_k = 4: two pairs per head
        m.positions = scheme;
        nn::EncoderDecoder grads = nn::zeros_like(m);
        CHECK(grads.positions == scheme);
        const double L = check_every_tensor(m, src, in, out, grads);
        // the model differs from the one whose positions are added: the scheme is used, not ignored
        nn::EncoderDecoder added = m;
        added.positions = nn::PositionScheme::added;
        CHECK(std::abs(nn::encoder_decoder_forward(added, src, in, out).loss - L) > 1e-6);
        // and its decoder stays causal: a later word changes no earlier prediction
        const Mat H = nn::encoder_output(m, src);
        const Mat a = nn::decoder_probabilities(m, H, {0, 2, 4, 4}), b = nn::decoder_probabilities(m, H, {0, 2, 4, 3});
        double last = 0.0;
        for (std::size_t j = 0; j < 6; ++j) {
            for (std::size_t i = 0; i < 3; ++i) CHECK(a(i, j) == b(i, j));
            last = std::max(last, std::abs(a(3, j) - b(3, j)));
        }
        CHECK(last > 1e-6);
    }
}

TEST_CASE("position schemes: `none` is the sinusoids in the encoder and nothing in the decoder, to the bit; what "
          "cannot take RoPE or ALiBi refuses it by name",
          "[encoder_decoder]") {
    Rng rng(47);
    nn::EncoderDecoder m = random_model(rng, 7, 6, 4, 2);
    const std::vector<std::size_t> src = {3, 0, 5, 5, 1}, in = {0, 2, 4}, out = {2, 4, 1};
    nn::EncoderDecoder none = m, tables = m;
    none.positions = nn::PositionScheme::none;
    tables.P_src = nn::sinusoidal_encoding(5, 4);
    tables.P_tgt = nn::zeros(3, 4);
    CHECK(nn::encoder_decoder_forward(none, src, in, out).loss == nn::encoder_decoder_forward(tables, src, in, out).loss);
    // RoPE needs an even head width: d = 4 over 4 heads is 1
    nn::EncoderDecoder odd = m;
    odd.heads = 4;
    odd.positions = nn::PositionScheme::rope;
    CHECK_THROWS_WITH(nn::encoder_decoder_forward(odd, src, in, out), Catch::Contains("d_k = d_model / h must be even, got 1"));
    nn::EncoderDecoder rope = m;
    rope.positions = nn::PositionScheme::rope;
    CHECK_THROWS_WITH(nn::encoder_decoder_batch_losses(rope, {{src, in, out}}),
                      Catch::Contains("a model whose positions are rope"));
    nn::DecodingWork work;
    CHECK_THROWS_WITH(nn::start_decoder_cache(rope, nn::encoder_output(rope, src), work),
                      Catch::Contains("this one's are rope"));
    rope.P_src = nn::sinusoidal_encoding(5, 4);
    CHECK_THROWS_WITH(nn::encoder_decoder_forward(rope, src, in, out),
                      Catch::Contains("a learned position table in a model whose positions are rope"));
}

// A batch of pairs of these source and decoder lengths, words drawn from the vocabularies.
std::vector<nn::TeacherForcedPair> random_batch(Rng& rng, const std::vector<std::size_t>& src_lengths,
                                                const std::vector<std::size_t>& tgt_lengths, std::size_t V_src,
                                                std::size_t V_tgt) {
    std::vector<nn::TeacherForcedPair> batch;
    const auto word = [&](std::size_t V) { return std::min(V - 1, static_cast<std::size_t>(rng.uniform() * V)); };
    for (std::size_t s = 0; s < src_lengths.size(); ++s) {
        nn::TeacherForcedPair p;
        for (std::size_t t = 0; t < src_lengths[s]; ++t) p.src.push_back(word(V_src));
        p.dec_in.push_back(0);
        for (std::size_t t = 0; t < tgt_lengths[s]; ++t) p.dec_out.push_back(word(V_tgt));
        p.dec_in.insert(p.dec_in.end(), p.dec_out.begin(), p.dec_out.end() - 1);
        batch.push_back(p);
    }
    return batch;
}

// The largest |a - b| over every trained tensor, and the largest |b|.
std::pair<double, double> gradient_gap(nn::EncoderDecoder& a, nn::EncoderDecoder& b) {
    const auto x = nn::blocks(a), y = nn::blocks(b);
    REQUIRE(x.size() == y.size());
    double gap = 0.0, size = 0.0;
    for (std::size_t k = 0; k < x.size(); ++k)
        for (std::size_t i = 0; i < x[k].size; ++i) {
            gap = std::max(gap, std::abs(x[k].data[i] - y[k].data[i]));
            size = std::max(size, std::abs(y[k].data[i]));
        }
    return {gap, size};
}

TEST_CASE("the stacked batch: every sentence's loss and the per-sentence gradients' sum to rounding, the same "
          "bytes on 1, 2 and 3 threads",
          "[encoder_decoder]") {
    Rng rng(29);
    // lengths 1 (a one-word source, a decoder that reads <sos> only) beside longer ones, so that a
    // sentence attending to its neighbours' rows, positions counted from the stack's first row or a
    // causal mask over the whole stack change the losses
    const std::vector<std::size_t> src_lengths = {5, 1, 3, 7, 2}, tgt_lengths = {3, 1, 4, 2, 6};
    for (const bool learned : {false, true}) {
        INFO((learned ? "learned positions" : "sinusoidal positions"));
        nn::EncoderDecoder m = random_model(rng, 7, 6, 8, 2);
        if (learned) m.P_src = rng.normal_mat(8, 8, 0.5), m.P_tgt = rng.normal_mat(8, 8, 0.5);
        const auto batch = random_batch(rng, src_lengths, tgt_lengths, 7, 6);
        // each loss as encoder_decoder_forward computes it, to rounding: the online softmax of the fast path
        // against the lessons' two-pass one, a few ulp per weight through some twenty operations, so 1e-12 of
        // a loss of order 1 to 10 has a margin of a thousand; a sentence that read its neighbours' rows, or
        // positions counted from the stack's first row, would move it by more than 1e-3
        const std::vector<double> losses = nn::encoder_decoder_batch_losses(m, batch);
        REQUIRE(losses.size() == batch.size());
        nn::EncoderDecoder one_by_one = nn::zeros_like(m);
        double total = 0.0;
        for (std::size_t s = 0; s < batch.size(); ++s) {
            const double alone = nn::encoder_decoder_forward(m, batch[s].src, batch[s].dec_in, batch[s].dec_out).loss;
            CHECK(std::abs(losses[s] - alone) <= 1e-12 * alone);
            total += nn::encoder_decoder_backward(m, batch[s].src, batch[s].dec_in, batch[s].dec_out, one_by_one).loss;
        }
        double stacked_loss = 0.0;
        nn::EncoderDecoder stacked = nn::encoder_decoder_batch_gradient(m, batch, stacked_loss);
        CHECK(std::abs(stacked_loss - total) <= 1e-12 * total);
        // the sentences' order in the stack is the order of their losses: a batch reversed has them reversed
        std::vector<nn::TeacherForcedPair> reversed(batch.rbegin(), batch.rend());
        const std::vector<double> backwards = nn::encoder_decoder_batch_losses(m, reversed);
        for (std::size_t s = 0; s < batch.size(); ++s) CHECK(backwards[batch.size() - 1 - s] == losses[s]);
        // the gradient sums the same terms in another order: each entry adds tens of terms of the
        // size of the largest, so rounding leaves it within 1e-15 of it; 1e-12 gives a margin of 1000,
        // and leaving one sentence out is off by a share of the gradient itself
        const auto [gap, size] = gradient_gap(stacked, one_by_one);
        CHECK(size > 0.1);
        CHECK(gap <= 1e-12 * size);
        double fewer_loss = 0.0;
        nn::EncoderDecoder fewer = nn::encoder_decoder_batch_gradient(m, {batch.begin(), batch.end() - 1}, fewer_loss);
        CHECK(gradient_gap(fewer, one_by_one).first > 1e3 * 1e-12 * size);
        // shaped like the model, tensor by tensor
        const auto names = nn::named_tensors(m), got = nn::named_tensors(stacked);
        REQUIRE(got.size() == names.size());
        for (std::size_t k = 0; k < names.size(); ++k) CHECK(got[k].shape == names[k].shape);
    }
    // bad batches are refused by name
    const nn::EncoderDecoder m = random_model(rng, 7, 6, 8, 2);
    double loss = 0.0;
    CHECK_THROWS_WITH(nn::encoder_decoder_batch_gradient(m, {}, loss), Catch::Contains("no sentence pair"));
    CHECK_THROWS_WITH(nn::encoder_decoder_batch_gradient(m, {{{3}, {0, 2}, {2}}}, loss),
                      Catch::Contains("as many decoder outputs as inputs"));
    CHECK_THROWS_WITH(nn::encoder_decoder_batch_gradient(m, {{{3}, {0, 2}, {2, 6}}}, loss),
                      Catch::Contains("target 6 is not among the 6 words"));
    CHECK_THROWS_WITH(nn::encoder_decoder_batch_gradient(m, {{{}, {0}, {1}}}, loss), Catch::Contains("a source word"));

    // threads: at d_model = 64 and 16 pairs each product and each layer's heads are past for_each_row's
    // threshold, so 2 and 3 threads split them; the bytes are those of 1, in both arithmetics
    const nn::EncoderDecoder wide = random_model(rng, 20, 20, 64, 4);
    std::vector<std::size_t> src16, tgt16;
    for (std::size_t s = 0; s < 16; ++s) src16.push_back(4 + (s * 7) % 9), tgt16.push_back(3 + (s * 5) % 8);
    const auto batch = random_batch(rng, src16, tgt16, 20, 20);
    for (const nn::Arithmetic arithmetic : {nn::Arithmetic::portable, nn::Arithmetic::native}) {
        const nn::ScopedArithmetic products(arithmetic);
        std::vector<nn::EncoderDecoder> grads;
        std::vector<double> losses;
        for (const std::size_t threads : {1, 2, 3}) {
            const nn::ScopedThreads split(threads);
            losses.push_back(0.0);
            grads.push_back(nn::encoder_decoder_batch_gradient(wide, batch, losses.back()));
        }
        for (std::size_t k = 1; k < grads.size(); ++k) {
            INFO("threads " << k + 1 << (arithmetic == nn::Arithmetic::native ? ", native" : ", portable"));
            CHECK(losses[k] == losses[0]);
            const auto x = nn::blocks(grads[k]), y = nn::blocks(grads[0]);
            bool same = x.size() == y.size();
            for (std::size_t b = 0; same && b < x.size(); ++b)
                same = x[b].size == y[b].size && std::memcmp(x[b].data, y[b].data, x[b].size * sizeof(double)) == 0;
            CHECK(same);
        }
    }
}

TEST_CASE("warmup_learning_rate against d^-0.5 min(s^-0.5, s w^-1.5) in long double, s from 1",
          "[encoder_decoder]") {
    const std::size_t d = 32, w = 100;
    const auto oracle = [&](long double s) {
        return std::min(1.0L / std::sqrt(s), s / (w * std::sqrt(static_cast<long double>(w)))) /
               std::sqrt(static_cast<long double>(d));
    };
    for (std::size_t s : {1u, 2u, 50u, 99u, 100u, 101u, 400u, 10000u})
        CHECK_THAT(nn::warmup_learning_rate(s, d, w), Catch::WithinRel(static_cast<double>(oracle(s)), 1e-15));
    // the peak is at s = w, d^-0.5 w^-0.5; the first step is not 0
    CHECK(nn::warmup_learning_rate(100, d, w) > nn::warmup_learning_rate(99, d, w));
    CHECK(nn::warmup_learning_rate(100, d, w) > nn::warmup_learning_rate(101, d, w));
    CHECK(nn::warmup_learning_rate(1, d, w) > 0.0);
    CHECK_THROWS_AS(nn::warmup_learning_rate(0, d, w), std::invalid_argument);
}

// The entries whose bits differ.
std::size_t differing_bits(const Vec& a, const Vec& b) {
    std::size_t n = 0;
    for (std::size_t j = 0; j < a.size(); ++j) n += std::memcmp(&a(j), &b(j), sizeof(double)) != 0;
    return n;
}

TEST_CASE("the aligned causal mask: bottom right for a cache, the square mask when T_q = T_k", "[decoding]") {
    CHECK(bool(nn::shifted_causal_mask(4, 4, 0) == nn::causal_mask(4)));
    const Mat m = nn::shifted_causal_mask(2, 5, 3);  // queries at positions 4 and 5 of 5
    for (std::size_t j = 0; j < 5; ++j) {
        CHECK(m(0, j) == (j <= 3 ? 0.0 : -std::numeric_limits<double>::infinity()));
        CHECK(m(1, j) == 0.0);
    }
}

TEST_CASE("kv_cache_step one query at a time gives the rows of full causal attention, to the bit", "[decoding]") {
    Rng rng(31);
    const std::size_t T = 6, d_k = 3, d_v = 2;
    const Mat Q = rng.normal_mat(T, d_k, 1.0), K = rng.normal_mat(T, d_k, 1.0), V = rng.normal_mat(T, d_v, 1.0);
    const Mat full = nn::matmul(nn::masked_softmax(nn::matmul(Q, nn::transposed(K), "Q K^T"), nn::causal_mask(T)), V,
                                "A V");
    nn::KVCache cache{nn::zeros(0, d_k), nn::zeros(0, d_v)};
    for (std::size_t t = 0; t < T; ++t) {
        const nn::AttentionResult r =
            nn::kv_cache_step(cache, nn::rows_of(Q, t, t + 1), nn::rows_of(K, t, t + 1), nn::rows_of(V, t, t + 1));
        CHECK(cache.K.shape(0) == t + 1);
        CHECK(differing_bits(nn::row_of(r.output, 0), nn::row_of(full, t)) == 0);
    }
    CHECK(bool(cache.K == K));
    CHECK(bool(cache.V == V));
    // three at once after three cached: the bottom-right mask gives the last three rows
    nn::KVCache half{nn::rows_of(K, 0, 3), nn::rows_of(V, 0, 3)};
    const nn::AttentionResult r = nn::kv_cache_step(half, nn::rows_of(Q, 3, 6), nn::rows_of(K, 3, 6), nn::rows_of(V, 3, 6));
    for (std::size_t i = 0; i < 3; ++i) CHECK(differing_bits(nn::row_of(r.output, i), nn::row_of(full, 3 + i)) == 0);
}

TEST_CASE("the cached decoder step equals the uncached pass's last row to the bit, and counts its work",
          "[decoding]") {
    Rng rng(32);
    nn::EncoderDecoder m = random_model(rng, 7, 6, 4, 2);
    const bool learned = GENERATE(false, true);
    if (learned) m.P_tgt = rng.normal_mat(5, 4, 0.5);
    const std::vector<std::size_t> src = {3, 0, 5, 2}, words = {0, 2, 4, 3, 5};
    const Mat H = nn::encoder_output(m, src);
    nn::DecodingWork once;
    nn::DecoderCache cache = nn::start_decoder_cache(m, H, once);
    CHECK(once.multiply_adds == 2.0 * 2 * 4 * 4 * 4);  // two blocks' keys and values: 2 L T_x d^2
    for (std::size_t t = 0; t < words.size(); ++t) {
        nn::DecodingWork w;
        const Vec cached = nn::cached_decoder_step(m, cache, words[t], w);
        const std::vector<std::size_t> in(words.begin(), words.begin() + static_cast<long>(t) + 1);
        const Mat P = nn::decoder_probabilities(m, H, in);
        CHECK(differing_bits(cached, nn::row_of(P, t)) == 0);
        // the attention of step t+1: 2 L d (t + 1 + T_x)
        CHECK(w.attention == 2.0 * 2 * 4 * (static_cast<double>(t + 1) + 4.0));
    }
    CHECK(nn::cache_bytes(cache) == 8.0 * 2 * 2 * 4 * 5);  // 2 L d doubles per token
    if (learned) {
        nn::DecodingWork w;
        CHECK_THROWS_AS(nn::cached_decoder_step(m, cache, 1, w), ShapeError);  // a sixth position, five learned
    }
}

TEST_CASE("beam search: width 1 is greedy decoding; a wide beam finds the most likely of all short outputs",
          "[decoding]") {
    Rng rng(33);
    const nn::EncoderDecoder m = random_model(rng, 7, 3, 4, 2);
    const std::vector<std::size_t> src = {3, 0, 5, 2};
    const Mat H = nn::encoder_output(m, src);
    const std::vector<nn::Hypothesis> one = nn::beam_search(m, H, 0, 1, 1, 4, 0.0);
    std::vector<std::size_t> words = one[0].words;
    if (one[0].finished) words.pop_back();
    CHECK(words == nn::encoder_decoder_greedy(m, src, 0, 1, 4));
    // with V = 3 (<sos> 0, <eos> 1, one word 2) and two words at most, the outputs are few: <eos>,
    // 2 <eos>, 0 <eos>, ... Every one scored by the uncached pass; a beam as wide as all candidates
    // (9) keeps every hypothesis, so its best is the best of them all
    double best = -std::numeric_limits<double>::infinity();
    for (std::size_t a = 0; a < 3; ++a) {
        const Mat P1 = nn::decoder_probabilities(m, H, {0});
        if (a == 1) {
            best = std::max(best, std::log(P1(0, 1)));
            continue;
        }
        const Mat P2 = nn::decoder_probabilities(m, H, {0, a});
        for (std::size_t b = 0; b < 3; ++b) {
            if (b == 1) {
                best = std::max(best, std::log(P1(0, a)) + std::log(P2(1, 1)));
                continue;
            }
            best = std::max(best, std::log(P1(0, a)) + std::log(P2(1, b)));  // stopped at two words
        }
    }
    const std::vector<nn::Hypothesis> wide = nn::beam_search(m, H, 0, 1, 9, 2, 0.0);
    CHECK_THAT(wide[0].log_prob, Catch::WithinAbs(best, 1e-12));
    CHECK(nn::length_penalty(7, 0.0) == 1.0);
    CHECK_THAT(nn::length_penalty(7, 1.0), Catch::WithinRel(2.0, 1e-15));  // (5 + 7) / 6
}


TEST_CASE("bleu: Papineni et al.'s examples, the limits and a bad corpus", "[decoding]") {
    // Papineni et al. 2002, section 2.1: "the the the the the the the" against "the cat is on the mat"
    // (the = 0, cat = 1, is = 2, on = 3, mat = 4): modified unigram precision 2/7, and no bigram at all
    const nn::BleuScore seven = nn::bleu({{0, 0, 0, 0, 0, 0, 0}}, {{0, 1, 2, 3, 0, 4}});
    CHECK(seven.matches[0] == 2.0);
    CHECK(seven.precisions[0] == 2.0 / 7.0);
    CHECK(seven.precisions[1] == 0.0);
    CHECK(seven.brevity_penalty == 1.0);  // 7 words against 6
    CHECK(seven.bleu == 0.0);             // no bigram matches: 0, not NaN
    // a perfect translation scores 1; the empty candidate 0 with BP 0
    const std::vector<std::vector<std::size_t>> refs = {{0, 1, 2, 3, 0, 4}, {5, 6, 7, 8}};
    CHECK(nn::bleu(refs, refs).bleu == 1.0);
    const nn::BleuScore empty = nn::bleu({{}}, {{0, 1}});
    CHECK(empty.brevity_penalty == 0.0);
    CHECK(empty.bleu == 0.0);
    CHECK(nn::bleu({}, {}).bleu == 0.0);
    // a corpus's BLEU depends on its pairs, not on their order
    const std::vector<std::vector<std::size_t>> cands = {{0, 1, 2, 3, 4}, {5, 6, 7, 9, 8}};
    const std::vector<std::vector<std::size_t>> cands_swapped = {cands[1], cands[0]}, refs_swapped = {refs[1], refs[0]};
    CHECK(nn::bleu(cands, refs).bleu == nn::bleu(cands_swapped, refs_swapped).bleu);
    CHECK_THROWS_AS(nn::bleu({{0}}, {}), ShapeError);
}

TEST_CASE("decoder_only keeps the decoder's self-attention, LN_1, LN_3 and network and drops the cross-attention",
          "[encoder_decoder]") {
    Rng rng(41);
    const nn::EncoderDecoder m = random_model(rng, 7, 6, 4, 2);
    const nn::LanguageModel lm = nn::decoder_only(m);
    REQUIRE(lm.blocks.size() == 2);
    CHECK(lm.heads == 2);
    for (std::size_t l = 0; l < 2; ++l) {
        CHECK(lm.blocks[l].attention.W_K == m.decoder[l].self_attention.W_K);
        CHECK(lm.blocks[l].norm_1.gain == m.decoder[l].norm_1.gain);
        CHECK(lm.blocks[l].norm_2.bias == m.decoder[l].norm_3.bias);  // LN_3 becomes the block's second norm
        CHECK(lm.blocks[l].feed_forward.W_2 == m.decoder[l].feed_forward.W_2);
    }
    CHECK(lm.E == m.E_tgt);
    CHECK(lm.W_o == m.W_o);
    // 1 (E) + 2 blocks of 12 + the last norm's 2 + W_o, b_o
    nn::LanguageModel copy = lm;
    CHECK(nn::named_tensors(copy).size() == 1 + 24 + 2 + 2);
}

// The step and tolerance are this file's (fd_step, tolerance above): the loss is a sum of about 5
// log-probabilities of order 1, where h = 1e-6 keeps truncation near 1e-12 and rounding near 1e-9.
TEST_CASE("language_model_backward against central differences on every trained tensor, learned positions "
          "included; gradients add up",
          "[encoder_decoder]") {
    Rng rng(42);
    nn::LanguageModel lm = nn::decoder_only(random_model(rng, 7, 6, 4, 2));
    lm.P = rng.normal_mat(6, 4, 0.5);
    const std::vector<std::size_t> in = {0, 2, 4, 3, 2}, out = {2, 4, 3, 2, 1};
    nn::LanguageModel grads = nn::zeros_like(lm);
    const double L = nn::language_model_backward(lm, in, out, grads);
    const auto loss = [&] { return nn::language_model_forward(lm, in, out).loss; };
    CHECK(L == loss());
    const auto params = nn::named_tensors(lm), g = nn::named_tensors(grads);
    REQUIRE(params.size() == 1 + 1 + 24 + 2 + 2);
    for (std::size_t k = 0; k < params.size(); ++k) {
        INFO(params[k].name);
        CHECK(worst_error(params[k].data, g[k].data, params[k].size, loss) <= tolerance);
        CHECK(std::any_of(g[k].data, g[k].data + g[k].size, [](double x) { return x != 0.0; }));  // not a zero tensor
    }
    // word 5 never appears: its embedding gets nothing; position 6 is past the sentence
    for (std::size_t c = 0; c < 4; ++c) CHECK(grads.E(5, c) == 0.0);
    for (std::size_t c = 0; c < 4; ++c) CHECK(grads.P(5, c) == 0.0);
    nn::LanguageModel twice = grads;
    nn::language_model_backward(lm, in, out, twice);
    CHECK(twice.W_o(1, 2) == 2.0 * grads.W_o(1, 2));
}

TEST_CASE("the language model is causal: position t's distribution does not read later words; bad inputs refused",
          "[encoder_decoder]") {
    Rng rng(43);
    const nn::LanguageModel lm = nn::decoder_only(random_model(rng, 7, 6, 4, 2));
    const Mat a = nn::next_word_probabilities(lm, {0, 2, 4, 3}), b = nn::next_word_probabilities(lm, {0, 2, 4, 5});
    for (std::size_t t = 0; t < 3; ++t)
        for (std::size_t j = 0; j < 6; ++j) CHECK(a(t, j) == b(t, j));
    CHECK(nn::max_abs_of(nn::row_of(Mat(a - b), 3)) > 1e-6);
    const nn::LanguageModelPass pass = nn::language_model_forward(lm, {0, 2}, {2, 1});
    CHECK_THAT(pass.loss, Catch::WithinRel(-std::log(a(0, 2)) - std::log(a(1, 1)), 1e-14));
    CHECK_THROWS_AS(nn::next_word_probabilities(lm, {}), ShapeError);
    CHECK_THROWS_WITH(nn::language_model_forward(lm, {0, 2}, {2, 6}), Catch::Contains("word 6"));
    CHECK_THROWS_AS(nn::language_model_forward(lm, {0, 2}, {2}), ShapeError);
    nn::LanguageModel grads = nn::zeros_like(lm);
    CHECK_THROWS_AS(nn::language_model_backward(lm, {0, 2}, {2, 9}, grads), ShapeError);
}

TEST_CASE("bleu_by_bins: each bin's BLEU, the whole corpus's, and the bins' counts pooled", "[bleu]") {
    // four sentences in bins 0, 2, 0, 2 (bin 1 empty); two systems: the references themselves, and one
    // that drops each sentence's last word
    const std::vector<std::vector<std::size_t>> refs = {{1, 2, 3, 4, 5}, {6, 7, 8, 9}, {1, 3, 5, 7, 9}, {2, 4, 6, 8}};
    std::vector<std::vector<std::size_t>> shorter = refs;
    for (auto& s : shorter) s.pop_back();
    const std::vector<std::size_t> bins = {0, 2, 0, 2};
    const nn::BleuByBins b = nn::bleu_by_bins({refs, shorter}, refs, bins, 3);
    REQUIRE(b.scores.shape(0) == 4);
    REQUIRE(b.scores.shape(1) == 2);
    CHECK(b.scores(0, 0) == 100.0);
    CHECK(b.scores(3, 0) == 100.0);
    CHECK(b.scores(1, 0) == 0.0);  // no sentence in bin 1
    CHECK(b.scores(0, 1) == 100.0 * nn::bleu({shorter[0], shorter[2]}, {refs[0], refs[2]}).bleu);
    CHECK(b.scores(3, 1) == 100.0 * nn::bleu(shorter, refs).bleu);
    CHECK(b.scores(3, 1) < 100.0);
    CHECK(b.counts(0) == 2.0);
    CHECK(b.counts(1) == 0.0);
    CHECK(b.counts(2) == 2.0);
    CHECK(b.pooling_gap == 0.0);
    CHECK_THROWS_WITH(nn::bleu_by_bins({refs}, refs, {0, 3, 0, 2}, 3), Catch::Contains("bin 3 of 3"));
    CHECK_THROWS_WITH(nn::bleu_by_bins({refs}, refs, {0, 1}, 3), Catch::Contains("2 bins for 4 sentences"));
}

}  // namespace test_encoder_decoder
