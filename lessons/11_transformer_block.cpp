// Lesson 11: the Transformer block assembled from the course's parts. Layer norm and its backward
// pass, the residual connection, the stack's inputs, the block in its two placements of the norm
// (post-LN, Vaswani et al. 2017; pre-LN, Xiong et al. 2020) and its backward pass, stacks of up to
// L_max blocks at initialisation, and dropout.
// T = tokens, d_model = model width, h = heads, d_ff = hidden width of the feed-forward network,
// L = blocks in a stack, V = vocabulary, p = dropout probability.
#include "registry.hpp"
#include "support.hpp"

#include "core/portable_math.hpp"
#include "core/rng.hpp"
#include "nn/backward.hpp"
#include "nn/finite_differences.hpp"
#include "nn/layer_norm.hpp"
#include "nn/linalg.hpp"
#include "nn/positional.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/transformer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace attn {

namespace transformer_block {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d_model{"d_model", 8, 2, 128, "width of the model (even: the sinusoidal positions pair sines and cosines)"};
const Param heads{"heads", 2, 1, 8, "attention heads h; must divide d_model"};
const Param d_ff{"d_ff", 16, 1, 512, "hidden width of the position-wise feed-forward network"};
const Param T{"T", 6, 1, 16, "tokens of the sentence (the first T words of a 16-word sentence)"};
const Param L_max{"L_max", 32, 1, 512, "deepest stack of step [depth]; a power of two (the depths double up to it)"};
const Param samples{"samples", 3, 1, 16, "entries per parameter tensor checked by central differences in step [block-backward]"};
const Param masks{"masks", 4000, 100, 100000, "dropout masks drawn in step [dropout]"};
const Param p_percent{"p_percent", 10, 0, 90, "dropout probability p, in percent (the paper's base model: 10)"};
}  // namespace param

std::string limits(const Config& c) {
    if (auto why = even(c, param::d_model); !why.empty()) return why;
    if (auto why = divisible(c, param::d_model, param::heads, 1); !why.empty()) return why;
    if (auto why = power_of_two(c, param::L_max, "the depths of step [depth] double up to it"); !why.empty()) return why;
    // the deepest stacks of step [depth]: every block's parameters, their gradients and its forward tensors
    const double d = as_double(c.size(param::d_model)), d_ff = as_double(c.size(param::d_ff));
    const double T = as_double(c.size(param::T)), h = as_double(c.size(param::heads));
    const double per_block = 2.0 * (4.0 * d * d + 2.0 * d * d_ff + 4.0 * d) + 12.0 * T * d + h * T * T + T * d_ff;
    return memory_limit(as_double(c.size(param::L_max)) * per_block, "lesson 11");
}

// The multiply-adds of one block's forward pass: T (4 d_model^2 + 2 d_model d_ff + 2 T d_model).
double block_work(const Config& c) {
    const double d = as_double(c.size(param::d_model)), T = as_double(c.size(param::T));
    return T * (4.0 * d * d + 2.0 * d * as_double(c.size(param::d_ff)) + 2.0 * T * d);
}

// In block forwards: the depth study's 2 (2 L_max - 1) blocks forward and backward (about three
// forwards each), and step [block-backward]'s two forwards per sampled entry, 13 tensors, 4 variants.
double forwards(const Config& c) {
    return 6.0 * (2.0 * as_double(c.size(param::L_max)) - 1.0) + 104.0 * as_double(c.size(param::samples));
}

// Seconds per unit on this project's 2-core machine (user time, at a load average of several
// hundred): samples=16 with d_model=128, d_ff=512, T=16 (6.6e9 multiply-adds in blocks) took 12.6 s,
// 1.9e-9 s a unit; L_max=256 with d_model=64, d_ff=256, T=16 (2.8e9) 2.7 s; 1e8 dropout draws about
// 1 s. About 2.5 and 2 times those on the safe side; the defaults take a few hundredths of a second.
TimeEstimate time_estimate(const Config& c) {
    const double work = forwards(c) * block_work(c);
    const double draws = as_double(c.size(param::masks)) * as_double(c.size(param::T) * c.size(param::d_model));
    return {0.3 + 5e-9 * work + 2e-8 * draws, "lesson 11",
            fmt::format("{:.3g} multiply-adds in blocks, {:.3g} dropout draws", work, draws),
            {{&param::L_max, 1.0}, {&param::d_model, 2.0}, {&param::d_ff, 1.0}, {&param::T, 1.0},
             {&param::samples, 1.0}, {&param::masks, 1.0}}};
}

const std::vector<std::string> words = {"the", "cat", "sat",  "on",   "the",  "mat", "and", "the",
                                        "dog", "slept", "by", "the",  "door", "all", "day", "long"};

// The vocabulary: every distinct word of the sentence once, in order of first use.
std::vector<std::string> vocabulary() {
    std::vector<std::string> v;
    for (const auto& w : words)
        if (std::find(v.begin(), v.end(), w) == v.end()) v.push_back(w);
    return v;
}

std::vector<std::size_t> token_ids(std::size_t T) {
    const auto vocab = vocabulary();
    std::vector<std::size_t> ids;
    for (std::size_t t = 0; t < T; ++t)
        ids.push_back(static_cast<std::size_t>(std::find(vocab.begin(), vocab.end(), words[t]) - vocab.begin()));
    return ids;
}

std::vector<std::string> tokens(std::size_t T) { return {words.begin(), words.begin() + static_cast<long>(T)}; }

// ---------------------------------------------------------------- tolerances and small measures

constexpr double eps64 = std::numeric_limits<double>::epsilon();

// Two forms of one quantity summed in different orders agree to a few roundings of numbers of
// order 1; a real mistake is of the size of the quantity itself.
constexpr double rounding = 1e-12;

// The finite-difference step and the tolerance of a gradient check (as lesson 8): |analytic -
// numeric| / max(1, |numeric|) <= 100 eps max(1, S) (layers + 1) / h, where S = sum |G_ij Y_ij|
// bounds the size of the terms whose rounding the two losses' difference keeps, and every block a
// perturbation passes through adds its own roundings.
constexpr double fd_step = 1e-6;
double fd_tolerance(double terms, std::size_t layers) {
    return 100.0 * eps64 * std::max(1.0, terms) * as_double(layers + 1) / fd_step;
}

// The truncation of a central difference, h^2 L''' / 6, where a layer norm sits on the way: each
// derivative of its x^ brings a factor r = 1 / sqrt(sigma^2 + eps), so L''' grows like r^3 times the
// size of the loss's gradient, up to 1 / sqrt(eps)^3 = 3e7 for a row whose spread is below eps (a
// row of two almost equal entries at d_model = 2). Negligible for rows of unit spread (r about 1).
double truncation(double r_max, double gradient_size) {
    return fd_step * fd_step * r_max * r_max * r_max * std::max(1.0, gradient_size);
}

double largest_inv_std(const nn::BlockForward& f) { return std::max(nn::max_of(f.norm_1.inv_std), nn::max_of(f.norm_2.inv_std)); }

double sum_abs(const Mat& M) {
    double total = 0.0;
    for (double v : M) total += std::abs(v);
    return total;
}

template <class Tensor>
double inner(const Tensor& a, const Tensor& b) {
    double total = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k) total += a.data()[k] * b.data()[k];
    return total;
}

// sum_ij |G_ij Y_ij|: the size of the terms of L = <G, Y>.
double absolute_terms(const Mat& G, const Mat& Y) {
    double total = 0.0;
    for (std::size_t k = 0; k < G.size(); ++k) total += std::abs(G.data()[k] * Y.data()[k]);
    return total;
}

double frobenius(const Mat& M) { return std::sqrt(inner(M, M)); }

// The biased variance (1/d) of every row, computed here on its own: what the layer norm must use.
Vec row_variances(const Mat& X) {
    Vec out = nn::zeros(X.shape(0));
    const double d = as_double(X.shape(1));
    for (std::size_t t = 0; t < X.shape(0); ++t) {
        double mean = 0.0, squares = 0.0;
        for (std::size_t j = 0; j < X.shape(1); ++j) mean += X(t, j);
        mean /= d;
        for (std::size_t j = 0; j < X.shape(1); ++j) squares += (X(t, j) - mean) * (X(t, j) - mean);
        out(t) = squares / d;
    }
    return out;
}

Vec row_means(const Mat& X) { return nn::row_sums(X) / as_double(X.shape(1)); }

std::vector<std::string> doubling_labels(const std::string& name, std::size_t last) {
    std::vector<std::string> out;
    for (std::size_t n = 1; n <= last; n *= 2) out.push_back(name + "=" + std::to_string(n));
    return out;
}

// ---------------------------------------------------------------- drawing a block

constexpr double layer_norm_eps = 1e-5;  // as PyTorch's default

nn::LayerNormParams fresh_norm(std::size_t d) { return {nn::ones(d), nn::zeros(d), layer_norm_eps}; }

// A block at initialisation: gains 1 and biases 0, as every implementation starts; projections
// N(0, 1/d_model) and the second layer of the network N(0, 1/d_ff), so that each product keeps its
// input's scale (the variance of a sum of n products is n times theirs).
nn::BlockParams draw_block(Rng& rng, std::size_t d, std::size_t d_ff) {
    const double s = 1.0 / std::sqrt(as_double(d)), s_ff = 1.0 / std::sqrt(as_double(d_ff));
    nn::BlockParams p;
    p.norm_1 = fresh_norm(d);
    p.attention.W_Q = rng.normal_mat(d, d, s);
    p.attention.W_K = rng.normal_mat(d, d, s);
    p.attention.W_V = rng.normal_mat(d, d, s);
    p.attention.W_O = rng.normal_mat(d, d, s);
    p.norm_2 = fresh_norm(d);
    p.feed_forward = {rng.normal_mat(d_ff, d, s), nn::zeros(d_ff), rng.normal_mat(d, d_ff, s_ff), nn::zeros(d)};
    return p;
}

// ---------------------------------------------------------------- central differences across ReLU kinks

// A loss and the sides of every ReLU unit it passed through.
struct Probe {
    double loss;
    std::vector<char> on;  // 1 where a unit's input was > 0
};

// Which ReLU units of a block's network were on: the signs of H W_1^T + b_1 for its input H.
void add_relu_pattern(std::vector<char>& on, nn::BlockKind kind, const nn::BlockForward& f, const nn::FeedForward& g) {
    const Mat& input = kind == nn::BlockKind::pre_ln ? f.norm_2.output : f.norm_1.output;
    const Mat pre = nn::matmul(input, nn::transposed(g.W_1), "H W_1^T") + g.b_1;
    for (double a : pre) on.push_back(a > 0.0 ? 1 : 0);
}

// dL/dx by a central difference, or nothing when x +- h moves a ReLU unit across its kink: the
// difference then measures neither side's slope (the analytic gradient takes one side).
std::optional<double> kink_free_difference(double& x, const std::function<Probe()>& probe, const Probe& here) {
    const double saved = x, up = saved + fd_step, down = saved - fd_step;
    x = up;
    const Probe above = probe();
    x = down;
    const Probe below = probe();
    x = saved;
    if (above.on != here.on || below.on != here.on) return std::nullopt;
    return (above.loss - below.loss) / (up - down);
}

// ---------------------------------------------------------------- step [layer-norm]

// Rows of very different offsets and scales, the last almost constant (sigma^2 near eps).
Mat layer_norm_input(Rng& rng, std::size_t T, std::size_t d) {
    Mat X = rng.normal_mat(T, d);
    for (std::size_t t = 0; t < T; ++t) {
        const double scales[] = {1.0 / 3.0, 1.0, 3.0, 9.0};
        const double scale = t + 1 == T ? 3e-3 : scales[t % 4];
        const double offset = 2.0 * static_cast<double>(t) - 3.0;
        for (std::size_t j = 0; j < d; ++j) X(t, j) = offset + scale * X(t, j);
    }
    return X;
}

struct NormProblem {
    Mat X;
    nn::LayerNormParams p;
    nn::LayerNormResult r;
};

// Per row: the mean of x^, its variance, and what the formula predicts, sigma^2 / (sigma^2 + eps).
Mat normalised_statistics(const nn::LayerNormResult& r, const Vec& variance, double eps) {
    const Vec means = row_means(r.normalized), variances = row_variances(r.normalized);
    Mat out = nn::zeros(r.normalized.shape(0), 3);
    for (std::size_t t = 0; t < out.shape(0); ++t)
        out(t, 0) = means(t), out(t, 1) = variances(t), out(t, 2) = variance(t) / (variance(t) + eps);
    return out;
}

// The tolerance of "x_hat has mean 0": mu carries about d roundings of the row's largest entry,
// which every x^_j inherits times r; four times that.
double mean_tolerance(const NormProblem& n) {
    double worst = 0.0;
    for (std::size_t t = 0; t < n.X.shape(0); ++t)
        worst = std::max(worst, n.r.inv_std(t) * nn::max_abs_of(nn::row_of(n.X, t)));
    return 4.0 * as_double(n.X.shape(1)) * eps64 * worst + rounding;
}

// The tolerance of LN(x + c) = LN(x): x + c rounds to within eps |x + c| / 2 per entry, which the
// norm divides by sqrt(sigma^2 + eps) and multiplies by the gain; 16 such roundings.
double shift_tolerance(const NormProblem& n, double c) {
    return 16.0 * eps64 * (std::abs(c) + nn::max_abs_of(n.X)) * nn::max_of(n.r.inv_std) * nn::max_abs_of(n.p.gain);
}

// Step [layer-norm]: mean, biased variance, eps inside the root, gain and bias, row by row.
NormProblem record_layer_norm(Trace& trace, Rng& rng, std::size_t T, std::size_t d) {
    NormProblem n{trace.input("X", layer_norm_input(rng, T, d)), {}, {}};
    n.p = {trace.input("g", Vec(1.0 + 0.1 * rng.normal_vec(d))), trace.input("b", rng.normal_vec(d, 0.1)), 1e-5};
    n.r = nn::layer_norm(n.X, n.p.gain, n.p.bias, n.p.eps);
    const double shift = 100.0;
    const Mat shifted = nn::layer_norm(Mat(n.X + shift), n.p.gain, n.p.bias, n.p.eps).output;
    const Mat stats = normalised_statistics(n.r, row_variances(n.X), n.p.eps);
    trace.step("layer-norm", "Layer normalisation, row by row",
               "mu_t = (1/d) sum_j x_tj,  sigma_t^2 = (1/d) sum_j (x_tj - mu_t)^2,  "
               "y_t = g * (x_t - mu_t) / sqrt(sigma_t^2 + eps) + b",
               fmt::format(
                   "Ba et al. (2016, eqs. 3-4) normalise over the units of one layer for one example, where batch "
                   "normalisation normalises one unit over a batch. In a Transformer a row is one token's vector, "
                   "so each token is centred by its own mean and divided by its own standard deviation, "
                   "independently of the other tokens and of the batch. The variance divides by d = {0}, not "
                   "d - 1: it is the spread of these {0} numbers, not an estimate of a population's (PyTorch's "
                   "LayerNorm does the same). eps = 1e-5 sits inside the square root, so a constant row gives "
                   "0 / sqrt(eps) = 0 instead of 0 / 0. The learned gain g and bias b (d numbers each, 1 and 0 "
                   "at initialisation; drawn near them here so that they show) give the layer back any scale "
                   "and offset it needs.\n"
                   "The normalised rows x^ have mean 0, but their variance is sigma^2 / (sigma^2 + eps), not 1: "
                   "eps is added under the root, so every x^ is a little smaller than (x - mu) / sigma. The "
                   "shortfall is eps / (sigma^2 + eps): 1e-5 for a row of unit spread, but in the last, almost "
                   "constant row (sigma^2 = "
                   "{1:.3g}, of the order of eps), whose normalised variance is {2:.3f}. Adding a constant c to "
                   "a row moves its mean by c and nothing else, so LN(x + c) = LN(x) in exact arithmetic; here "
                   "x + {3:g} rounds each entry to the spacing of doubles near {3:g}, which the norm then "
                   "magnifies by 1 / sigma.",
                   d, n.r.variance(T - 1), stats(T - 1, 1), shift));
    trace.tensor("X", "one row per token: offsets and scales differ, the last row almost constant", n.X, tokens(T));
    trace.parameter("g", "gain, d; near 1", n.p.gain);
    trace.parameter("b", "bias, d; near 0", n.p.bias);
    trace.tensor("mu", "mean of each row", n.r.mean, tokens(T));
    trace.tensor("sigma2", "biased variance of each row, (1/d) sum_j (x_tj - mu_t)^2", n.r.variance, tokens(T));
    trace.tensor("x_hat", "(x_t - mu_t) / sqrt(sigma_t^2 + eps)", n.r.normalized, tokens(T));
    trace.tensor("Y", "g * x_hat + b", n.r.output, tokens(T));
    trace.tensor("x_hat_statistics", "per row: mean of x_hat, its variance, sigma^2 / (sigma^2 + eps)", stats, tokens(T),
                 std::vector<std::string>{"mean", "variance", "predicted"});
    trace.check("every row of x_hat has mean 0", nn::max_abs_of(nn::column_of(stats, 0)), mean_tolerance(n));
    trace.check("the variance of x_hat is sigma^2 / (sigma^2 + eps) with the biased sigma^2 (not 1)",
                nn::max_abs_of(Vec(nn::column_of(stats, 1) - nn::column_of(stats, 2))), rounding);
    trace.check("sigma2 is the biased variance, (1/d) sum_j (x_tj - mu_t)^2",
                nn::max_abs_of(Vec(n.r.variance - row_variances(n.X))), rounding * (1.0 + nn::max_of(n.r.variance)));
    trace.check(fmt::format("LN(x + {:g}) = LN(x), to the rounding of x + {:g}", shift, shift),
                nn::max_abs_of(Mat(shifted - n.r.output)), shift_tolerance(n, shift));
    return n;
}

// ---------------------------------------------------------------- step [layer-norm-backward]

// dL/dX, dL/dg, dL/db of L = <G, LN(X)> by central differences.
struct NumericNormGrads {
    Mat dX;
    Vec dgain, dbias;
};

// dX is taken at the centred rows x - mu: the same gradient (a layer norm does not see a shift,
// step [layer-norm]), without losing the nudges to the rounding of a row's offset.
NumericNormGrads numeric_norm_grads(NormProblem n, const Mat& G) {
    const auto loss = [&] { return inner(G, Mat(nn::layer_norm(n.X, n.p.gain, n.p.bias, n.p.eps).output)); };
    const Vec dgain = nn::central_differences(n.p.gain, loss, fd_step), dbias = nn::central_differences(n.p.bias, loss, fd_step);
    for (std::size_t t = 0; t < n.X.shape(0); ++t)
        for (std::size_t j = 0; j < n.X.shape(1); ++j) n.X(t, j) -= n.r.mean(t);
    return {nn::central_differences(n.X, loss, fd_step), dgain, dbias};
}

// fd_tolerance plus the truncation of the central differences (see truncation).
double norm_fd_tolerance(const nn::LayerNormResult& r, double terms, const Mat& G, const Vec& gain) {
    return fd_tolerance(terms, 1) + truncation(nn::max_of(r.inv_std), sum_abs(G) * nn::max_abs_of(gain));
}

// Per row: sum_j dx_j, dx . x^, and the eps term r (dx^ . x^) eps / (sigma^2 + eps).
Mat jacobian_identities(const nn::LayerNormResult& r, const nn::LayerNormGrads& g, double eps) {
    Mat out = nn::zeros(r.normalized.shape(0), 3);
    for (std::size_t t = 0; t < out.shape(0); ++t) {
        const Vec dx = nn::row_of(g.dX, t), n = nn::row_of(r.normalized, t);
        out(t, 0) = nn::sum_of(dx);
        out(t, 1) = nn::dot(dx, n);
        out(t, 2) = r.inv_std(t) * nn::dot(nn::row_of(g.dnormalized, t), n) * eps / (r.variance(t) + eps);
    }
    return out;
}

// The gradient without the mean's path, r (dx^ - x^ mean(dx^ x^)): the usual slip.
Mat without_mean_path(const nn::LayerNormResult& r, const nn::LayerNormGrads& g) {
    Mat out = g.dX;
    for (std::size_t t = 0; t < out.shape(0); ++t) {
        const double mean = nn::sum_of(nn::row_of(g.dnormalized, t)) / as_double(out.shape(1));
        for (std::size_t j = 0; j < out.shape(1); ++j) out(t, j) += r.inv_std(t) * mean;
    }
    return out;
}

// Step [layer-norm-backward]: dx from dx^ through the mean and the variance, against central differences.
void record_layer_norm_backward(Trace& trace, Rng& rng, const NormProblem& n) {
    const std::size_t T = n.X.shape(0), d = n.X.shape(1);
    const Mat G = trace.input("G", rng.normal_mat(T, d));
    const nn::LayerNormGrads g = nn::layer_norm_backward(n.r, n.p.gain, G);
    const NumericNormGrads numeric = numeric_norm_grads(n, G);
    const Mat identities = jacobian_identities(n.r, g, n.p.eps);
    const double tol = norm_fd_tolerance(n.r, absolute_terms(G, n.r.output), G, n.p.gain);
    const Mat without_mean = without_mean_path(n.r, g);
    const double slip = nn::gradient_error(without_mean, numeric.dX);
    const double slip_absolute = nn::max_abs_of(Mat(without_mean - numeric.dX));
    trace.step("layer-norm-backward", "The layer norm's backward pass",
               "dx^ = dy * g,  dx = (dx^ - mean_j(dx^) - x^ mean_j(dx^ * x^)) / sqrt(sigma^2 + eps)",
               fmt::format(
                   "With L = sum G * Y, dL/dY = G. Through y = g * x^ + b: dx^ = dy * g, dg = sum_t dy_t * x^_t, "
                   "db = sum_t dy_t. Then x^_j = (x_j - mu) r with r = 1 / sqrt(sigma^2 + eps), and both mu and "
                   "r depend on every x_k of the row. The direct path gives r dx^_j; the mean's, since dmu/dx_k "
                   "= 1/d, gives -r mean(dx^); the variance's, since dr/dx_k = -r^3 (x_k - mu) / d, gives -r x^_j "
                   "mean(dx^ x^). Forget the mean's path and the gradient is off by r mean(dx^) in every entry: "
                   "against central differences (dX_without_mean), by up to {:.3g} here, and by {:.2g} in the "
                   "measure of the checks below, the error relative to the gradient, |dx - numeric| / max(1, "
                   "|numeric|), where the full form is within {:.1e}.\n"
                   "Two identities follow. Moving every x_j of a row by the same amount changes nothing (step "
                   "[layer-norm]), so the gradient has no component along (1, ..., 1): each row of dx sums to 0. "
                   "Stretching a row about its mean, x -> mu + (1 + a)(x - mu), would change nothing either "
                   "without eps, so dx would be orthogonal to x^; with eps the stretch does move x^ a little, and "
                   "dx . x^ = r (dx^ . x^) eps / (sigma^2 + eps), which the table computes beside the measured "
                   "product. It matters only where sigma^2 is near eps: the last row. That row also sets the "
                   "tolerance of the checks against central differences, {:.1e}: a central difference is off by "
                   "about h^2 / 6 times the third derivative, and each derivative of x^ brings a factor r, {:.0f} "
                   "there (dX is differenced at the centred rows x - mu, the same gradient, so that the nudges of "
                   "h = 1e-6 are not lost in the rounding of a row's offset).",
                   slip_absolute, slip, nn::gradient_error(g.dX, numeric.dX), tol, nn::max_of(n.r.inv_std)));
    trace.tensor("G", "dL/dY", G, tokens(T));
    trace.tensor("dx_hat", "dY * g", g.dnormalized, tokens(T));
    trace.tensor("dX", "r (dx^ - mean(dx^) - x^ mean(dx^ x^))", g.dX, tokens(T));
    trace.tensor("dX_numeric", "central differences, h = 1e-6", numeric.dX, tokens(T))
        .foreign_tolerance(tol, tol, central_difference_noise());
    trace.tensor("dX_without_mean", "r (dx^ - x^ mean(dx^ x^)): the mean's path forgotten", without_mean, tokens(T));
    trace.tensor("dg", "sum_t dy_t * x^_t", g.dgain);
    trace.tensor("db", "sum_t dy_t", g.dbias);
    const double scale = nn::max_abs_of(g.dnormalized) * nn::max_of(n.r.inv_std) * as_double(d);
    trace.tensor("identities", "per row: sum_j dx_j, dx . x^, r (dx^ . x^) eps / (sigma^2 + eps)", identities,
                 tokens(T), std::vector<std::string>{"sum dx", "dx . x^", "eps term"})
        .foreign_tolerance(0.0, rounding * scale,
                           "the first two columns are what rounding leaves of quantities that are 0 or tiny, which "
                           "right answers rounding otherwise do not share: compared at the checks' tolerance below");
    trace.check("dX matches central differences", nn::gradient_error(g.dX, numeric.dX), tol);
    trace.check("dg matches central differences", nn::gradient_error(g.dgain, numeric.dgain), tol);
    trace.check("db matches central differences", nn::gradient_error(g.dbias, numeric.dbias), tol);
    trace.check("each row of dX sums to 0", nn::max_abs_of(nn::column_of(identities, 0)), rounding * scale);
    trace.check("dX . x^ equals the eps term", nn::max_abs_of(Vec(nn::column_of(identities, 1) - nn::column_of(identities, 2))),
                rounding * scale);
}

// ---------------------------------------------------------------- step [residual]

// A position-wise network with small weights, W_1 and W_2 of Frobenius norm 0.03 each at every
// width: the sub-layer whose Jacobian is tiny (|dF/dx| <= |W_1|_F |W_2|_F = 9e-4).
constexpr double small_norm = 0.03;
nn::FeedForward small_sub_layer(Rng& rng, std::size_t d, std::size_t d_ff) {
    const Mat W_1 = rng.normal_mat(d_ff, d), W_2 = rng.normal_mat(d, d_ff);
    return {W_1 * (small_norm / frobenius(W_1)), rng.normal_vec(d_ff, 0.01), W_2 * (small_norm / frobenius(W_2)),
            nn::zeros(d)};
}

// dF/dx of the network at one token x (1 x d): J_jk, the output j's slope in input k.
Mat sub_layer_jacobian(const nn::FeedForward& g, const Mat& x) {
    const std::size_t d = x.shape(1);
    Mat J = nn::zeros(d, d);
    for (std::size_t j = 0; j < d; ++j) {
        Mat unit = nn::zeros(1, d);
        unit(0, j) = 1.0;
        nn::set_row(J, j, nn::row_of(nn::position_wise_feed_forward_backward(g, x, unit).dH, 0));
    }
    return J;
}

// The gradient reaching the input of n stacked sub-layers from dy at the top, with and without the
// shortcuts: one row per n, columns |dx| with residuals, |dx| without.
Mat gradient_through_stack(const std::vector<nn::FeedForward>& layers, const Mat& x, const Mat& dy) {
    Mat table = nn::zeros(layers.size(), 2);
    for (std::size_t n = 1; n <= layers.size(); ++n) {
        std::vector<Mat> inputs_with = {x}, inputs_without = {x};
        for (std::size_t l = 0; l < n; ++l) {
            inputs_with.push_back(inputs_with.back() + nn::position_wise_feed_forward(layers[l], inputs_with.back()));
            inputs_without.push_back(nn::position_wise_feed_forward(layers[l], inputs_without.back()));
        }
        Mat with = dy, without = dy;
        for (std::size_t l = n; l-- > 0;) {
            with = with + nn::position_wise_feed_forward_backward(layers[l], inputs_with[l], with).dH;
            without = nn::position_wise_feed_forward_backward(layers[l], inputs_without[l], without).dH;
        }
        table(n - 1, 0) = frobenius(with), table(n - 1, 1) = frobenius(without);
    }
    return table;
}

// d(x + F(x))/dx by central differences, one output at a time.
Mat residual_jacobian_numeric(const nn::FeedForward& g, const Mat& x) {
    const std::size_t d = x.shape(1);
    Mat J = nn::zeros(d, d), moved = x;
    for (std::size_t j = 0; j < d; ++j) {
        const auto output_j = [&] { return moved(0, j) + nn::position_wise_feed_forward(g, moved)(0, j); };
        nn::set_row(J, j, nn::row_of(nn::central_differences(moved, output_j, fd_step), 0));
    }
    return J;
}

// How far the gradient norms with shortcuts (column 0 of `stack`, row n - 1 for n sub-layers) leave
// the band |dy| (1 - b)^n .. |dy| (1 + b)^n, where b bounds every |dF/dx|: 0 when they stay inside.
double residual_band_excess(const Mat& stack, double b, double dy_norm) {
    double worst = 0.0, low = dy_norm, high = dy_norm;
    for (std::size_t n = 1; n <= stack.shape(0); ++n) {
        low *= 1.0 - b, high *= 1.0 + b;
        worst = std::max({worst, low - stack(n - 1, 0), stack(n - 1, 0) - high});
    }
    return worst;
}

// |W_1|_F |W_2|_F: a bound on |dF/dx| (the ReLU's slope is 0 or 1).
double jacobian_bound(const nn::FeedForward& g) { return frobenius(g.W_1) * frobenius(g.W_2); }

// Step [residual]: y = x + F(x), whose Jacobian I + dF/dx lets the gradient through.
void record_residual(Trace& trace, Rng& rng, std::size_t d, std::size_t d_ff) {
    const Mat x = trace.input("x", rng.normal_mat(1, d)), dy = trace.input("dy", rng.normal_mat(1, d));
    std::vector<nn::FeedForward> layers;
    for (int l = 0; l < 4; ++l) layers.push_back(small_sub_layer(rng, d, d_ff));
    const nn::FeedForward& F = layers.front();
    const Mat J_F = sub_layer_jacobian(F, x);
    const Mat J_y = residual_jacobian_numeric(F, x);
    const Mat dx = dy + nn::position_wise_feed_forward_backward(F, x, dy).dH;
    const Mat through_F = nn::position_wise_feed_forward_backward(F, x, dy).dH;
    const Mat stack = gradient_through_stack(layers, x, dy);
    double bound = 0.0;
    for (const auto& g : layers) bound = std::max(bound, jacobian_bound(g));
    trace.step("residual", "The residual connection",
               "y = x + F(x),  dy/dx = I + dF/dx,  dx = dy + (dF/dx)^T dy",
               fmt::format(
                   "He et al. (2016) add a layer's input to its output, so that the layer learns a correction "
                   "F(x) to the identity rather than a whole map. Differentiating y = x + F(x) gives I + dF/dx: "
                   "the gradient reaches x through the identity whatever F does. Here F is a feed-forward "
                   "sub-layer whose W_1 and W_2 have Frobenius norm 0.03, so |dF/dx| is at most {0:.1e}: on its own it passes "
                   "{1:.1e} of the gradient's length, with the shortcut {2:.4f}. Through four such sub-layers in a "
                   "row the gradient without shortcuts has shrunk to {3:.1e} of its length, with them it keeps "
                   "{4:.4f}. Lesson 5 met the same road in the GRU: h_t = u_t*h_{{t-1}} + (1-u_t)*h~_t carries the "
                   "old state to the new one, a gated shortcut; and lesson 8's step [shortcut] measured how the "
                   "gradient from the last output reaches the first word in one step through attention instead "
                   "of through every state in between. A Transformer puts a residual connection around each of "
                   "its two sub-layers (Vaswani et al. 2017, section 3.1).",
                   bound, frobenius(through_F) / frobenius(dy), frobenius(dx) / frobenius(dy),
                   stack(3, 1) / frobenius(dy), stack(3, 0) / frobenius(dy)));
    trace.tensor("x", "one token, 1 x d", x);
    trace.tensor("dy", "dL/dy, 1 x d", dy);
    trace.tensor("J_F", "dF/dx, d x d (position-wise: one token's outputs read only that token)", J_F);
    trace.tensor("J_y", "d(x + F(x))/dx by central differences: I + J_F", J_y);
    trace.tensor("dx", "dy + J_F^T dy", dx);
    trace.tensor("gradient_through_stack", "|dL/dx| after n sub-layers, with and without shortcuts", stack,
                 numbered("n=", 1, 4), std::vector<std::string>{"with", "without"});
    trace.check("J_y = I + J_F", nn::max_abs_of(Mat(J_y - nn::identity(d) - J_F)), fd_tolerance(nn::max_abs_of(x) + 1.0, 1));
    trace.check("without the shortcut, |J_F^T dy| <= |W_1|_F |W_2|_F |dy|",
                std::max(0.0, frobenius(through_F) - jacobian_bound(F) * frobenius(dy)), 0.0);
    trace.check("with shortcuts, |dx| stays within (1 +- max |W_1|_F |W_2|_F)^n |dy| through n sub-layers",
                residual_band_excess(stack, bound, frobenius(dy)), 0.0);
}

// ---------------------------------------------------------------- step [inputs]

// Per token: |e|, |e| sqrt(d_model), |PE_t| and |x_t|.
Mat input_sizes(const Mat& E, const Mat& PE, const Mat& X) {
    Mat out = nn::zeros(X.shape(0), 4);
    const double root = std::sqrt(as_double(X.shape(1)));
    for (std::size_t t = 0; t < X.shape(0); ++t) {
        out(t, 0) = nn::norm_of(nn::row_of(E, t));
        out(t, 1) = out(t, 0) * root;
        out(t, 2) = nn::norm_of(nn::row_of(PE, t));
        out(t, 3) = nn::norm_of(nn::row_of(X, t));
    }
    return out;
}

// Step [inputs]: X = E[ids] sqrt(d_model) + PE.
Mat record_inputs(Trace& trace, Rng& rng, std::size_t T, std::size_t d) {
    const auto vocab = vocabulary();
    const Mat table = trace.input("embeddings", rng.normal_mat(vocab.size(), d, 1.0 / std::sqrt(as_double(d))));
    const std::vector<std::size_t> ids = token_ids(T);
    const Mat E = nn::gather_rows(table, ids), PE = nn::sinusoidal_encoding(T, d);
    const Mat X = nn::transformer_inputs(table, ids);
    const Mat sizes = input_sizes(E, PE, X);
    const double mean_e = nn::sum_of(nn::column_of(sizes, 0)) / as_double(T);
    trace.step("inputs", "The stack's inputs: scaled embeddings plus positions",
               "x_t = E[w_t] sqrt(d_model) + PE_t",
               fmt::format(
                   "The first block reads one vector per token: the token's row of an embedding table plus the "
                   "sinusoidal position of lesson 4 (Vaswani et al. 2017, section 3.5). The table's entries are "
                   "drawn N(0, 1/d_model), the usual initialisation of a matrix that the output layer shares "
                   "(section 3.4: the same weights embed and predict), so a row has length about 1: {0:.3f} on "
                   "average here. A position row has length sqrt(d_model / 2) = {1:.3f} exactly, since each of "
                   "its d_model / 2 pairs is a sine and a cosine of one angle. Added as they are, the positions "
                   "would outweigh the words {2:.1f} to 1; section 3.4 multiplies the embeddings by sqrt(d_model) "
                   "= {3:.3f}, which brings them to about {4:.2f}, the positions' size. The two occurrences of "
                   "\"the\" share their embedding and differ by their positions only.",
                   mean_e, std::sqrt(as_double(d) / 2.0), std::sqrt(as_double(d) / 2.0) / mean_e,
                   std::sqrt(as_double(d)), mean_e * std::sqrt(as_double(d))));
    trace.parameter("embeddings", "E, V x d_model, entries N(0, 1/d_model)", table, vocab);
    trace.tensor("PE", "sinusoidal positions (lesson 4), T x d_model", PE, tokens(T));
    trace.tensor("X", "E[w_t] sqrt(d_model) + PE_t, T x d_model", X, tokens(T));
    trace.tensor("sizes", "per token: |E[w_t]|, |E[w_t]| sqrt(d_model), |PE_t|, |x_t|", sizes, tokens(T),
                 std::vector<std::string>{"|e|", "|e| sqrt(d)", "|PE|", "|x|"});
    Vec pe_excess = nn::zeros(T);
    for (std::size_t t = 0; t < T; ++t) pe_excess(t) = sizes(t, 2) * sizes(t, 2) - as_double(d) / 2.0;
    trace.check("|PE_t|^2 = d_model / 2 at every position", nn::max_abs_of(pe_excess), rounding * as_double(d));
    trace.check("X = E[w] sqrt(d_model) + PE, entry by entry",
                nn::max_abs_of(Mat(X - (E * std::sqrt(as_double(d)) + PE))), 0.0);
    return X;
}

// ---------------------------------------------------------------- step [block]

// The block with its sub-layers' output projections W^O and W_2 (and b_2) set to zero.
nn::BlockParams silenced(nn::BlockParams p) {
    const std::size_t d = p.attention.W_O.shape(0), d_ff = p.feed_forward.W_2.shape(1);
    p.attention.W_O = nn::zeros(d, d);
    p.feed_forward.W_2 = nn::zeros(d, d_ff);
    p.feed_forward.b_2 = nn::zeros(d);
    return p;
}

// The pre-LN block on one token written out: its only key is itself, so attention's weight is 1
// and MHA(n) = n W^V W^O; then y = h + FFN(LN_2(h)) with h = x + LN_1(x) W^V W^O.
Mat one_token_pre_ln(const Mat& x, const nn::BlockParams& p) {
    const Mat n_1 = nn::layer_norm(x, p.norm_1.gain, p.norm_1.bias, p.norm_1.eps).output;
    const Mat h = x + nn::matmul(nn::matmul(n_1, p.attention.W_V, "n W^V"), p.attention.W_O, "n W^V W^O");
    const Mat n_2 = nn::layer_norm(h, p.norm_2.gain, p.norm_2.bias, p.norm_2.eps).output;
    return h + nn::position_wise_feed_forward(p.feed_forward, n_2);
}

void record_block_params(Trace& trace, const nn::BlockParams& p) {
    trace.parameter("W_Q", "d_model x d_model, N(0, 1/d_model)", p.attention.W_Q);
    trace.parameter("W_K", "d_model x d_model, N(0, 1/d_model)", p.attention.W_K);
    trace.parameter("W_V", "d_model x d_model, N(0, 1/d_model)", p.attention.W_V);
    trace.parameter("W_O", "d_model x d_model, N(0, 1/d_model)", p.attention.W_O);
    trace.parameter("W_1", "d_ff x d_model, N(0, 1/d_model); b_1 = 0", p.feed_forward.W_1);
    trace.parameter("W_2", "d_model x d_ff, N(0, 1/d_ff); b_2 = 0", p.feed_forward.W_2);
}

void record_pre_ln(Trace& trace, const nn::BlockForward& f, const std::vector<std::string>& rows) {
    trace.tensor("pre.N_1", "LN_1(X), T x d_model", f.norm_1.output, rows);
    trace.tensor("pre.A", "MHA(LN_1(X)), T x d_model", f.attention.output, rows);
    trace.tensor("pre.H", "X + MHA(LN_1(X)), T x d_model", f.residual_1, rows);
    trace.tensor("pre.N_2", "LN_2(H), T x d_model", f.norm_2.output, rows);
    trace.tensor("pre.F", "FFN(LN_2(H)), T x d_model", f.feed_forward, rows);
    trace.tensor("pre.Y", "H + FFN(LN_2(H)), T x d_model", f.output, rows);
}

void record_post_ln(Trace& trace, const nn::BlockForward& f, const std::vector<std::string>& rows) {
    trace.tensor("post.A", "MHA(X), T x d_model", f.attention.output, rows);
    trace.tensor("post.R_1", "X + MHA(X), T x d_model", f.residual_1, rows);
    trace.tensor("post.H", "LN_1(X + MHA(X)), T x d_model", f.norm_1.output, rows);
    trace.tensor("post.F", "FFN(H), T x d_model", f.feed_forward, rows);
    trace.tensor("post.R_2", "H + FFN(H), T x d_model", f.residual_2, rows);
    trace.tensor("post.Y", "LN_2(H + FFN(H)), T x d_model", f.output, rows);
}

// Step [block]: the two blocks from one set of parameters, every intermediate named.
nn::BlockParams record_block(Trace& trace, Rng& rng, const Mat& X, std::size_t h, std::size_t d_ff) {
    const std::size_t T = X.shape(0), d = X.shape(1);
    nn::BlockParams p = draw_block(rng, d, d_ff);
    p.attention.W_Q = trace.input("W_Q", p.attention.W_Q);
    p.attention.W_K = trace.input("W_K", p.attention.W_K);
    p.attention.W_V = trace.input("W_V", p.attention.W_V);
    p.attention.W_O = trace.input("W_O", p.attention.W_O);
    p.feed_forward.W_1 = trace.input("W_1", p.feed_forward.W_1);
    p.feed_forward.W_2 = trace.input("W_2", p.feed_forward.W_2);
    const nn::BlockForward pre = nn::pre_ln_block(X, p, h, nullptr), post = nn::post_ln_block(X, p, h, nullptr);
    const nn::BlockParams quiet = silenced(p);
    const Mat quiet_pre = nn::pre_ln_block(X, quiet, h, nullptr).output, quiet_post = nn::post_ln_block(X, quiet, h, nullptr).output;
    const auto ln = [](const Mat& M, const nn::LayerNormParams& q) { return nn::layer_norm(M, q.gain, q.bias, q.eps).output; };
    trace.step("block", "The block, post-LN and pre-LN",
               "post-LN: H = LN_1(X + MHA(X)),  Y = LN_2(H + FFN(H));   pre-LN: H = X + MHA(LN_1(X)),  Y = H + "
               "FFN(LN_2(H))",
               fmt::format(
                   "A block has two sub-layers, lesson 6's multi-head self-attention (h = {0} heads of d_k = {1}) "
                   "and lesson 5's position-wise network (d_model = {2} -> d_ff = {3} -> {2}), each wrapped in a "
                   "residual connection and a layer norm; every tensor between them is T x d_model = {4} x {2}, "
                   "which is what lets blocks stack. Vaswani et al. (2017, section 3.1) normalise after the "
                   "residual sum, LayerNorm(x + Sublayer(x)): post-LN, whose output is always normalised. Xiong "
                   "et al. (2020) study the norm moved inside the branch, x + Sublayer(LayerNorm(x)): pre-LN, "
                   "where the residual stream X -> H -> Y is only ever added to, never normalised (a stack ends "
                   "with one last norm). Both are computed here from the same parameters; the names say the "
                   "wiring (pre.H = X + pre.A).\n"
                   "With W^O = 0 and W_2 = 0, b_2 = 0 both sub-layers output exact zeros. The pre-LN block is "
                   "then exactly the identity: its stream passes untouched, which is how a deep pre-LN stack can "
                   "start near the identity. The post-LN block is not: it still normalises twice, Y = "
                   "LN_2(LN_1(X)), {5:.3f} away from X at most here. On one token alone, attention's only key is "
                   "the token itself, its weight is 1, and the block reduces to x + LN_1(x) W^V W^O followed by "
                   "the network: the last check computes that by hand.",
                   h, d / h, d, d_ff, T, nn::max_abs_of(Mat(quiet_post - X))));
    record_block_params(trace, p);
    record_post_ln(trace, post, tokens(T));
    record_pre_ln(trace, pre, tokens(T));
    trace.check("pre-LN with W^O = 0, W_2 = 0, b_2 = 0 is exactly the identity", nn::max_abs_of(Mat(quiet_pre - X)), 0.0);
    trace.check("post-LN with them is exactly LN_2(LN_1(X)), not X",
                nn::max_abs_of(Mat(quiet_post - ln(ln(X, p.norm_1), p.norm_2))), 0.0);
    trace.check("every row of the post-LN output has mean 0 (g = 1, b = 0)", nn::max_abs_of(row_means(post.output)), rounding);
    trace.check("pre-LN on one token = x + LN_1(x) W^V W^O, then the network, computed by hand",
                nn::max_abs_of(Mat(nn::pre_ln_block(nn::rows_of(X, 0, 1), p, h, nullptr).output -
                                   one_token_pre_ln(nn::rows_of(X, 0, 1), p))),
                rounding * (1.0 + nn::max_abs_of(X)));
    return p;
}

// ---------------------------------------------------------------- step [block-backward]

struct Variant {
    nn::BlockKind kind;
    bool causal;
};

const std::vector<Variant> variants = {{nn::BlockKind::post_ln, false},
                                       {nn::BlockKind::post_ln, true},
                                       {nn::BlockKind::pre_ln, false},
                                       {nn::BlockKind::pre_ln, true}};

std::string variant_name(const Variant& v) {
    return std::string(nn::block_kind_name(v.kind)) + (v.causal ? ", causal" : "");
}

// One variant's check: per tensor (X, then the block's twelve), the worst relative error over the
// sampled entries, and the gradient's norm; the sampled entries skipped at a ReLU kink; the tolerance.
struct Audit {
    Vec worst, norms;
    std::size_t skipped = 0;
    double tolerance = 0.0;
};

std::vector<nn::NamedEntries> with_input(Mat& X, nn::BlockParams& p) {
    std::vector<nn::NamedEntries> all = {nn::named_entries("X", X)};
    for (const auto& e : nn::block_tensors(p)) all.push_back(e);
    return all;
}

double entries_norm(const nn::NamedEntries& e) {
    double squares = 0.0;
    for (std::size_t k = 0; k < e.size; ++k) squares += e.data[k] * e.data[k];
    return std::sqrt(squares);
}

Audit audit_block(Rng& rng, const Variant& v, Mat X, nn::BlockParams p, const Mat& G, std::size_t h,
                  std::size_t samples) {
    const Mat causal = nn::causal_mask(X.shape(0));
    const Mat* mask = v.causal ? &causal : nullptr;
    const nn::BlockForward f = nn::transformer_block(v.kind, X, p, h, mask);
    nn::BlockGrads g = nn::transformer_block_backward(v.kind, X, p, h, mask, f, G);
    const std::function<Probe()> probe = [&] {
        const nn::BlockForward now = nn::transformer_block(v.kind, X, p, h, mask);
        Probe out{inner(G, now.output), {}};
        add_relu_pattern(out.on, v.kind, now, p.feed_forward);
        return out;
    };
    const auto values = with_input(X, p), grads = with_input(g.dX, g.params);
    const Probe here = probe();
    Audit a{nn::zeros(values.size()), nn::zeros(values.size()), 0,
            fd_tolerance(absolute_terms(G, f.output), 1) + truncation(largest_inv_std(f), sum_abs(G))};
    for (std::size_t k = 0; k < values.size(); ++k) {
        a.norms(k) = entries_norm(grads[k]);
        for (std::size_t s = 0; s < samples; ++s) {
            const std::size_t e = rng.below(values[k].size);
            const std::optional<double> numeric = kink_free_difference(values[k].data[e], probe, here);
            if (!numeric) {
                ++a.skipped;
                continue;
            }
            a.worst(k) = std::max(a.worst(k), std::abs(grads[k].data[e] - *numeric) / std::max(1.0, std::abs(*numeric)));
        }
    }
    return a;
}

std::vector<std::string> gradient_names() {
    return {"dX", "dg_1", "db_1", "dW_Q", "dW_K", "dW_V", "dW_O", "dg_2", "db_2", "dW_1", "db_ff1", "dW_2", "db_ff2"};
}

std::vector<std::string> variant_names() {
    std::vector<std::string> out;
    for (const auto& v : variants) out.push_back(variant_name(v));
    return out;
}

// Step [block-backward]: every parameter tensor and the input, four variants, against central differences.
void record_block_backward(Trace& trace, Rng& rng, const Mat& X, const nn::BlockParams& p, std::size_t h,
                           std::size_t samples) {
    const Mat G = trace.input("G_block", rng.normal_mat(X.shape(0), X.shape(1)));
    std::vector<Audit> audits;
    Mat worst = nn::zeros(13, variants.size()), norms = worst;
    std::size_t skipped = 0;
    for (std::size_t c = 0; c < variants.size(); ++c) {
        audits.push_back(audit_block(rng, variants[c], X, p, G, h, samples));
        nn::set_column(worst, c, audits.back().worst);
        nn::set_column(norms, c, audits.back().norms);
        skipped += audits.back().skipped;
    }
    trace.step("block-backward", "The block's backward pass",
               "pre-LN: dH = dY + LN_2'(FFN'(dY)),  dX = dH + LN_1'(MHA'(dH));   post-LN: dH = LN_2'(dY) + "
               "FFN'(LN_2'(dY)),  dX = LN_1'(dH) + MHA'(LN_1'(dH))",
               fmt::format(
                   "The backward pass runs the block's stages in reverse, each by its own backward: a residual "
                   "sum hands its gradient to both summands unchanged; the layer norm's is step "
                   "[layer-norm-backward]; the network's is the chain rule through W_2, the ReLU (which passes a "
                   "gradient only where its input was positive) and W_1; multi-head attention's is lesson 8's "
                   "attention backward run for each head on its slice of dConcat = dY W^O^T, with dW^O = "
                   "Concat^T dY, and X collects the gradients of its queries, keys and values in every head. "
                   "Here L = sum G * Y, and for each of the four variants (post-LN and pre-LN, without and with "
                   "the causal mask) the input and all twelve parameter tensors are checked against central "
                   "differences at {0} random entries each (--set samples=N). The table holds the worst relative "
                   "error |analytic - numeric| / max(1, |numeric|) of each. An entry whose nudge by h = 1e-6 moves "
                   "a ReLU input across 0 is skipped: the difference then measures neither side's slope ({1} of "
                   "{2} skipped here). Under the mask, masked weights are exact zeros and pass no gradient, so "
                   "the mask needs no backward of its own.",
                   samples, skipped, 13 * samples * variants.size()));
    trace.tensor("G_block", "dL/dY", G, tokens(X.shape(0)));
    trace.tensor("gradient_norms", "|dL/d(tensor)| for each tensor and variant", norms, gradient_names(), variant_names());
    double widest = 0.0;
    for (const Audit& a : audits) widest = std::max(widest, a.tolerance);
    trace.tensor("fd_errors", "worst |analytic - numeric| / max(1, |numeric|) over the sampled entries", worst,
                 gradient_names(), variant_names())
        .foreign_tolerance(widest, widest, central_difference_noise());
    for (std::size_t c = 0; c < variants.size(); ++c)
        trace.check(variant_name(variants[c]) + ": every sampled entry of dX and of the 12 parameter gradients matches "
                    "central differences",
                    nn::max_of(audits[c].worst), audits[c].tolerance);
}

// ---------------------------------------------------------------- step [depth]

// |dL/dW| over the six weight matrices of one block (W_Q, W_K, W_V, W_O, W_1, W_2) together.
double weight_gradient_norm(const nn::BlockParams& g) {
    const Mat* weights[] = {&g.attention.W_Q, &g.attention.W_K, &g.attention.W_V, &g.attention.W_O,
                            &g.feed_forward.W_1, &g.feed_forward.W_2};
    double squares = 0.0;
    for (const Mat* w : weights) squares += inner(*w, *w);
    return std::sqrt(squares);
}

// The root mean square of the rows' lengths: the size of one token's vector in the stream.
double stream_size(const Mat& M) { return frobenius(M) / std::sqrt(as_double(M.shape(0))); }

// One stack of each kind at one depth.
struct DepthRun {
    nn::StackForward forward;
    nn::StackGrads grads;
};

DepthRun run_stack(nn::BlockKind kind, const Mat& X, const std::vector<nn::BlockParams>& blocks, const Mat& G,
                   std::size_t h) {
    const nn::LayerNormParams final_norm = fresh_norm(X.shape(1));
    DepthRun r;
    r.forward = nn::transformer_stack(kind, X, blocks, final_norm, h, nullptr);
    r.grads = nn::transformer_stack_backward(kind, X, blocks, final_norm, h, nullptr, r.forward, G);
    return r;
}

// What the depth study measures.
struct DepthStudy {
    Mat stream;       // L_max x 2: stream size after each layer of the deepest stacks (post-LN, pre-LN)
    Mat per_layer;    // L_max x 2: |dL/dW_l| in the deepest stacks
    Mat by_depth;     // depths x 4: |dL/dW| of the first and the last layer, post-LN then pre-LN
    double post_norm_error = 0.0;   // post-LN: largest | |y_t| - sqrt(d sigma^2 / (sigma^2 + eps)) |
    double pre_sum_error = 0.0;     // pre-LN: |stream - (X + sum of sub-layer outputs)|
    double pre_sum_scale = 0.0;     // the size of those terms, for the tolerance
};

// post-LN: every output row of every block has length sqrt(d sigma^2 / (sigma^2 + eps)) (g = 1, b = 0).
double post_ln_length_error(const nn::StackForward& f) {
    double worst = 0.0;
    for (const auto& b : f.blocks) {
        const double d = as_double(b.output.shape(1));
        for (std::size_t t = 0; t < b.output.shape(0); ++t) {
            const double v = b.norm_2.variance(t), predicted = std::sqrt(d * v / (v + layer_norm_eps));
            worst = std::max(worst, std::abs(nn::norm_of(nn::row_of(b.output, t)) - predicted));
        }
    }
    return worst;
}

// pre-LN: the stream after the last block is X plus every sub-layer's output, nothing else.
void pre_ln_sum_error(const Mat& X, const nn::StackForward& f, DepthStudy& s) {
    Mat total = X;
    double scale = nn::max_abs_of(X);
    for (const auto& b : f.blocks) {
        total += b.attention.output + b.feed_forward;
        scale += nn::max_abs_of(b.attention.output) + nn::max_abs_of(b.feed_forward);
    }
    s.pre_sum_error = nn::max_abs_of(Mat(total - f.blocks.back().output));
    s.pre_sum_scale = scale;
}

DepthStudy study_depth(Trace& trace, const Mat& X, const std::vector<nn::BlockParams>& blocks, const Mat& G,
                       std::size_t h) {
    const std::size_t L_max = blocks.size();
    DepthStudy s{nn::zeros(L_max, 2), nn::zeros(L_max, 2), nn::zeros(doubling_labels("L", L_max).size(), 4)};
    std::size_t row = 0;
    for (std::size_t L = 1; L <= L_max; L *= 2, ++row) {
        trace.progress(fmt::format("depth {} of {}", L, L_max));
        const std::vector<nn::BlockParams> stack(blocks.begin(), blocks.begin() + static_cast<long>(L));
        for (std::size_t k = 0; k < 2; ++k) {
            const nn::BlockKind kind = k == 0 ? nn::BlockKind::post_ln : nn::BlockKind::pre_ln;
            const DepthRun r = run_stack(kind, X, stack, G, h);
            s.by_depth(row, 2 * k) = weight_gradient_norm(r.grads.blocks.front());
            s.by_depth(row, 2 * k + 1) = weight_gradient_norm(r.grads.blocks.back());
            if (L != L_max) continue;
            for (std::size_t l = 0; l < L; ++l) {
                s.stream(l, k) = stream_size(r.forward.blocks[l].output);
                s.per_layer(l, k) = weight_gradient_norm(r.grads.blocks[l]);
            }
            if (kind == nn::BlockKind::post_ln) s.post_norm_error = post_ln_length_error(r.forward);
            else pre_ln_sum_error(X, r.forward, s);
        }
    }
    return s;
}

struct DeepCheck {
    double error = 0.0;  // 0 when the nudge crossed a ReLU kink (then nothing can be measured)
    double tolerance = 0.0;
};

// fd_tolerance over the stack's 2 L sub-layers, plus the truncation through its layer norms.
double stack_tolerance(const nn::StackForward& f, const Mat& G) {
    double r_max = f.final_norm.inv_std.size() ? nn::max_of(f.final_norm.inv_std) : 0.0;
    for (const auto& b : f.blocks) r_max = std::max(r_max, largest_inv_std(b));
    return fd_tolerance(absolute_terms(G, f.output), 2 * f.blocks.size()) +
           as_double(f.blocks.size()) * truncation(r_max, sum_abs(G));
}

// The deepest stack's gradient of one entry of layer 1's W_V against a central difference: the
// stack's backward is the blocks' backwards chained, and this checks the chain.
DeepCheck deep_gradient_check(nn::BlockKind kind, const Mat& X, std::vector<nn::BlockParams> blocks, const Mat& G,
                           std::size_t h, std::size_t entry) {
    const DepthRun r = run_stack(kind, X, blocks, G, h);
    const double analytic = r.grads.blocks.front().attention.W_V.data()[entry];
    const nn::LayerNormParams final_norm = fresh_norm(X.shape(1));
    const std::function<Probe()> probe = [&] {
        const nn::StackForward f = nn::transformer_stack(kind, X, blocks, final_norm, h, nullptr);
        Probe out{inner(G, f.output), {}};
        for (std::size_t l = 0; l < blocks.size(); ++l) add_relu_pattern(out.on, kind, f.blocks[l], blocks[l].feed_forward);
        return out;
    };
    const std::optional<double> numeric = kink_free_difference(blocks.front().attention.W_V.data()[entry], probe, probe());
    return {numeric ? std::abs(analytic - *numeric) / std::max(1.0, std::abs(*numeric)) : 0.0,
            stack_tolerance(r.forward, G)};
}

// "grows" when the last value is above the first, else "falls" (a sentence about measured numbers).
std::string trend(double first, double last) { return last > first ? "grows" : "falls"; }

std::string depth_findings(const DepthStudy& s, std::size_t L_max) {
    const std::size_t last = s.by_depth.shape(0) - 1;
    return fmt::format(
        "What this run shows, at initialisation and without warm-up or training: in the stacks of {0} blocks the "
        "post-LN gradient {1} from layer 1 to layer {0} ({2:.3g} to {3:.3g}, a factor {4:.2g}), the pre-LN gradient "
        "{5} ({6:.3g} to {7:.3g}, a factor {8:.2g}). The last layer's gradient from 1 block to {0}: post-LN "
        "{9:.3g} to {10:.3g}, pre-LN {11:.3g} to {12:.3g}. The post-LN stream keeps the size of a normalised row, "
        "sqrt(d_model sigma^2 / (sigma^2 + eps)) <= sqrt(d_model), after every block; the pre-LN stream "
        "{13} from {14:.3g} to {15:.3g}, because each block only adds to it. These are one seed's numbers: only "
        "the two identities below hold at every seed and are checked; run other seeds (--seed) to see how much "
        "the trends move.",
        L_max, trend(s.per_layer(0, 0), s.per_layer(L_max - 1, 0)), s.per_layer(0, 0), s.per_layer(L_max - 1, 0),
        s.per_layer(L_max - 1, 0) / s.per_layer(0, 0), trend(s.per_layer(0, 1), s.per_layer(L_max - 1, 1)),
        s.per_layer(0, 1), s.per_layer(L_max - 1, 1), s.per_layer(L_max - 1, 1) / s.per_layer(0, 1),
        s.by_depth(0, 1), s.by_depth(last, 1), s.by_depth(0, 3), s.by_depth(last, 3),
        trend(s.stream(0, 1), s.stream(L_max - 1, 1)), s.stream(0, 1), s.stream(L_max - 1, 1));
}

// Step [depth]: stacks of 1 to L_max blocks of each kind at initialisation.
void record_depth(Trace& trace, Rng& rng, const Mat& X, std::size_t h, std::size_t d_ff, std::size_t L_max) {
    std::vector<nn::BlockParams> blocks;
    for (std::size_t l = 0; l < L_max; ++l) blocks.push_back(draw_block(rng, X.shape(1), d_ff));
    const Mat G = rng.normal_mat(X.shape(0), X.shape(1));
    const DepthStudy s = study_depth(trace, X, blocks, G, h);
    const std::size_t entry = rng.below(X.shape(1) * X.shape(1));
    const DeepCheck fd_post = deep_gradient_check(nn::BlockKind::post_ln, X, blocks, G, h, entry);
    const DeepCheck fd_pre = deep_gradient_check(nn::BlockKind::pre_ln, X, blocks, G, h, entry);
    trace.step("depth", "Depth at initialisation",
               "post-LN: Y_l = LN(...(Y_{l-1} + ...)),  pre-LN: Y_l = Y_{l-1} + MHA(LN(Y_{l-1})) + FFN(LN(.)),  "
               "L = sum G * Y_L",
               "Stacks of 1, 2, 4, ... L_max blocks of each kind, every block freshly initialised (the deeper "
               "stacks share their first blocks with the shallower), read the inputs of step [inputs]; a pre-LN "
               "stack ends with a last layer norm. L = sum G * Y with a fixed random G, and for every layer the "
               "length of the residual stream after it and of dL/dW over its six weight matrices.\n"
               "Xiong et al. (2020, section 3 and Theorem 1) predict, for the post-LN Transformer at "
               "initialisation, large gradients of the parameters near the output (of a size that does not "
               "shrink with depth), larger than those of the lower layers: a large learning rate at the start "
               "then takes steps that are too big for the top layers, which is why post-LN needs a learning-rate "
               "warm-up. For pre-LN they predict gradients of about the same size in every layer, shrinking "
               "like 1 / sqrt(L) as the stack deepens, which lets it train without warm-up.\n" +
                   depth_findings(s, L_max));
    trace.tensor("stream", "RMS length of a token's vector after each layer of the deepest stacks", s.stream,
                 numbered("l=", 1, L_max), std::vector<std::string>{"post-LN", "pre-LN"}, View::plot);
    trace.tensor("layer_gradients", "|dL/dW_l| (W_Q, W_K, W_V, W_O, W_1, W_2 of layer l), deepest stacks",
                 s.per_layer, numbered("l=", 1, L_max), std::vector<std::string>{"post-LN", "pre-LN"}, View::plot);
    trace.tensor("gradients_by_depth", "|dL/dW| of the first and the last layer, stacks of L blocks", s.by_depth,
                 doubling_labels("L", L_max),
                 std::vector<std::string>{"post first", "post last", "pre first", "pre last"}, View::plot);
    trace.check("post-LN: after every block each row has length sqrt(d sigma^2 / (sigma^2 + eps))", s.post_norm_error,
                rounding * std::sqrt(as_double(X.shape(1))));
    trace.check("pre-LN: the stream is X plus the outputs of all its sub-layers, nothing else", s.pre_sum_error,
                rounding * s.pre_sum_scale);
    trace.check(fmt::format("post-LN, {} blocks: dL/dW_V of layer 1 at one entry matches central differences", L_max),
                fd_post.error, fd_post.tolerance);
    trace.check(fmt::format("pre-LN, {} blocks: dL/dW_V of layer 1 at one entry matches central differences", L_max),
                fd_pre.error, fd_pre.tolerance);
}

// ---------------------------------------------------------------- step [dropout]

// A keep mask: 1 with probability 1 - p, else 0, entry by entry in row-major order.
Mat keep_mask(Rng& rng, std::size_t rows, std::size_t cols, double p) {
    Mat keep = nn::zeros(rows, cols);
    for (auto& k : keep) k = rng.uniform() >= p ? 1.0 : 0.0;
    return keep;
}

// The mean over n masks of the inverted dropout of S (column block 0) and of the unscaled S * m.
struct DropoutMeans {
    Mat inverted, unscaled;
};

DropoutMeans mean_over_masks(Rng& rng, const Mat& S, double p, std::size_t n) {
    DropoutMeans m{nn::zeros(S.shape(0), S.shape(1)), nn::zeros(S.shape(0), S.shape(1))};
    for (std::size_t k = 0; k < n; ++k) {
        const Mat keep = keep_mask(rng, S.shape(0), S.shape(1), p);
        m.inverted += nn::inverted_dropout(S, keep, p);
        m.unscaled += S * keep;
    }
    m.inverted /= as_double(n);
    m.unscaled /= as_double(n);
    return m;
}

// Hoeffding (1963): a mean of n independent draws in an interval of width w lies within
// w sqrt(ln(2 / delta) / (2 n)) of its expectation with probability at least 1 - delta. Each entry's
// draws lie between 0 and x / (1 - p); over all N entries at once (a union bound) delta / N each.
constexpr double dropout_delta = 1e-9;
double hoeffding_excess(const Mat& mean, const Mat& S, double p, std::size_t n) {
    const double entries = as_double(S.size());
    const double root = std::sqrt(portable::log(2.0 * entries / dropout_delta) / (2.0 * as_double(n)));
    double worst = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < S.size(); ++k) {
        const double bound = std::abs(S.data()[k]) / (1.0 - p) * root + rounding * std::abs(S.data()[k]);
        worst = std::max(worst, std::abs(mean.data()[k] - S.data()[k]) - bound);
    }
    return std::max(0.0, worst);
}

// The smallest and largest a / b over the entries where b is not 0.
std::pair<double, double> ratio_range(const Mat& a, const Mat& b) {
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (std::size_t k = 0; k < a.size(); ++k)
        if (b.data()[k] != 0.0) {
            low = std::min(low, a.data()[k] / b.data()[k]);
            high = std::max(high, a.data()[k] / b.data()[k]);
        }
    return {low, high};
}

// Step [dropout]: inverted dropout on a sub-layer's output and on attention weights.
void record_dropout(Trace& trace, Rng& rng, const nn::BlockForward& block, double p, std::size_t n) {
    const Mat& S = block.feed_forward;
    const Mat A = nn::slice_of(block.attention.weights, 0);
    const std::size_t T = S.shape(0);
    const Mat keep = keep_mask(rng, T, S.shape(1), p), keep_A = keep_mask(rng, T, T, p);
    const Mat dropped = nn::inverted_dropout(S, keep, p), dropped_A = nn::inverted_dropout(A, keep_A, p);
    const DropoutMeans means = mean_over_masks(rng, S, p, n);
    const auto ratios = ratio_range(means.unscaled, S);
    trace.step("dropout", "Dropout, where a Transformer applies it",
               "y = x * m / (1 - p),  m_ij = 1 with probability 1 - p, else 0;  E[y] = x",
               fmt::format(
                   "Dropout (Srivastava et al. 2014) sets each unit to 0 with probability p during training, a "
                   "different random mask every time, so that no unit can count on another being there. The "
                   "Transformer (Vaswani et al. 2017, section 5.4) applies it with p = 0.1 to the output of each "
                   "sub-layer before it is added to the residual stream (and normalised, in post-LN), and to the "
                   "sums of embeddings and positions; implementations (the paper's tensor2tensor, PyTorch's "
                   "MultiheadAttention) also drop attention weights, so that a query cannot lean on one key "
                   "alone. The paper's original form keeps the units as they are and multiplies the weights by "
                   "1 - p at test time; the inverted form used everywhere now divides by 1 - p during training, "
                   "so E[y] = x and at evaluation dropout is simply left out, the identity. Here p = {0:g}, and "
                   "the masks are drawn from the lesson's seed. The mean of {1} masked copies of the network's "
                   "output lies within Hoeffding's bound of the output (|x| / (1 - p) sqrt(ln(2 N / delta) / 2n) "
                   "per entry, delta = 1e-9 over all N entries at once); without the 1 / (1 - p) the mean is "
                   "(1 - p) x instead: here {2:.3f} x, c = <mean, x> / <x, x> being the factor that fits the mean "
                   "best as c x by least squares (entry by entry, mean / x runs from {3:.3f} to {4:.3f}). One mask "
                   "on head 1's weights: a row of dropped weights no longer sums to 1, only on average.",
                   p, n, inner(means.unscaled, S) / inner(S, S), ratios.first, ratios.second));
    trace.tensor("S", "FFN output of step [block]'s pre-LN block, before the residual add", S, tokens(T));
    trace.tensor("m", "one keep mask", keep, tokens(T));
    trace.tensor("S_dropped", "S * m / (1 - p)", dropped, tokens(T));
    trace.tensor("A_1", "head 1's attention weights", A, tokens(T), tokens(T), View::heatmap).axes("query word", "key word");
    trace.tensor("A_1_dropped", "A_1 * m / (1 - p)", dropped_A, tokens(T), tokens(T), View::heatmap).axes("query word", "key word");
    trace.tensor("S_mean", fmt::format("mean of S * m / (1 - p) over {} masks", n), means.inverted, tokens(T));
    trace.tensor("S_mean_unscaled", fmt::format("mean of S * m over {} masks: about (1 - p) S", n), means.unscaled, tokens(T));
    trace.check("the mean over the masks equals S within Hoeffding's bound", hoeffding_excess(means.inverted, S, p, n), 0.0);
    trace.check("at evaluation (no mask, no scaling) dropout is the identity",
                nn::max_abs_of(Mat(nn::inverted_dropout(S, nn::ones(T, S.shape(1)), 0.0) - S)), 0.0);
    trace.check("kept entries are S / (1 - p), dropped ones exactly 0",
                nn::max_abs_of(Mat(dropped - S * keep / (1.0 - p))), rounding * nn::max_abs_of(S));
}

// ---------------------------------------------------------------- the lesson

void lesson_transformer_block(Trace& trace, const Config& config) {
    const std::size_t d = config.size(param::d_model), h = config.size(param::heads), d_ff = config.size(param::d_ff);
    const std::size_t T = config.size(param::T);
    Rng rng(config.seed);
    const NormProblem norm = record_layer_norm(trace, rng, T, d);
    record_layer_norm_backward(trace, rng, norm);
    record_residual(trace, rng, d, d_ff);
    const Mat X = record_inputs(trace, rng, T, d);
    const nn::BlockParams block = record_block(trace, rng, X, h, d_ff);
    record_block_backward(trace, rng, X, block, h, config.size(param::samples));
    record_depth(trace, rng, X, h, d_ff, config.size(param::L_max));
    record_dropout(trace, rng, nn::pre_ln_block(X, block, h, nullptr), as_double(config.size(param::p_percent)) / 100.0,
                   config.size(param::masks));
}

}  // namespace
}  // namespace transformer_block

Lesson transformer_block_lesson() {
    using namespace transformer_block;
    return make_lesson(11, "transformer-block", "The Transformer block",
                       "Ba et al. 2016; He et al. 2016; Vaswani et al. 2017; Xiong et al. 2020; Srivastava et al. 2014",
                       {param::d_model, param::heads, param::d_ff, param::T, param::L_max, param::samples, param::masks,
                        param::p_percent},
                       limits, time_estimate, lesson_transformer_block,
                       {"layer-norm", "layer-norm-backward", "residual", "inputs", "block", "block-backward",
                        "depth", "dropout"}, {{"L_max", 4}, {"masks", 100}});
}

}  // namespace attn
