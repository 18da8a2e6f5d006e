// The Transformer's parts (nn/layer_norm.hpp, nn/transformer.hpp, the backwards of the
// feed-forward network and of multi-head attention in nn/unroll.hpp and nn/backward.hpp) against
// independent computations: the layer norm against its equation in long double, every backward
// against central finite differences of L = sum(G * output) with a fixed random G, the identities
// of the layer norm's Jacobian, the pre-LN identity with zero output projections, dropout's mean.
// T = tokens, d = width, h = heads, d_ff = hidden width of the feed-forward network.
#include "core/rng.hpp"
#include "exercises/cases.hpp"
#include "nn/backward.hpp"
#include "nn/finite_differences.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linalg.hpp"
#include "nn/positional.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/transformer.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <vector>

// Everything of this file in a namespace of its own (the test program is built as unity files).
namespace test_transformer {

using namespace attn;

namespace {

// The finite-difference step and tolerance, as in test_backward.cpp: at h = 1e-6 the truncation
// error h^2 L''' / 6 stays below 1e-11 for these losses of order 1 to 10, rounding leaves about
// eps |L| / h ~ 1e-9, and 1e-7 relative to max(1, |numeric|) is four orders of magnitude below a
// dropped term (the mean's path of the layer norm is off by the size of the gradient itself).
constexpr double fd_step = 1e-6;
constexpr double tolerance = 1e-7;

template <class Tensor>
double weighted_sum(const Tensor& G, const Tensor& Y) {
    REQUIRE(shape_of(G) == shape_of(Y));
    double L = 0.0;
    for (std::size_t k = 0; k < Y.size(); ++k) L += G.data()[k] * Y.data()[k];
    return L;
}

template <class Tensor, class Loss>
void check_gradient(const char* name, Tensor& x, const Tensor& analytic, const Loss& loss) {
    const Tensor numeric = nn::central_differences(x, loss, fd_step);
    INFO(name);
    CHECK(nn::gradient_error(analytic, numeric) <= tolerance);
}

nn::LayerNormParams random_norm(Rng& rng, std::size_t d) {
    return {Vec(1.0 + 0.3 * rng.normal_vec(d)), rng.normal_vec(d, 0.3), 1e-5};
}

// A block whose gains and biases are not 1 and 0, so that a gradient that forgets them shows.
nn::BlockParams random_block(Rng& rng, std::size_t d, std::size_t d_ff) {
    const double s = 1.0 / std::sqrt(static_cast<double>(d));
    nn::BlockParams p;
    p.norm_1 = random_norm(rng, d);
    p.attention = {rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s)};
    p.norm_2 = random_norm(rng, d);
    p.feed_forward = {rng.normal_mat(d_ff, d, s), rng.normal_vec(d_ff, 0.1), rng.normal_mat(d, d_ff, s),
                      rng.normal_vec(d, 0.1)};
    return p;
}

// The layer norm of one row from its definition, in long double: biased variance, eps inside the root.
std::vector<long double> layer_norm_oracle(const std::vector<long double>& x, const Vec& g, const Vec& b, double eps) {
    const long double d = static_cast<long double>(x.size());
    long double mu = 0.0L, var = 0.0L;
    for (auto v : x) mu += v;
    mu /= d;
    for (auto v : x) var += (v - mu) * (v - mu);
    var /= d;
    std::vector<long double> y;
    for (std::size_t j = 0; j < x.size(); ++j) y.push_back(g(j) * (x[j] - mu) / std::sqrt(var + eps) + b(j));
    return y;
}

}  // namespace

TEST_CASE("layer_norm: every row against its equation in long double", "[transformer]") {
    Rng rng(11);
    const std::size_t d = GENERATE(1, 2, 5);
    const Mat X = rng.normal_mat(3, d, 2.0) + 1.5;
    const nn::LayerNormParams p = random_norm(rng, d);
    const nn::LayerNormResult r = nn::layer_norm(X, p.gain, p.bias, p.eps);
    for (std::size_t t = 0; t < 3; ++t) {
        std::vector<long double> row;
        for (std::size_t j = 0; j < d; ++j) row.push_back(X(t, j));
        const auto y = layer_norm_oracle(row, p.gain, p.bias, p.eps);
        for (std::size_t j = 0; j < d; ++j) CHECK_THAT(r.output(t, j), Catch::WithinAbs(static_cast<double>(y[j]), 1e-14));
        // the mean of x^ is 0 and its biased variance sigma^2 / (sigma^2 + eps), just under 1
        double mean = 0.0, var = 0.0;
        for (std::size_t j = 0; j < d; ++j) mean += r.normalized(t, j) / static_cast<double>(d);
        for (std::size_t j = 0; j < d; ++j) var += r.normalized(t, j) * r.normalized(t, j) / static_cast<double>(d);
        CHECK_THAT(mean, Catch::WithinAbs(0.0, 1e-15));
        CHECK_THAT(var, Catch::WithinAbs(r.variance(t) / (r.variance(t) + p.eps), 1e-14));
    }
}

TEST_CASE("layer_norm: a constant row becomes the bias, and eps keeps it finite", "[transformer]") {
    const Mat X = {{3.0, 3.0, 3.0}};
    const Vec g = {2.0, 2.0, 2.0}, b = {0.5, -1.0, 0.0};
    const nn::LayerNormResult r = nn::layer_norm(X, g, b, 1e-5);
    CHECK(r.variance(0) == 0.0);
    for (std::size_t j = 0; j < 3; ++j) CHECK(r.output(0, j) == b(j));
}

TEST_CASE("layer_norm_backward against central differences, and its two identities", "[transformer]") {
    Rng rng(12);
    const std::size_t T = 3, d = GENERATE(2, 6);
    Mat X = rng.normal_mat(T, d) * 1.7 + 0.4;
    nn::LayerNormParams p = random_norm(rng, d);
    p.eps = 0.05;  // large, so that the eps term of dx . x^ is far from 0
    const Mat G = rng.normal_mat(T, d);
    const auto loss = [&] { return weighted_sum(G, Mat(nn::layer_norm(X, p.gain, p.bias, p.eps).output)); };
    const nn::LayerNormResult f = nn::layer_norm(X, p.gain, p.bias, p.eps);
    const nn::LayerNormGrads g = nn::layer_norm_backward(f, p.gain, G);
    check_gradient("dX", X, g.dX, loss);
    check_gradient("dgain", p.gain, g.dgain, loss);
    check_gradient("dbias", p.bias, g.dbias, loss);
    for (std::size_t t = 0; t < T; ++t) {
        double sum = 0.0, along = 0.0, dn_n = 0.0;
        for (std::size_t j = 0; j < d; ++j) {
            sum += g.dX(t, j);
            along += g.dX(t, j) * f.normalized(t, j);
            dn_n += g.dnormalized(t, j) * f.normalized(t, j);
        }
        CHECK_THAT(sum, Catch::WithinAbs(0.0, 1e-13));
        const double eps_term = f.inv_std(t) * dn_n * p.eps / (f.variance(t) + p.eps);
        CHECK(std::abs(eps_term) > 1e-3);  // the term is really there at this eps
        CHECK_THAT(along, Catch::WithinAbs(eps_term, 1e-13));
    }
}

TEST_CASE("position_wise_feed_forward_backward against central differences", "[transformer]") {
    Rng rng(13);
    Mat H = rng.normal_mat(4, 3);
    nn::FeedForward g{rng.normal_mat(5, 3), rng.normal_vec(5, 0.3), rng.normal_mat(2, 5), rng.normal_vec(2)};
    const Mat G = rng.normal_mat(4, 2);
    const auto loss = [&] { return weighted_sum(G, nn::position_wise_feed_forward(g, H)); };
    const nn::FeedForwardGrads d = nn::position_wise_feed_forward_backward(g, H, G);
    check_gradient("dH", H, d.dH, loss);
    check_gradient("dW_1", g.W_1, d.params.W_1, loss);
    check_gradient("db_1", g.b_1, d.params.b_1, loss);
    check_gradient("dW_2", g.W_2, d.params.W_2, loss);
    check_gradient("db_2", g.b_2, d.params.b_2, loss);
}

TEST_CASE("multi_head_self_attention_backward against central differences", "[transformer]") {
    Rng rng(14);
    const std::size_t T = 4, d = 6, h = GENERATE(1, 2, 3);
    const bool causal = GENERATE(false, true);
    const Mat mask = nn::causal_mask(T);
    Mat X = rng.normal_mat(T, d);
    nn::MultiHeadParams p{rng.normal_mat(d, d, 0.6), rng.normal_mat(d, d, 0.6), rng.normal_mat(d, d, 0.6),
                          rng.normal_mat(d, d, 0.6)};
    const Mat G = rng.normal_mat(T, d);
    const Mat* m = causal ? &mask : nullptr;
    const auto loss = [&] { return weighted_sum(G, nn::multi_head_attention(X, X, p, h, m).output); };
    const nn::MultiHeadGrads g = nn::multi_head_self_attention_backward(X, p, h, nn::multi_head_attention(X, X, p, h, m), G);
    check_gradient("dX", X, g.dX, loss);
    check_gradient("dW_Q", p.W_Q, g.params.W_Q, loss);
    check_gradient("dW_K", p.W_K, g.params.W_K, loss);
    check_gradient("dW_V", p.W_V, g.params.W_V, loss);
    check_gradient("dW_O", p.W_O, g.params.W_O, loss);
}

TEST_CASE("transformer_block_backward: every parameter and the input, both kinds, with and without the mask",
          "[transformer]") {
    Rng rng(15);
    const std::size_t T = GENERATE(1, 4), d = 4, d_ff = 6, h = 2;
    const nn::BlockKind kind = GENERATE(nn::BlockKind::pre_ln, nn::BlockKind::post_ln);
    const bool causal = GENERATE(false, true);
    const Mat mask = nn::causal_mask(T);
    const Mat* m = causal ? &mask : nullptr;
    Mat X = rng.normal_mat(T, d);
    nn::BlockParams p = random_block(rng, d, d_ff);
    const Mat G = rng.normal_mat(T, d);
    const auto loss = [&] { return weighted_sum(G, nn::transformer_block(kind, X, p, h, m).output); };
    const nn::BlockForward f = nn::transformer_block(kind, X, p, h, m);
    nn::BlockGrads g = nn::transformer_block_backward(kind, X, p, h, m, f, G);
    INFO(nn::block_kind_name(kind) << (causal ? ", causal" : "") << ", T = " << T);
    check_gradient("dX", X, g.dX, loss);
    const auto params = nn::block_tensors(p), grads = nn::block_tensors(g.params);
    REQUIRE(params.size() == 12);
    for (std::size_t k = 0; k < params.size(); ++k) {
        INFO(params[k].name);
        REQUIRE(grads[k].size == params[k].size);
        double worst = 0.0;
        for (std::size_t e = 0; e < params[k].size; ++e) {
            const double numeric = nn::central_difference(params[k].data[e], loss, fd_step);
            worst = std::max(worst, std::abs(numeric - grads[k].data[e]) / std::max(1.0, std::abs(numeric)));
        }
        CHECK(worst <= tolerance);
    }
}

TEST_CASE("a pre-LN block with zero output projections is exactly the identity; post-LN is not",
          "[transformer]") {
    Rng rng(16);
    const Mat X = rng.normal_mat(5, 6);
    nn::BlockParams p = random_block(rng, 6, 8);
    p.attention.W_O = nn::zeros(6, 6);
    p.feed_forward.W_2 = nn::zeros(6, 8);
    p.feed_forward.b_2 = nn::zeros(6);
    const nn::BlockForward pre = nn::pre_ln_block(X, p, 3, nullptr);
    CHECK(nn::max_abs_of(Mat(pre.output - X)) == 0.0);
    const nn::BlockForward post = nn::post_ln_block(X, p, 3, nullptr);
    CHECK(nn::max_abs_of(Mat(post.output - X)) > 0.1);
}

TEST_CASE("the pre-LN block's wiring: residual sums of the stream, sub-layers on its norm", "[transformer]") {
    Rng rng(17);
    const Mat X = rng.normal_mat(3, 4);
    const nn::BlockParams p = random_block(rng, 4, 5);
    const nn::BlockForward f = nn::pre_ln_block(X, p, 2, nullptr);
    const Mat n1 = nn::layer_norm(X, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps).output;
    const Mat h = X + nn::multi_head_attention(n1, n1, p.attention, 2).output;
    const Mat n2 = nn::layer_norm(h, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps).output;
    const Mat y = h + nn::position_wise_feed_forward(p.feed_forward, n2);
    CHECK(nn::max_abs_of(Mat(f.output - y)) == 0.0);
    // and the post-LN block ends in a norm: every row has mean b's mean when g = 1 (here g is not 1,
    // so check x^ instead)
    const nn::BlockForward post = nn::post_ln_block(X, p, 2, nullptr);
    for (std::size_t t = 0; t < 3; ++t) CHECK_THAT(nn::sum_of(nn::row_of(post.norm_2.normalized, t)), Catch::WithinAbs(0.0, 1e-14));
}

TEST_CASE("transformer_stack_backward against central differences, two blocks of each kind", "[transformer]") {
    Rng rng(18);
    const std::size_t T = 3, d = 4, h = 2;
    const nn::BlockKind kind = GENERATE(nn::BlockKind::pre_ln, nn::BlockKind::post_ln);
    std::vector<nn::BlockParams> blocks = {random_block(rng, d, 5), random_block(rng, d, 5)};
    const nn::LayerNormParams final_norm = random_norm(rng, d);
    const Mat mask = nn::causal_mask(T);
    Mat X = rng.normal_mat(T, d);
    const Mat G = rng.normal_mat(T, d);
    const auto loss = [&] { return weighted_sum(G, nn::transformer_stack(kind, X, blocks, final_norm, h, &mask).output); };
    const nn::StackForward f = nn::transformer_stack(kind, X, blocks, final_norm, h, &mask);
    const nn::StackGrads g = nn::transformer_stack_backward(kind, X, blocks, final_norm, h, &mask, f, G);
    INFO(nn::block_kind_name(kind));
    check_gradient("dX", X, g.dX, loss);
    check_gradient("dW_Q of block 1", blocks[0].attention.W_Q, g.blocks[0].attention.W_Q, loss);
    check_gradient("dW_1 of block 2", blocks[1].feed_forward.W_1, g.blocks[1].feed_forward.W_1, loss);
}

TEST_CASE("transformer_inputs: embeddings times sqrt(d_model) plus the positions", "[transformer]") {
    const Mat table = {{1.0, 0.0, -1.0, 2.0}, {0.5, 0.5, 0.5, 0.5}};
    const Mat X = nn::transformer_inputs(table, {1, 0, 1});
    const Mat PE = nn::sinusoidal_encoding(3, 4);
    CHECK(X(0, 0) == 0.5 * 2.0 + PE(0, 0));
    CHECK(X(1, 3) == 2.0 * 2.0 + PE(1, 3));
    CHECK(X(2, 1) == 0.5 * 2.0 + PE(2, 1));
}

TEST_CASE("inverted_dropout: kept units scaled by 1 / (1 - p), dropped ones 0, the mean kept", "[transformer]") {
    const Mat X = {{1.0, -2.0}, {4.0, 0.5}};
    const Mat keep = {{1.0, 0.0}, {0.0, 1.0}};
    const Mat Y = nn::inverted_dropout(X, keep, 0.5);
    CHECK(Y(0, 0) == 2.0);
    CHECK(Y(0, 1) == 0.0);
    CHECK(Y(1, 1) == 1.0);
    CHECK(nn::max_abs_of(Mat(nn::inverted_dropout(X, nn::ones(2, 2), 0.0) - X)) == 0.0);
    CHECK_THROWS_AS(nn::inverted_dropout(X, keep, 1.0), std::invalid_argument);
    // the mean over many masks: within 5 standard errors of x
    Rng rng(19);
    const double p = 0.3;
    const std::size_t n = 20000;
    double total = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        const Mat m = {{rng.uniform() >= p ? 1.0 : 0.0}};
        total += nn::inverted_dropout(Mat{{1.0}}, m, p)(0, 0);
    }
    const double standard_error = std::sqrt(p / (1.0 - p) / static_cast<double>(n));
    CHECK(std::abs(total / static_cast<double>(n) - 1.0) < 5.0 * standard_error);
}

TEST_CASE("the reference passes the unit cases of layer-norm, layer-norm-backward and pre-ln-block",
          "[transformer]") {
    for (const char* id : {"layer-norm", "layer-norm-backward", "pre-ln-block"}) {
        const UnitCheck check = check_unit_cases(id, Tolerance{});
        INFO(id << ": " << check.report);
        CHECK(check.cases >= 2);
        CHECK(check.passed == check.cases);
    }
}

}  // namespace test_transformer
