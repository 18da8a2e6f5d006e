// Lesson 3: the family of score functions (Luong et al. 2015; Vaswani et al. 2017), why the dot
// product is scaled by sqrt(d), and global versus local attention.
// S = source tokens (keys), T = target tokens (queries), d = width of queries and keys,
// D = half-width of the local window.
#include "registry.hpp"
#include "support.hpp"

#include "core/rng.hpp"
#include "nn/activations.hpp"
#include "nn/attention.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attn {

namespace scores {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d{"d", 6, 1, 256, "width of the queries and keys"};
const Param D{"D", 2, 1, 8, "half-width of the local-attention window (2D + 1 positions)"};
const Param pairs{"pairs", 2000, 100, 20000, "random (q, k) pairs per width in the variance measurement"};
const Param queries{"queries", 400, 100, 2000, "random queries per width in the saturation measurement"};
const Param keys{"keys", 10, 8, 16,
                 "keys each query is scored against in the saturation measurement (the checks' thresholds are "
                 "set for 8 to 16)"};
}  // namespace param

std::string limits(const Config& c) {
    const double d = as_double(c.size(param::d));
    return memory_limit(as_double(c.size(param::pairs)) * 2.0 * 512.0 +
                            as_double(c.size(param::queries)) * as_double(c.size(param::keys)) * 8.0 + 100.0 * d * d,
                        "lesson 3");
}

// Seconds per unit of each measurement, from runs on this project's 2-core machine at loads of 4.5
// to 5.4, each the worst seen: pairs=20000 took 3.2 to 5.8 s (3e-4 s a pair, at eight widths up to
// 512), queries=2000 with keys=16 2.7 to 5.1 s (1.7e-4 s a query and key), d=128 and d=256 0.6 to
// 1.6 s (2.5e-5 s per d^2), every parameter at its maximum 2.9 to 5.1 s. Twice each on the safe side,
// and a second for the rest: the largest settings are estimated at 28 s, well under the cap.
TimeEstimate time_estimate(const Config& c) {
    const double d = as_double(c.size(param::d)), pairs = as_double(c.size(param::pairs));
    const double scored = as_double(c.size(param::queries)) * as_double(c.size(param::keys));
    return {1.0 + 6e-4 * pairs + 3.5e-4 * scored + 5e-5 * d * d, "the measurements",
            fmt::format("{} pairs, {:.0f} query-key scores at eight widths, d^2 = {:.0f}", c.size(param::pairs), scored,
                        d * d),
            {{&param::pairs, 1.0}, {&param::queries, 1.0}, {&param::keys, 1.0}, {&param::d, 2.0}}};
}


const std::vector<std::string> source_sentence = {"could", "you", "please", "turn", "off",
                                                  "the",   "lights", "in", "the", "kitchen"};
const std::vector<std::string> target_sentence = {"रसोई", "की", "लाइट", "बंद", "कीजिए"};
// The source position (1-based) each target word translates; the queries are planted near it.
const std::vector<std::size_t> partner_position = {10, 8, 7, 5, 4};
constexpr double query_noise = 0.5;  // q_t = k_partner + 0.5 * noise: close to its partner, not equal
constexpr std::size_t featured_query = 2;  // लाइट, shown position by position in step [local]
const std::vector<std::size_t> demo_widths = {4, 8, 16, 32, 64, 128, 256, 512};
const std::vector<std::string> score_names = {"dot", "general", "concat", "scaled"};

std::vector<std::string> width_labels() {
    std::vector<std::string> out;
    for (auto d : demo_widths) out.push_back("d=" + std::to_string(d));
    return out;
}

// Weight matrices are recorded one column per query, one row per source word, so that ten
// source words fit on a terminal as rows.
Mat one_column_per_query(const Mat& per_query_rows) { return nn::transposed(per_query_rows); }

// Random directions scaled to length sqrt(d), about the length of a vector with N(0, 1) entries.
// With equal lengths the dot score compares directions only.
Mat keys_of_equal_length(Rng& rng, std::size_t count, std::size_t d) {
    Mat K = rng.normal_mat(count, d);
    for (std::size_t s = 0; s < count; ++s) {
        const Vec key = nn::row_of(K, s);
        nn::set_row(K, s, key * (std::sqrt(as_double(d)) / nn::norm_of(key)));
    }
    return K;
}

Vec partner_positions() {
    Vec out = xt::empty<double>({partner_position.size()});
    for (std::size_t t = 0; t < partner_position.size(); ++t) out(t) = as_double(partner_position[t]);
    return out;
}

Mat planted_queries(Rng& rng, const Mat& K) {
    Mat Q = rng.normal_mat(partner_position.size(), K.shape(1), query_noise);
    for (std::size_t t = 0; t < partner_position.size(); ++t)
        nn::set_row(Q, t, nn::row_of(Q, t) + nn::row_of(K, partner_position[t] - 1));
    return Q;
}

// [A B]: the columns of A, then those of B.
Mat side_by_side(const Mat& A, const Mat& B) { return xt::concatenate(xt::xtuple(A, B), 1); }

// Records one score function's scores, weights and contexts; returns the weights (T x S).
Mat record_global_attention(Trace& trace, const std::string& name, const std::string& score_equation,
                            const Mat& scores, const Mat& K) {
    const Mat weights = nn::softmax_rows(scores);
    const auto keys = prefixed("k_", source_sentence);
    trace.tensor("e_" + name, score_equation + "; row s, column t", one_column_per_query(scores), keys,
                 target_sentence);
    trace.tensor("a_" + name, "a_t(s) = softmax over s of e_t(s); each column sums to 1",
                 one_column_per_query(weights), keys, target_sentence, View::heatmap).axes("source word (key)", "target word (query)");
    trace.tensor("c_" + name, "c_t = sum_s a_t(s) k_s, one row per query", nn::context_vectors(weights, K),
                 prefixed("c_", target_sentence));
    return weights;
}

// The weight each score function gives the source word each query was planted near.
Mat partner_weights(const std::vector<Mat>& weights) {
    Mat out = xt::empty<double>({partner_position.size(), weights.size()});
    for (std::size_t t = 0; t < partner_position.size(); ++t)
        for (std::size_t f = 0; f < weights.size(); ++f) out(t, f) = weights[f](t, partner_position[t] - 1);
    return out;
}

// h~_t = tanh(W_c1 c_t + W_c2 h_t): two matrices on the parts instead of W_c = [W_c1 W_c2] on [c_t; h_t].
Mat attentional_states_by_parts(const Mat& C, const Mat& H, const Mat& W_c1, const Mat& W_c2) {
    const Mat from_context = nn::matmul(C, nn::transposed(W_c1), "C W_c1^T");
    const Mat from_state = nn::matmul(H, nn::transposed(W_c2), "H W_c2^T");
    return nn::tanh_each(from_context + from_state);
}

double sample_variance(const Vec& x) {
    const double mean = nn::sum_of(x) / as_double(x.size());
    double total = 0.0;
    for (const double v : x) total += (v - mean) * (v - mean);
    return total / as_double(x.size() - 1);
}

// For each width d, `pairs` independent q, k with N(0, 1) entries. One row per d: the sample
// variance of q.k, that variance / d (which is the sample variance of q.k / sqrt(d)), and the
// sample variance of q.k / sqrt(|k|) with |k| the length of k.
Mat measure_dot_variance(Rng& rng, std::size_t pairs) {
    Mat table = xt::empty<double>({demo_widths.size(), std::size_t{3}});
    for (std::size_t w = 0; w < demo_widths.size(); ++w) {
        const std::size_t d = demo_widths[w];
        const Mat Q = rng.normal_mat(pairs, d), K = rng.normal_mat(pairs, d);
        const Vec dots = nn::row_sums(Q * K);
        const Vec lengths = xt::sqrt(nn::row_sums(K * K));
        const Vec by_root_length = dots / xt::sqrt(lengths);
        table(w, 0) = sample_variance(dots);
        table(w, 1) = table(w, 0) / as_double(d);
        table(w, 2) = sample_variance(by_root_length);
    }
    return table;
}

// |J|_F for the softmax Jacobian J_ij = d a_i / d e_j = a_i (delta_ij - a_j): how strongly the
// weights still respond to the scores. It is 0 for a one-hot a.
double softmax_jacobian_norm(const Mat& weights_row) {
    double total = 0.0;
    for (std::size_t i = 0; i < weights_row.shape(1); ++i)
        for (std::size_t j = 0; j < weights_row.shape(1); ++j) {
            const double entry = weights_row(0, i) * ((i == j ? 1.0 : 0.0) - weights_row(0, j));
            total += entry * entry;
        }
    return std::sqrt(total);
}

struct SaturationDemo {
    Mat means;            // widths x 4: max a, max a scaled, |J|, |J| scaled
    Mat standard_errors;  // the same layout: sample standard deviation / sqrt(queries)
};

// For each width d, `queries` independent queries, each against `keys` random keys (N(0, 1)
// entries): the largest weight of softmax(q.k) and of softmax(q.k / sqrt(d)), then |J|_F for each.
SaturationDemo measure_saturation(Rng& rng, std::size_t queries, std::size_t keys) {
    const std::size_t measures = 4;
    SaturationDemo demo{nn::zeros(demo_widths.size(), measures), nn::zeros(demo_widths.size(), measures)};
    for (std::size_t w = 0; w < demo_widths.size(); ++w) {
        Mat samples = xt::empty<double>({queries, measures});
        for (std::size_t r = 0; r < queries; ++r) {
            const Mat q = rng.normal_mat(1, demo_widths[w]), K = rng.normal_mat(keys, demo_widths[w]);
            const Mat unscaled = nn::softmax_rows(nn::dot_scores(q, K));
            const Mat scaled = nn::softmax_rows(nn::scaled_dot_scores(q, K));
            samples(r, 0) = nn::max_of(unscaled);
            samples(r, 1) = nn::max_of(scaled);
            samples(r, 2) = softmax_jacobian_norm(unscaled);
            samples(r, 3) = softmax_jacobian_norm(scaled);
        }
        for (std::size_t m = 0; m < measures; ++m) {
            const Vec column = nn::column_of(samples, m);
            demo.means(w, m) = nn::sum_of(column) / as_double(queries);
            demo.standard_errors(w, m) = std::sqrt(sample_variance(column) / as_double(queries));
        }
    }
    return demo;
}

double largest_outside_window(const Mat& weights, const Mat& window) {
    double worst = 0.0;
    for (std::size_t i = 0; i < weights.size(); ++i)
        if (window.flat(i) == 0.0) worst = std::max(worst, std::abs(weights.flat(i)));
    return worst;
}

// Inside the window, the windowed softmax is the global softmax divided by its mass in the window.
double local_from_global_error(const Mat& local, const Mat& global, const Mat& window, const Mat& gaussian) {
    const Vec mass_in_window = nn::row_sums(global * window);
    double worst = 0.0;
    for (std::size_t t = 0; t < local.shape(0); ++t)
        for (std::size_t s = 0; s < local.shape(1); ++s)
            if (window(t, s) != 0.0)
                worst = std::max(worst, std::abs(local(t, s) - gaussian(t, s) * global(t, s) / mass_in_window(t)));
    return worst;
}

// One query position by position: distance s - p_t, global weight, Gaussian, local weight.
Mat featured_comparison(const Vec& positions, const Mat& global, const Mat& gaussian, const Mat& local) {
    Mat out = xt::empty<double>({global.shape(1), std::size_t{4}});
    for (std::size_t s = 0; s < global.shape(1); ++s) out(s, 0) = as_double(s + 1) - positions(featured_query);
    nn::set_column(out, 1, nn::row_of(global, featured_query));
    nn::set_column(out, 2, nn::row_of(gaussian, featured_query));
    nn::set_column(out, 3, nn::row_of(local, featured_query));
    return out;
}

// Step [inputs]: the keys K and the queries Q, each planted near the key of the word it translates.
void record_inputs(Trace& trace, const Mat& K, const Mat& Q) {
    const auto keys = prefixed("k_", source_sentence);
    const auto queries = prefixed("q_", target_sentence);
    trace.step("inputs", "Queries and keys", "q_t = h_t (decoder state),  k_s = h̄_s (encoder state)",
               "Luong et al. (2015) score the decoder state h_t against every encoder state h̄_s. Vaswani et al. "
               "(2017) call the vector that asks a query and the vectors it is compared with keys; here the keys "
               "also serve as the values that get averaged. We translate \"could you please turn off the lights "
               "in the kitchen\" into \"रसोई की लाइट बंद कीजिए\" (word for word: kitchen of light off please-do), "
               "so the word order runs backwards. Nothing is trained in this lesson: the keys are random "
               "directions of equal length, and each query is planted near the key of the word it translates, "
               "so that the pictures have something to find.");
    trace.tensor("K", "k_s: random directions, each of length sqrt(d)", K, keys);
    trace.tensor("partner", "the source position s that target word t translates", partner_positions(),
                 target_sentence);
    trace.tensor("Q", "q_t = k_partner(t) + 0.5 noise, noise ~ N(0, I)", Q, queries);
}

// Step [dot]: the weights of the dot score q_t^T k_s, which later steps compare with.
Mat record_dot(Trace& trace, const Mat& Q, const Mat& K) {
    trace.step("dot", "Dot score", "e_t(s) = q_t^T k_s",
               "The simplest score has no parameters: the dot product, large when q_t and k_s point the same "
               "way (Luong et al. 2015, section 3.1, where the three scores stand in one unnumbered display; "
               "equation numbers in this lesson are those of arXiv:1508.04025v5). A softmax over the source "
               "turns one query's scores into weights "
               "(eq. 7); each column below is one query's distribution over the source words. The context c_t "
               "is the weighted average of the keys. The dot product also grows with length, q^T k <= |q| |k|: "
               "with keys of unequal length a long key can outscore the query's own partner. Ours are equally "
               "long, so only direction counts.");
    return record_global_attention(trace, "dot", "e_t(s) = q_t^T k_s", nn::dot_scores(Q, K), K);
}

// Step [general]: the bilinear score q_t^T W_g k_s and its weights.
Mat record_general(Trace& trace, const Mat& Q, const Mat& K, const Mat& W_g) {
    const std::size_t d = K.shape(1);
    trace.step("general", "General (bilinear) score", "e_t(s) = q_t^T W_g k_s",
               "Luong's \"general\" score puts a learned d x d matrix between query and key (section 3.1), so a query "
               "can look for something other than itself: W_g may rotate, stretch or mix features before the "
               "comparison. Our W_g is random, so it has no reason to favour the planted partner. With W_g = I "
               "the general score is the dot score, as the check confirms.");
    trace.parameter("W_g", "W_g, d x d, entries N(0, 1/d)", W_g);
    const Mat a_general =
        record_global_attention(trace, "general", "e_t(s) = q_t^T W_g k_s", nn::general_scores(Q, W_g, K), K);
    trace.check("general score with W_g = I equals the dot score",
                max_abs_difference(nn::general_scores(Q, xt::eye<double>(d), K), nn::dot_scores(Q, K)), 1e-12);
    return a_general;
}

// Step [concat]: Luong's concat score with W_a = [W_q W_k], checked against the additive score.
Mat record_concat(Trace& trace, const Mat& Q, const Mat& K, const Mat& W_q, const Mat& W_k, const Vec& v_a) {
    trace.step("concat", "Concat (additive) score", "e_t(s) = v_a^T tanh(W_a [q_t; k_s])",
               "Luong's \"concat\" score (section 3.1) feeds query and key together through one tanh layer and reads "
               "a single number out with v_a. Splitting W_a = [W_q W_k] shows that it is the additive score of "
               "Bahdanau et al. (2015, appendix A.1.2), v_a^T tanh(W_q q_t + W_k k_s), which is how "
               "nn::concat_scores computes it; the check takes the first query's scores the one-matrix way, "
               "W_a times the joined vector [q_t; k_s]. The tanh bounds every score by the sum of |v_a|, so unlike a dot product it cannot "
               "grow with d. Untrained, W_a and v_a favour no partner either.");
    trace.parameter("W_q", "query half of W_a = [W_q W_k], d_a x d, entries N(0, 1/(2d))", W_q);
    trace.parameter("W_k", "key half of W_a, d_a x d, entries N(0, 1/(2d))", W_k);
    trace.parameter("v_a", "v_a, d_a, entries N(0, 1)", v_a);
    const Mat e_concat = nn::concat_scores(Q, K, side_by_side(W_q, W_k), v_a);
    const Mat a_concat =
        record_global_attention(trace, "concat", "e_t(s) = v_a^T tanh(W_a [q_t; k_s])", e_concat, K);
    // the first query against every key, one matrix on the joined vector: v_a^T tanh(W_a [q_1; k_s])
    const Mat W_a = side_by_side(W_q, W_k);
    const Vec q_1 = nn::row_of(Q, 0);
    Vec e_joined = xt::empty<double>({K.shape(0)});
    for (std::size_t s = 0; s < K.shape(0); ++s) {
        const Vec joined = xt::concatenate(xt::xtuple(q_1, nn::row_of(K, s)));
        const Vec hidden = xt::tanh(nn::matvec(W_a, joined, "W_a [q_1; k_s]"));
        e_joined(s) = xt::sum(v_a * hidden)();
    }
    trace.check("the first query's concat scores equal v_a^T tanh(W_a [q_1; k_s]), W_a times the joined vector",
                max_abs_difference(nn::row_of(e_concat, 0), e_joined), 1e-12);
    return a_concat;
}

// Step [scaled]: the scaled dot score, and the weight each of the four scores gives the planted partner.
void record_scaled(Trace& trace, const Mat& Q, const Mat& K, const Mat& a_dot, const Mat& a_general,
                   const Mat& a_concat) {
    const std::size_t d = K.shape(1);
    trace.step("scaled", "Scaled dot score", "e_t(s) = q_t^T k_s / sqrt(d)",
               "Vaswani et al. (2017, eq. 1) divide the dot score by the square root of the width d of the "
               "keys. Dividing all of a query's scores by one number keeps their order, so the same word wins; "
               "it only wins less decisively. The table puts the four score functions side by side.\n"
               "A popular slide writes the divisor as sqrt(|k|). That is right if |k| means the width d, and "
               "wrong if it means the length of k: the length grows like sqrt(d), so the variance of the scores "
               "would still grow, like sqrt(d). Step [variance] measures both.");
    const Mat e_scaled = nn::scaled_dot_scores(Q, K);
    const Mat a_scaled = record_global_attention(trace, "scaled", "e_t(s) = q_t^T k_s / sqrt(d)", e_scaled, K);
    trace.tensor("partner_weight", "a_t(partner(t)): the weight on the planted partner",
                 partner_weights({a_dot, a_general, a_concat, a_scaled}), target_sentence, score_names);
    trace.check("scaled score equals dot score / sqrt(d)",
                max_abs_difference(e_scaled, nn::dot_scores(Q, K) / std::sqrt(as_double(d))), 1e-12);
}

// Step [variance]: Var(q^T k) measured over `pairs` random pairs per width.
void record_variance(Trace& trace, Rng& rng, std::size_t pairs) {
    trace.step("variance", "Why sqrt(d): the variance of q^T k is d", "Var(q^T k) = d  for q, k ~ N(0, I_d)",
               "With independent entries of mean 0 and variance 1, q^T k is a sum of d products of variance 1, "
               "so its variance is d (Vaswani et al. 2017, section 3.2.1, footnote 4). We measure it with " +
                   std::to_string(pairs) + " random pairs per width. Dividing by sqrt(d) brings the variance "
               "back to 1 at every width (second column); dividing by the square root of the length |k| "
               "leaves it growing like sqrt(d) (third column).\n"
               "The check allows 4 standard errors. A sample variance over N draws has standard error "
               "sqrt((mu_4 - sigma^4) / N); for q^T k, sigma^2 = d and mu_4 = 3d^2 + 6d, so var / d has "
               "standard error sqrt((2 + 6/d) / N), largest at d = 4: sqrt(3.5 / N).");
    const Mat variance = measure_dot_variance(rng, pairs);
    trace.tensor("dot_variance", "sample variances over " + std::to_string(pairs) + " pairs per width", variance,
                 width_labels(), {"var(q.k)", "var(q.k/√d)", "var(q.k/√|k|)"});
    trace.tensor("variance_growth", "var(q.k), growing in step with d", nn::column_of(variance, 0), width_labels(), {},
                 View::bars);
    const Vec relative = nn::column_of(variance, 1);
    trace.check("var(q.k) / d = 1 within 4 sqrt(3.5 / pairs)",
                nn::max_abs_of(Vec(relative - 1.0)), 4.0 * std::sqrt(3.5 / as_double(pairs)));
}

// Step [saturation]: the largest softmax weight and the Jacobian's size, unscaled and scaled. The
// measurement comes first because the step's explanation quotes its largest standard error.
void record_saturation(Trace& trace, Rng& rng, std::size_t demo_queries, std::size_t demo_keys) {
    const SaturationDemo saturation = measure_saturation(rng, demo_queries, demo_keys);
    trace.step("saturation", "Why sqrt(d): unscaled, the softmax saturates",
               "max_s a(s)  and  |J|,  J_ij = d a_i / d e_j = a_i (delta_ij - a_j)",
               "Scores that spread like sqrt(d) push the softmax towards one-hot: the largest weight tends to 1 "
               "and the others to 0. Then the weights hardly respond to the scores any more: the Jacobian J of "
               "the softmax shrinks towards 0 (|J| is the root of the sum of its squared entries), and so does "
               "every gradient that passes through it. These are the \"extremely small gradients\" that Vaswani "
               "et al. (2017, section 3.2.1) suspected, and the reason they scale. We draw " +
                   std::to_string(demo_queries) + " queries per width, each against " +
                   std::to_string(demo_keys) + " random keys, and average. Scaled, both measures stay put.\n" +
                   fmt::format("The second table gives each mean's standard error; the largest is {:.4f}. The "
                               "checks' bounds are round numbers, and those on the unscaled weights and Jacobian "
                               "also allow 4 standard errors of what they measure: at the fewest queries (100) "
                               "and the most keys (16) the expected ratio of the Jacobians at d = 512, about 0.24, "
                               "lies under 2 standard errors below 1/3, and the round bounds alone failed by chance "
                               "at 4 of 150 seeds. With 4 standard errors more, a bound fails by chance less than "
                               "once in 30,000 runs even where the expected value reaches the round number (the "
                               "normal tail beyond 4 standard errors).",
                               nn::max_of(saturation.standard_errors)));
    const std::vector<std::string> measures = {"max a", "max a scaled", "|J|", "|J| scaled"};
    trace.tensor("saturation", "means over " + std::to_string(demo_queries) + " queries", saturation.means,
                 width_labels(), measures);
    trace.tensor("saturation_se", "their standard errors: sample std / sqrt(" +
                     std::to_string(demo_queries) + ")", saturation.standard_errors, width_labels(), measures);
    const Vec largest = nn::column_of(saturation.means, 0), largest_scaled = nn::column_of(saturation.means, 1);
    const Vec jacobian = nn::column_of(saturation.means, 2), jacobian_scaled = nn::column_of(saturation.means, 3);
    trace.tensor("largest_weight", "mean max_s a(s), unscaled", largest, width_labels(), {}, View::bars);
    const std::size_t widest = demo_widths.size() - 1;
    // a mean's standard error, and the ratio's from both (to first order)
    const auto se = [&](std::size_t width, std::size_t measure) { return saturation.standard_errors(width, measure); };
    const double ratio = jacobian(widest) / jacobian_scaled(widest);
    const double relative_se = se(widest, 2) / jacobian(widest);
    const double relative_se_scaled = se(widest, 3) / jacobian_scaled(widest);
    const double ratio_se = ratio * std::sqrt(relative_se * relative_se + relative_se_scaled * relative_se_scaled);
    trace.check("unscaled, d = 4: max a below 0.6 + 4 standard errors (value shown)", largest(0), 0.6 + 4.0 * se(0, 0));
    trace.check("unscaled, d = 512: max a within 0.1 + 4 standard errors of 1", 1.0 - largest(widest),
                0.1 + 4.0 * se(widest, 0));
    trace.check("scaled: max a varies by at most 0.1 (range shown)",
                nn::max_of(largest_scaled) - nn::min_of(largest_scaled), 0.1);
    trace.check("d = 512: |J| / |J| scaled below 1/3 + 4 standard errors (ratio shown)", ratio,
                1.0 / 3.0 + 4.0 * ratio_se);
}

// Step [attentional-state]: Luong's h~_t from the dot-score contexts, by the whole W_c and by its halves.
void record_attentional_state(Trace& trace, const Mat& Q, const Mat& K, const Mat& a_dot, const Mat& W_c1,
                              const Mat& W_c2) {
    trace.step("attentional-state", "Luong's attentional state", "h~_t = tanh(W_c [c_t; h_t])",
               "Luong et al. (2015, eq. 5) join the context and the decoder state and pass them through one "
               "layer; h~_t then predicts the next word (eq. 6). Equations 5-6 stop there; with input feeding "
               "(section 3.3) h~_t is also fed to the next step as part of its input. One matrix on the "
               "concatenation is the same as two matrices on the parts, W_c [c; h] = W_c1 c + W_c2 h with "
               "W_c = [W_c1 W_c2], which is how many implementations write it. We use the dot-score contexts.");
    trace.parameter("W_c1", "context half of W_c = [W_c1 W_c2], d x d, entries N(0, 1/(2d))", W_c1);
    trace.parameter("W_c2", "state half of W_c, d x d, entries N(0, 1/(2d))", W_c2);
    const Mat C_dot = nn::context_vectors(a_dot, K);
    const Mat H_tilde = nn::attentional_states(C_dot, Q, side_by_side(W_c1, W_c2));
    trace.tensor("H_tilde", "h~_t = tanh(W_c [c_t; q_t]), c_t from the dot score", H_tilde,
                 prefixed("h~_", target_sentence));
    trace.check("tanh(W_c [c; h]) equals tanh(W_c1 c + W_c2 h)",
                max_abs_difference(H_tilde, attentional_states_by_parts(C_dot, Q, W_c1, W_c2)), 1e-12);
}

// Local-p's predicted positions and, for each query (row) and source word (column), its window
// (1 inside, 0 outside) and its Gaussian factor.
struct LocalWindow {
    Vec p;         // T
    Mat window;    // T x S
    Mat gaussian;  // T x S
};

// Step [window]: the positions p_t that local-p predicts, and the window and Gaussian around each.
LocalWindow record_window(Trace& trace, const Mat& Q, const Mat& W_p, const Vec& v_p, std::size_t D) {
    const std::size_t S = source_sentence.size();
    const auto keys = prefixed("k_", source_sentence);
    const auto queries = prefixed("q_", target_sentence);
    trace.step("window", "Local-p: predict a position, open a window",
               "p_t = S sigmoid(v_p^T tanh(W_p h_t)),  window |s - p_t| <= D,  sigma = D / 2",
               "Global attention scores every source word at every step. Local attention (Luong et al. 2015, "
               "section 3.2) first predicts where to look, a real number p_t between 0 and S (eq. 9), and "
               "then looks only at the positions s with |s - p_t| <= D. Positions count from 1, like the key "
               "labels. A window that reaches past the first or the last word is clipped: it simply holds "
               "fewer positions. A Gaussian with sigma = D / 2 then favours the positions nearest p_t (eq. 10). "
               "Our W_p and v_p are random, so p_t lands wherever they send it; step [aimed] points them at the "
               "partners.");
    trace.parameter("W_p", "W_p, d_p x d, entries N(0, 1/d)", W_p);
    trace.parameter("v_p", "v_p, d_p, entries N(0, 1)", v_p);
    const Vec p = nn::predicted_positions(Q, W_p, v_p, S);
    trace.tensor("p", "p_t = S sigmoid(v_p^T tanh(W_p q_t)), S = " + std::to_string(S), p, queries);
    const Mat window = nn::local_window(p, S, D);
    const Mat gaussian = nn::gaussian_factors(p, S, D);
    trace.tensor("window", "1 where |s - p_t| <= D = " + std::to_string(D) + " and 1 <= s <= S",
                 one_column_per_query(window), keys, target_sentence);
    trace.tensor("gaussian", "exp(-(s - p_t)^2 / (2 sigma^2)), sigma = D / 2", one_column_per_query(gaussian), keys,
                 target_sentence);
    return {p, window, gaussian};
}

// Step [local]: the local-p weights beside the global dot-score weights.
void record_local(Trace& trace, const Mat& Q, const Mat& K, const Mat& a_dot, const LocalWindow& w, std::size_t D) {
    const auto keys = prefixed("k_", source_sentence);
    trace.step("local", "Local-p weights beside global weights",
               "a_t(s) = softmax_window(e_t)(s) exp(-(s - p_t)^2 / (2 sigma^2)),  0 outside",
               "The weights come from the dot scores of the words inside the window only: a softmax over the "
               "window, which is the global weights renormalised over the window. The Gaussian then multiplies "
               "them. Luong et al. (eq. 10) stop there and do not renormalise again, and neither do we: a "
               "column sums to less than 1, and the context is a shrunken average. Words outside the window "
               "get exactly 0, even a partner that the window missed.");
    const Mat a_local = nn::local_p_weights(nn::dot_scores(Q, K), w.p, D);
    trace.tensor("a_local", "local-p weights; row s, column t", one_column_per_query(a_local), keys,
                 target_sentence, View::heatmap).axes("source word (key)", "target word (query)");
    trace.tensor("step_" + std::to_string(featured_query + 1),
                 fmt::format("query {} ({}), p_t = {:.2f}, position by position", featured_query + 1,
                             target_sentence[featured_query], w.p(featured_query)),
                 featured_comparison(w.p, a_dot, w.gaussian, a_local), keys,
                 {"s - p_t", "global", "gaussian", "local"});
    trace.tensor("local_mass", "sum_s a_t(s), below 1: no renormalising after the Gaussian",
                 nn::row_sums(a_local), target_sentence);
    trace.tensor("c_local", "c_t = sum_s a_t(s) k_s over the window", nn::context_vectors(a_local, K),
                 prefixed("c_", target_sentence));
    trace.check("local weights are exactly 0 outside the window", largest_outside_window(a_local, w.window), 0.0);
    trace.check("in the window: local = gaussian * global / window mass",
                local_from_global_error(a_local, a_dot, w.window, w.gaussian), 1e-12);
}

// Where the aimed local-p sends query t: a quarter position before its partner (p_t < S always,
// and the first query's partner is word S itself).
Vec aimed_positions() {
    Vec aim = xt::empty<double>({partner_position.size()});
    for (std::size_t t = 0; t < partner_position.size(); ++t) aim(t) = as_double(partner_position[t]) - 0.25;
    return aim;
}

// How many queries' windows leave out their partner (0 when every window holds it).
double partners_missed(const Mat& window) {
    double missed = 0.0;
    for (std::size_t t = 0; t < partner_position.size(); ++t)
        if (window(t, partner_position[t] - 1) == 0.0) missed += 1.0;
    return missed;
}

// Step [aimed]: v_p solved so that every window lands on its partner, where d allows it.
void record_aimed(Trace& trace, const Mat& Q, const Mat& K, const Mat& W_p, const LocalWindow& drawn, std::size_t D) {
    const std::size_t S = source_sentence.size(), T = Q.shape(0), d = Q.shape(1);
    const auto keys = prefixed("k_", source_sentence);
    const Vec aim = aimed_positions();
    Mat logits = xt::empty<double>({T, std::size_t{1}});  // p = S sigmoid(z) <=> z = log(p / (S - p))
    for (std::size_t t = 0; t < T; ++t) logits(t, 0) = std::log(aim(t) / (as_double(S) - aim(t)));
    const Mat hidden = nn::tanh_each(nn::matmul(Q, nn::transposed(W_p), "Q W_p^T"));
    Mat v_map;  // 1 x d when the T hidden vectors are independent
    std::string why_not;
    if (d < T)
        why_not = fmt::format("At d = {} it cannot: v_p has {} entries for {} conditions, and in general no v_p meets "
                              "them all; run it with d of at least {} (the default is 6).",
                              d, d, T, T);
    else
        try {
            v_map = nn::linear_map_sending(hidden, logits);
        } catch (const std::invalid_argument&) {
            why_not = "Here it cannot: the five tanh(W_p q_t) are linearly dependent to rounding, so no v_p "
                      "separates them; another seed will do.";
        }
    trace.step("aimed", "Local-p aimed at the partners",
               "v_p^T tanh(W_p q_t) = log(a_t / (S - a_t)),  a_t = partner(t) - 1/4",
               "Step [window] admitted that random W_p and v_p send p_t anywhere. Luong et al. train them with "
               "the rest of the model; we do what training would reach, by solving. S sigmoid(z) = a_t exactly "
               "when z = log(a_t / (S - a_t)), so keep W_p and ask v_p for T = " + std::to_string(T) +
                   " logits: a quarter position before each partner (p_t < S always, and the first target word's "
                   "partner is word S itself). That is T linear conditions on the d entries of v_p, solved "
                   "exactly by the minimum-norm map of lesson 2 when the T vectors tanh(W_p q_t) are "
                   "independent, which needs d >= T. " +
                   (why_not.empty()
                        ? std::string("Every window now holds its partner, and the Gaussian gives the partner a "
                                      "factor of exp(-1/(32 sigma^2)). Compare the columns of a_aimed with "
                                      "a_local of step [local].")
                        : why_not));
    trace.tensor("aim", "a_t = partner(t) - 1/4", aim, target_sentence);
    if (!why_not.empty()) return;
    const Vec v_p = nn::row_of(v_map, 0);
    trace.tensor("v_p_aimed", "v_p solved: v_p^T tanh(W_p q_t) = log(a_t / (S - a_t))", v_p);
    const Vec p = nn::predicted_positions(Q, W_p, v_p, S);
    trace.tensor("p_aimed", "p_t = S sigmoid(v_p^T tanh(W_p q_t))", p, prefixed("q_", target_sentence));
    const Mat a_aimed = nn::local_p_weights(nn::dot_scores(Q, K), p, D);
    trace.tensor("a_aimed", "aimed local-p weights; row s, column t", one_column_per_query(a_aimed), keys,
                 target_sentence, View::heatmap).axes("source word (key)", "target word (query)");
    trace.tensor("partner_weight", "a_t(partner(t)), local-p drawn and aimed",
                 partner_weights({nn::local_p_weights(nn::dot_scores(Q, K), drawn.p, D), a_aimed}), target_sentence,
                 {"drawn", "aimed"});
    trace.check("v_p^T tanh(W_p q_t) equals the aimed logit (to 256 eps |v_p| max_t |tanh(W_p q_t)|)",
                max_abs_difference(nn::matmul(hidden, nn::transposed(as_row(v_p)), "tanh(Q W_p^T) v_p"), logits),
                solve_tolerance(v_map, hidden));
    trace.check("every aimed window holds its partner", partners_missed(nn::local_window(p, S, D)), 0.0);
}

// Which targets' partners a window of local-m (centred on t) contains, in words.
std::string local_m_reach(std::size_t D) {
    std::vector<std::string> caught, missed;
    for (std::size_t t = 0; t < partner_position.size(); ++t) {
        const std::size_t at = t + 1, partner = partner_position[t];
        const std::size_t distance = partner > at ? partner - at : at - partner;
        (distance <= D ? caught : missed).push_back(target_sentence[t]);
    }
    if (missed.empty()) return "With D = " + std::to_string(D) + " every window still reaches its partner.";
    return fmt::format("With D = {} the windows of {} miss their partners ({} of {} words), which sit near the other "
                       "end of the sentence; only {} reach them.",
                       D, fmt::join(missed, ", "), missed.size(), target_sentence.size(),
                       caught.empty() ? std::string("none") : fmt::format("{}", fmt::join(caught, ", ")));
}

// Step [local-m]: local-m (p_t = t) and the location-based score, Luong's other two alignments.
void record_local_m(Trace& trace, const Mat& Q, const Mat& K, const Mat& W_a, std::size_t D) {
    const auto keys = prefixed("k_", source_sentence);
    trace.step("local-m", "Local-m and location-based alignment",
               "local-m: p_t = t,  a_t = softmax over |s - t| <= D of e_t;  location: a_t = softmax(W_a h_t)",
               "Luong et al. (2015, section 3.2) also try local-m, the monotonic variant: no prediction at all, "
               "p_t = t, as if the t-th target word translated the t-th source word, and a plain softmax over the "
               "window (no Gaussian). Our pair is the worst case for it: Hindi puts the verb last and reads the "
               "phrase in the other order. " + local_m_reach(D) + " Their location-based score (eq. 8) goes "
               "further the other way: a_t = softmax(W_a h_t) is computed from the target state alone, one weight "
               "per source position, without looking at a single source word, so the same state gives the same "
               "weights whatever the sentence says; W_a fixes the source length S. Luong et al. compare "
               "these alignments with the content-based scores above in their table 4.");
    const Mat e = nn::dot_scores(Q, K);
    const Mat a_m = nn::local_m_weights(e, D);
    trace.tensor("a_local_m", "local-m weights (p_t = t); row s, column t", one_column_per_query(a_m), keys,
                 target_sentence, View::heatmap).axes("source word (key)", "target word (query)");
    trace.parameter("W_a", "W_a, S x d, entries N(0, 1/d)", W_a);
    const Mat a_location = nn::location_weights(Q, W_a);
    trace.tensor("a_location", "location-based weights softmax(W_a q_t); row s, column t",
                 one_column_per_query(a_location), keys, target_sentence, View::heatmap).axes("source position", "target word (query)");
    const Vec positions = nn::monotonic_positions(Q.shape(0));
    const Mat window = nn::local_window(positions, K.shape(0), D);
    trace.check("local-m weights are exactly 0 outside |s - t| <= D", largest_outside_window(a_m, window), 0.0);
    trace.check("local-m rows sum to 1 (no Gaussian)", row_sum_error(a_m), 1e-12);
    // local-p at p_t = t, divided by its Gaussian, is local-m: the two share the windowed softmax
    const Mat via_local_p = nn::local_p_weights(e, positions, D) / nn::gaussian_factors(positions, K.shape(0), D);
    trace.check("local-m = local-p at p_t = t without its Gaussian",
                max_abs_difference(xt::eval(via_local_p * window), a_m), 1e-12);
    trace.check("location-based rows sum to 1", row_sum_error(a_location), 1e-12);
}

void lesson_scores(Trace& trace, const Config& config) {
    const std::size_t d = config.size(param::d), D = config.size(param::D), S = source_sentence.size();
    Rng rng(config.seed);
    // attn run --input may replace K, Q and every weight below with the user's own (same shapes)
    const Mat K = trace.input("K", keys_of_equal_length(rng, S, d));
    const Mat Q = trace.input("Q", planted_queries(rng, K));
    record_inputs(trace, K, Q);

    const Mat a_dot = record_dot(trace, Q, K);
    const Mat W_g = trace.input("W_g", rng.normal_mat(d, d, 1.0 / std::sqrt(as_double(d))));
    const Mat a_general = record_general(trace, Q, K, W_g);
    const Mat W_q = trace.input("W_q", rng.normal_mat(d, d, 1.0 / std::sqrt(as_double(2 * d))));
    const Mat W_k = trace.input("W_k", rng.normal_mat(d, d, 1.0 / std::sqrt(as_double(2 * d))));
    const Vec v_a = trace.input("v_a", rng.normal_vec(d));
    const Mat a_concat = record_concat(trace, Q, K, W_q, W_k, v_a);
    record_scaled(trace, Q, K, a_dot, a_general, a_concat);

    // The measurements draw fresh queries and keys from rng, between the weights above and below.
    record_variance(trace, rng, config.size(param::pairs));
    record_saturation(trace, rng, config.size(param::queries), config.size(param::keys));

    const Mat W_c1 = trace.input("W_c1", rng.normal_mat(d, d, 1.0 / std::sqrt(as_double(2 * d))));
    const Mat W_c2 = trace.input("W_c2", rng.normal_mat(d, d, 1.0 / std::sqrt(as_double(2 * d))));
    record_attentional_state(trace, Q, K, a_dot, W_c1, W_c2);
    const Mat W_p = trace.input("W_p", rng.normal_mat(d, d, 1.0 / std::sqrt(as_double(d))));
    const Vec v_p = trace.input("v_p", rng.normal_vec(d));
    const LocalWindow window = record_window(trace, Q, W_p, v_p, D);
    record_local(trace, Q, K, a_dot, window, D);
    record_aimed(trace, Q, K, W_p, window, D);
    const Mat W_a = trace.input("W_a", rng.normal_mat(S, d, 1.0 / std::sqrt(as_double(d))));
    record_local_m(trace, Q, K, W_a, D);
}

}  // namespace
}  // namespace scores

Lesson scores_lesson() {
    using namespace scores;
    return make_lesson(3, "scores", "Score functions, scaling, local attention", "Luong et al. 2015; Vaswani et al. 2017",
                       {param::d, param::D, param::pairs, param::queries, param::keys}, limits, time_estimate,
                       lesson_scores,
                       {"inputs", "dot", "general", "concat", "scaled", "variance", "saturation",
                        "attentional-state", "window", "local", "aimed", "local-m"});
}

}  // namespace attn
