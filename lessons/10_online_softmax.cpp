// Lesson 10: the online softmax and attention tile by tile. The softmax of a row in one pass with a
// running maximum and a rescaled running sum (Milakov & Gimelshein 2018); then attention computed
// block by block with the same bookkeeping per query, never holding the T x T weights (Dao et al.
// 2022, FlashAttention, algorithm 1; Rabe & Staats 2021); what that saves in memory, and what the
// causal flag saves in exponentials; then the backward pass tile by tile from the output and each
// row's log-sum-exp alone (Dao et al. 2022, algorithm 4; Dao 2023), against lesson 8's dense one.
// T = tokens (queries = keys), d_k = query/key width, d_v = value width, B_r x B_c = queries x keys
// of one tile, T_max = the longest sequence the memory step runs.
#include "registry.hpp"
#include "support.hpp"

#include "core/portable_math.hpp"
#include "nn/backward.hpp"
#include "core/rng.hpp"
#include "nn/online_softmax.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"
#include "nn/tiled_attention.hpp"

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace attn {

namespace online_softmax {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param T{"T", 10, 1, 64, "tokens of the tiled examples (queries = keys)"};
const Param d_k{"d_k", 4, 1, 64, "width of the queries and keys"};
const Param d_v{"d_v", 3, 1, 64, "width of the values"};
const Param B_r{"B_r", 4, 1, 64, "queries per tile"};
const Param B_c{"B_c", 3, 1, 64, "keys per tile"};
const Param T_max{"T_max", 1024, 64, 4096,
                  "longest sequence the memory step runs, a power of two from 64 (longer ones are computed)"};
}  // namespace param

// Seconds per multiply-add of the memory step (the plain and the tiled form at T = 64 .. T_max, each
// T^2 (d_k + d_v) multiply-adds and T^2 exponentials): the largest setting, T_max = 4096 with
// d_k = d_v = 64, took 3.6 s on this project's 2-core machine at a load of 2.9, 0.6 ns per
// multiply-add, and with the smallest tiles (B_r = B_c = 1) 5.7 s at a load of 4.7, 1.1 ns; twice
// that, on the safe side: 14 s at the largest settings, under the cap. The default takes well under
// a second.
constexpr double seconds_per_madd = 2.4e-9;

std::string limits(const Config& c) {
    if (auto why = power_of_two(c, param::T_max, "the memory step doubles T from 64 up to it"); !why.empty())
        return why;
    const double T = as_double(c.size(param::T_max)), width = as_double(c.size(param::d_k) + c.size(param::d_v));
    // the plain form at T_max holds its scores and weights (T^2 each) and both forms' outputs (the
    // dense backward of step [backward-memory] runs only up to backward_run_cap, 7 T^2 doubles there)
    if (auto why = memory_limit(2.0 * T * T + 4.0 * T * width,
                                fmt::format("the {0} x {0} scores and weights of the plain form at T_max={0}",
                                            c.size(param::T_max)));
        !why.empty())
        return why;
    return "";
}

// The longest sequence step [backward-memory] runs (longer ones are computed): the dense backward
// holds 7 T^2 doubles for a while and both backward passes, each after its forward, do about 4 times
// the forward step's work per length (2 (d_k + d_v) multiply-adds per pair for the dense one,
// 3 d_k + 2 d_v for the tiled one), which at T_max = 4096 took 14 s of CPU (d_k = d_v = 64) and made
// the properties test's draws of this lesson several times as long.
constexpr std::size_t backward_run_cap = 1024;

// Both forms at every doubling up to T_max: about 4/3 of the work at T_max, twice (plain and tiled);
// then the backward step's 4 times that up to min(T_max, backward_run_cap).
TimeEstimate time_estimate(const Config& c) {
    const double T = as_double(c.size(param::T_max)), width = as_double(c.size(param::d_k) + c.size(param::d_v));
    const double T_b = std::min(T, as_double(backward_run_cap));
    return {(2.0 * T * T + 8.0 * T_b * T_b) * (4.0 / 3.0) * (width + 4.0) * seconds_per_madd, "the memory steps",
            fmt::format("(T_max^2 + 4 min(T_max, {})^2) (d_k + d_v + 4) = {:.3g} multiply-adds and exponentials, "
                        "twice",
                        backward_run_cap, (T * T + 4.0 * T_b * T_b) * (width + 4.0)),
            {{&param::T_max, 2.0}, {&param::d_k, 1.0}, {&param::d_v, 1.0}}};
}

constexpr double minus_inf = -std::numeric_limits<double>::infinity();
constexpr double mebibyte = 1024.0 * 1024.0;
// "Differs" below means by more than this; rounding alone stays below 1e-15.
constexpr double visible_change = 1e-3;
// Weights in [0, 1] from rows of a few entries: the one-pass and two-pass forms round differently,
// a few times 1e-16 at most; a lost rescale is off by O(1).
constexpr double softmax_tolerance = 1e-15;
constexpr double overflow_threshold = 709.782712893384;  // log of the largest double: e^x is inf above it
// Attention outputs are O(1) sums of up to 64 products per coordinate, added in another order
// (unnormalised and rescaled in the tiles, normalised weights in the plain form).
constexpr double attention_tolerance = 1e-12;

// The row of steps 1 and 2: logits near 700, one above exp's largest argument (709.78), and the
// largest entry last, so that every rescale of the running sum matters.
const std::vector<double> demo_row = {2.0, -1.0, 705.0, 0.5, 703.0, 712.0};

Vec vec_of(const std::vector<double>& x) {
    Vec v = xt::empty<double>({x.size()});
    for (std::size_t j = 0; j < x.size(); ++j) v(j) = x[j];
    return v;
}

std::vector<std::string> entry_labels(std::size_t n) { return numbered("x_", 1, n); }

double count_if_not(const Vec& v, bool (*pred)(double)) {
    return as_double(static_cast<std::size_t>(std::count_if(v.begin(), v.end(), [pred](double x) { return !pred(x); })));
}

bool is_finite(double x) { return std::isfinite(x); }

// The mistake of step 2: the running maximum kept, but the running sum never rescaled,
// l_j = l_{j-1} + e^{x_j - m_j}; then e^{x_i - m_n} / l_n.
std::pair<double, Vec> softmax_without_rescale(const Vec& x) {
    double m = minus_inf, l = 0.0;
    for (std::size_t j = 0; j < x.size(); ++j) {
        m = std::max(m, x(j));
        l += portable::exp(x(j) - m);
    }
    Vec out = xt::empty<double>({x.size()});
    for (std::size_t j = 0; j < x.size(); ++j) out(j) = portable::exp(x(j) - m) / l;
    return {l, out};
}

// sum_k e^{x_k - max_k x_k}, in order: the two-pass normaliser.
double shifted_sum(const Vec& x) {
    const double m = nn::max_of(x);
    double sum = 0.0;
    for (std::size_t j = 0; j < x.size(); ++j) sum += portable::exp(x(j) - m);
    return sum;
}

Mat plain_attention(const Mat& Q, const Mat& K, const Mat& V, bool causal, nn::AttentionResult& kept) {
    kept = causal ? nn::scaled_dot_product_attention(Q, K, V, nn::causal_mask(Q.shape(0)))
                  : nn::scaled_dot_product_attention(Q, K, V);
    return kept.output;
}

// Largest |l_i - sum_j e^{s_ij - m_i}| / l_i over the rows, the sum taken from the plain scores.
double normaliser_error(const nn::TiledAttention& tiled, const Mat& scores) {
    double worst = 0.0;
    for (std::size_t i = 0; i < scores.shape(0); ++i) {
        const double m = tiled.row_max(i);
        double sum = 0.0;
        for (std::size_t j = 0; j < scores.shape(1); ++j)
            if (scores(i, j) != minus_inf) sum += portable::exp(scores(i, j) - m);
        worst = std::max(worst, std::abs(tiled.row_sum(i) - sum) / sum);
    }
    return worst;
}

// Largest |m_i - max_j s_ij| over the rows.
double row_max_error(const nn::TiledAttention& tiled, const Mat& scores) {
    const Vec largest = nn::row_maxima(scores);
    return max_abs_difference(tiled.row_max, largest);
}

std::size_t blocks_of(std::size_t n, std::size_t block) { return (n + block - 1) / block; }

std::vector<std::string> key_block_labels(std::size_t T, std::size_t B_c) {
    std::vector<std::string> out;
    for (std::size_t j0 = 0; j0 < T; j0 += B_c)
        out.push_back(fmt::format("keys {}-{}", j0 + 1, std::min(T, j0 + B_c)));
    return out;
}

// Step [two-pass]: the max-shifted softmax, and the unshifted one overflowing.
void record_two_pass(Trace& trace, const Vec& x) {
    const std::size_t n = x.size();
    const Vec unshifted = unshifted_softmax(x), safe = nn::softmax(x);
    trace.step("two-pass", "The safe softmax reads its row three times",
               "softmax(x)_i = e^{x_i - m} / sum_k e^{x_k - m},  m = max_k x_k",
               "Every lesson so far computed its softmax this way (nn::softmax). The exponential of a double "
               "overflows above 709.78, and a score of 712 is not absurd for unscaled logits; e^712 is inf, "
               "the sum is inf, and inf / inf is NaN. Subtracting the row's largest entry first changes "
               "nothing in exact arithmetic (the factor e^{-m} cancels between numerator and denominator) and "
               "makes every exponent at most 0, so the largest term is exactly 1 and the sum lies between 1 "
               "and n. The price is three passes over the row: one for m, one for the sum, one for the "
               "weights. For a row in fast memory that hardly matters; for a row of attention scores that "
               "has to be fetched from slower memory each time, it is three trips, and the first pass must "
               "finish before the second can start.");
    trace.tensor("x", "one row of logits", x, entry_labels(n));
    trace.tensor("unshifted", "e^{x_i} / sum_k e^{x_k}, no shift", unshifted, entry_labels(n));
    trace.tensor("softmax", "e^{x_i - m} / sum_k e^{x_k - m} (nn::softmax)", safe, entry_labels(n), {}, View::bars);
    const std::size_t largest = static_cast<std::size_t>(std::max_element(x.begin(), x.end()) - x.begin());
    // the lesson's row overflows; a row given with --input may not, and then the claim is the other one
    if (x(largest) > overflow_threshold)
        trace.check(fmt::format("unshifted: e^{:g} overflows, and the largest entry's weight is inf / inf = NaN (1 "
                                "when not)",
                                x(largest)),
                    std::isnan(unshifted(largest)) ? 0.0 : 1.0, 0.0);
    else
        trace.check("no entry above 709.78: the unshifted form does not overflow and agrees with the shifted one",
                    max_abs_difference(unshifted, safe), softmax_tolerance);
    trace.check("shifted: the weights are finite and sum to 1", std::abs(nn::sum_of(safe) - 1.0), 1e-15);
}

// "Here the maximum moves from 2 to 705 and then to 712.": the values the running maximum (column 0
// of nn::online_normalizer_steps) takes, in order.
std::string maximum_moves(const Mat& steps) {
    std::vector<std::string> values;
    for (std::size_t j = 0; j < steps.shape(0); ++j)
        if (j == 0 || steps(j, 0) != steps(j - 1, 0)) values.push_back(fmt::format("{:g}", steps(j, 0)));
    if (values.size() == 1) return "Here the first entry is the largest, so m never moves and l is never rescaled.";
    std::string moves = "Here the maximum moves from " + values[0] + " to " + values[1];
    for (std::size_t k = 2; k < values.size(); ++k) moves += " and then to " + values[k];
    return moves + ", and each time l is multiplied by e^{m_{j-1} - m_j}.";
}

// Step [online]: the running maximum and rescaled running sum, entry by entry; the mistake of
// forgetting the rescale.
void record_online(Trace& trace, const Vec& x) {
    const std::size_t n = x.size();
    const Mat steps = nn::online_normalizer_steps(x);
    const Vec online = nn::online_softmax(x);
    const auto [wrong_l, wrong] = softmax_without_rescale(x);
    trace.step("online", "One pass: a running maximum and a sum that follows it",
               "m_j = max(m_{j-1}, x_j),  l_j = l_{j-1} e^{m_{j-1} - m_j} + e^{x_j - m_j},  m_0 = -inf, l_0 = 0",
               "Milakov and Gimelshein (2018, arXiv:1805.02867, algorithm 3) merge the first two passes. "
               "Read the row once, keeping the largest entry so far, m_j, and the sum of the exponentials so "
               "far taken relative to it, l_j = sum_{k<=j} e^{x_k - m_j}. When a new entry is not larger, m "
               "stays and e^{x_j - m_j} is simply added. When it is larger, every term already in l was "
               "measured against the old maximum; multiplying l by e^{m_{j-1} - m_j}, a number below 1, "
               "moves all of them onto the new one at once. After the last entry l_n is the normaliser of "
               "the two-pass softmax, and one more pass writes the weights e^{x_i - m_n} / l_n: two reads of "
               "the row instead of three, and the first one needs no earlier pass. No exponent is ever "
               "positive, so nothing overflows. " + maximum_moves(steps) +
                   " Forgetting the rescale keeps every old term against its own old maximum: each entry that "
                   "raised the maximum put e^{x_j - x_j} = 1 into l, and the ones before the winner stay there as "
                   "if they were as large as it, so the weights come out too small.");
    trace.tensor("x", "the row of step [two-pass]", x, entry_labels(n));
    trace.tensor("m_l", "row j: m_j and l_j after reading x_j", steps, entry_labels(n),
                 std::vector<std::string>{"m_j", "l_j"});
    trace.tensor("online", "e^{x_i - m_n} / l_n (nn::online_softmax)", online, entry_labels(n), {}, View::bars);
    trace.tensor("no_rescale", "the mistake: l_j = l_{j-1} + e^{x_j - m_j}, then e^{x_i - m_n} / l_n", wrong,
                 entry_labels(n));
    trace.check("m_n is the largest entry, exactly (a maximum is never rounded)",
                std::abs(steps(n - 1, 0) - nn::max_of(x)), 0.0);
    trace.check("l_n equals the two-pass sum sum_k e^{x_k - m}", std::abs(steps(n - 1, 1) - shifted_sum(x)), 1e-15);
    trace.check("the online softmax equals the two-pass softmax", max_abs_difference(online, nn::softmax(x)),
                softmax_tolerance);
    if (steps(n - 1, 0) == steps(0, 0))  // a row given with --input whose first entry is its largest
        trace.check("the maximum never moves, so forgetting the rescale changes nothing here",
                    max_abs_difference(wrong, online), 0.0);
    else
        trace.check(fmt::format("without the rescale l_n = {:.4g} instead of {:.4g}: the weights miss by > 1e-3 "
                                "(the miss counted when smaller)",
                                wrong_l, steps(n - 1, 1)),
                    max_abs_difference(wrong, online) > visible_change ? 0.0 : 1.0, 0.0);
}

// Step [edges]: the rows where a one-pass softmax goes wrong, each against the two-pass form.
void record_edges(Trace& trace) {
    const Mat X = {{1000.0, -1000.0, 999.0, 1000.5},   // overflow without the shift
                   {0.0, 1.0, 2.0, 50.0},              // the maximum last
                   {2.0, 2.0, 2.0, 2.0},               // ties
                   {minus_inf, minus_inf, 3.0, 1.0},   // masked at first: l must stay 0, not NaN
                   {minus_inf, minus_inf, minus_inf, minus_inf}};  // masked everywhere
    const std::vector<std::string> rows = {"±1e3", "late max", "ties", "-inf first", "all -inf"};
    const Mat online = nn::online_softmax_rows(X), two_pass = nn::softmax_rows(X);
    const Vec one = nn::online_softmax(Vec{-3.5});
    trace.step("edges", "The rows where a one-pass softmax goes wrong",
               "online_softmax_rows(X) = softmax_rows(X), row by row",
               "Five rows of four logits, each chosen so that a plausible slip shows. Logits of about ±1000 "
               "overflow any form that exponentiates before subtracting. A maximum that arrives last punishes "
               "a forgotten rescale. Ties must give equal weights. A row that starts with -inf (masked "
               "entries) has m_j = -inf for a while: the rescale factor e^{m_{j-1} - m_j} would be "
               "e^{-inf - (-inf)} = NaN there, so the pass adds nothing while m is -inf and l stays 0. A row "
               "masked everywhere follows the project's convention for a fully masked row (nn::softmax, "
               "nn::masked_softmax): all weights 0, not 0/0 = NaN, so that a padded query gets a zero output "
               "and no NaN leaks out of it; the online form reaches it without dividing, since its l is still "
               "0 at the end. A row of one entry gets weight 1.");
    trace.tensor("X", "five rows of logits", X, rows, entry_labels(4));
    trace.tensor("A_online", "online_softmax_rows(X)", online, rows, entry_labels(4), View::heatmap).axes("row", "entry");
    trace.tensor("A_one", "online_softmax of the single logit -3.5", one);
    trace.check("every row equals the two-pass softmax (the all -inf row: zeros in both)",
                max_abs_difference(online, two_pass), softmax_tolerance);
    trace.check("the all -inf row is exactly 0, with no NaN",
                nn::max_abs_of(nn::row_of(online, 4)) + count_if_not(nn::row_of(online, 4), is_finite), 0.0);
    trace.check("the ties get exactly 1/4 each", max_abs_difference(nn::row_of(online, 2), Vec{0.25, 0.25, 0.25, 0.25}),
                0.0);
    trace.check("a single logit gets weight exactly 1", std::abs(one(0) - 1.0), 0.0);
}

struct Inputs {
    Mat Q, K, V;
};

// Step [tiles]: attention tile by tile against the plain form.
void record_tiles(Trace& trace, const Inputs& in, std::size_t B_r, std::size_t B_c) {
    const std::size_t T = in.Q.shape(0);
    nn::AttentionResult plain;
    const Mat O_plain = plain_attention(in.Q, in.K, in.V, false, plain);
    const nn::TiledAttention tiled = nn::tiled_attention(in.Q, in.K, in.V, B_r, B_c, false);
    const std::size_t tiles = blocks_of(T, B_r) * blocks_of(T, B_c);
    trace.step("tiles", "Attention one tile at a time",
               "per query i and key block b:  m_new = max(m_i, max_{j in b} s_ij),  c = e^{m_i - m_new},  "
               "l_i = c l_i + sum_j e^{s_ij - m_new},  O_i = c O_i + sum_j e^{s_ij - m_new} v_j;  at the end O_i / l_i",
               fmt::format(
                   "The same bookkeeping works for a whole attention row, because the weights are only ever used "
                   "to average the values: the running sum l_i and the running average's numerator O_i (a "
                   "vector of d_v = {2}) are rescaled by the same factor c whenever the running maximum grows, "
                   "and divided once at the end. Dao et al. (2022, arXiv:2205.14135, algorithm 1) cut Q into "
                   "blocks of B_r = {3} queries and K, V into blocks of B_c = {4} keys; for each pair of blocks "
                   "they form one B_r x B_c tile of scores in fast on-chip memory, fold it into m, l and O, and "
                   "throw it away. Their algorithm 1 divides by l at every step; the form here keeps O "
                   "unnormalised and divides once (as FlashAttention-2, Dao 2023, does), which gives the same "
                   "numbers up to rounding. Rabe and Staats (2021, \"Self-attention does not need O(n^2) "
                   "memory\") made the same observation for memory, chunk by chunk. T = {0} is not a multiple of "
                   "either block size here, so the last blocks are short. The table shows m_i after each key "
                   "block: it only grows, and each growth ({1} in all) rescales what was added before. The "
                   "running maximum ends at the row's largest score exactly, since a maximum is never rounded; l "
                   "and O agree with the plain form up to rounding, because they add the same terms in another "
                   "order.",
                   T, tiled.rescalings, in.V.shape(1), B_r, B_c));
    trace.tensor("Q", "T x d_k", in.Q, numbered("q_", 1, T));
    trace.tensor("K", "T x d_k", in.K, numbered("k_", 1, T));
    trace.tensor("V", "T x d_v", in.V, numbered("v_", 1, T));
    trace.tensor("m_after_block", "m_i after each key block", tiled.max_after_block, numbered("q_", 1, T),
                 key_block_labels(T, B_c));
    trace.tensor("l", "l_i = sum_j e^{s_ij - m_i}, from the tiles", tiled.row_sum, numbered("q_", 1, T));
    trace.tensor("O_tiled", "O_i / l_i, T x d_v", tiled.output, numbered("o_", 1, T));
    trace.tensor("O_plain", "softmax(Q K^T / sqrt(d_k)) V, the T x T weights held whole", O_plain, numbered("o_", 1, T));
    trace.tensor("counts", "what the tiled run did",
                 Vec{as_double(tiles), as_double(tiled.exponentials), as_double(tiled.rescalings)},
                 std::vector<std::string>{"tiles", "exponentials e^{s - m}", "rescalings"});
    trace.check("O_tiled equals the plain softmax(Q K^T / sqrt(d_k)) V", max_abs_difference(tiled.output, O_plain),
                attention_tolerance);
    // exactly for attn, whose scores are the tiles' own products; a student's scaled-attention sums them in
    // another order, one rounding apart (2.2e-16 measured)
    trace.check("m_i is the largest score of row i, exactly (to 1e-12 where a student's functions ran)",
                row_max_error(tiled, plain.scores), 0.0, 1e-12);
    trace.check("l_i equals sum_j e^{s_ij - m_i} from the plain scores (relative error)",
                normaliser_error(tiled, plain.scores), 1e-14);
    trace.check(fmt::format("every score is exponentiated once: T^2 = {}", T * T),
                std::abs(as_double(tiled.exponentials) - as_double(T * T)), 0.0);
    trace.check(fmt::format("every pair of blocks makes one tile: {} x {} = {}", blocks_of(T, B_r), blocks_of(T, B_c),
                            tiles),
                std::abs(as_double(tiled.tiles) - as_double(tiles)), 0.0);
}

// Step [block-sizes]: the result does not depend on how the work is cut.
void record_block_sizes(Trace& trace, const Inputs& in, std::size_t B_r, std::size_t B_c) {
    const std::size_t T = in.Q.shape(0);
    nn::AttentionResult plain;
    const Mat O_plain = plain_attention(in.Q, in.K, in.V, false, plain);
    const std::vector<std::pair<std::size_t, std::size_t>> sizes = {
        {1, 1}, {2, 5}, {B_r, B_c}, {T, 1}, {1, T}, {T, T}, {T + 3, 2 * T}};
    Mat table = nn::zeros(sizes.size(), 4);
    std::vector<std::string> labels;
    double worst = 0.0, exps_error = 0.0, one_block_rescalings = 0.0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
        const auto [r, c] = sizes[k];
        const nn::TiledAttention t = nn::tiled_attention(in.Q, in.K, in.V, r, c, false);
        const double error = max_abs_difference(t.output, O_plain);
        table(k, 0) = as_double(t.tiles);
        table(k, 1) = as_double(t.exponentials);
        table(k, 2) = as_double(t.rescalings);
        table(k, 3) = error;
        labels.push_back(fmt::format("{} x {}", r, c));
        worst = std::max(worst, error);
        exps_error = std::max(exps_error, std::abs(as_double(t.exponentials) - as_double(T * T)));
        if (c >= T) one_block_rescalings += as_double(t.rescalings);
    }
    trace.step("block-sizes", "However the work is cut, the same attention",
               "O_tiled(B_r, B_c) = softmax(Q K^T / sqrt(d_k)) V  for every B_r, B_c",
               "The block sizes are a choice about hardware, not about the result: B_r x B_c is whatever tile "
               "fits in fast memory (FlashAttention picks them from the size of a GPU's shared memory). The "
               "table runs the same Q, K, V with tiles from 1 x 1 (one score at a time, the online softmax of "
               "step [online] for every query) to blocks larger than T (one tile, the plain computation with "
               "the division moved to the end), and with sizes that divide T and sizes that do not. The "
               "outputs differ from the plain form only in the last bits. The number of exponentials is T^2 "
               "every time: tiling moves work around and adds none, except the rescale factors, one per "
               "growth of a running maximum. With one key block per row the maximum is known before anything "
               "is added, so nothing is ever rescaled.");
    trace.tensor("by_block_size", "one row per tile shape, B_r x B_c; max err = max |O - O_plain|", table, labels,
                 std::vector<std::string>{"tiles", "exps", "rescales", "max err"});
    trace.check("every tile shape gives the plain output", worst, attention_tolerance);
    trace.check(fmt::format("every tile shape evaluates T^2 = {} exponentials", T * T), exps_error, 0.0);
    trace.check("a single key block (B_c >= T) never rescales", one_block_rescalings, 0.0);
}

// Step [causal]: the causal flag, skipping the tiles above the diagonal and the masked entries.
void record_causal(Trace& trace, const Inputs& in, std::size_t B_r, std::size_t B_c) {
    const std::size_t T = in.Q.shape(0);
    nn::AttentionResult plain;
    const Mat O_plain = plain_attention(in.Q, in.K, in.V, true, plain);
    const nn::TiledAttention tiled = nn::tiled_attention(in.Q, in.K, in.V, B_r, B_c, true);
    const std::size_t visible = T * (T + 1) / 2;
    trace.step("causal", "The causal flag: the upper triangle is never computed",
               "query i sees keys j <= i:  key blocks with first key > last query of the block are skipped",
               fmt::format(
                   "The plain form computes all T^2 scores, adds the causal mask and lets the softmax turn the "
                   "-inf entries into zeros (lesson 4). Tiled, the mask becomes a rule about which work to do. A "
                   "key block that starts after the last query of a query block holds only masked entries: the "
                   "tile is skipped without a single score ({0} of {1} tiles here). A tile that crosses the "
                   "diagonal is computed only up to j = i in each row, so no masked score is formed and no "
                   "exponential is taken for one: T (T + 1) / 2 = {2} exponentials instead of T^2 = {3}. Since "
                   "the diagonal is always visible, every row has at least one key and l_i >= 1. The skipped "
                   "blocks show as -inf in the running maximum: nothing was ever seen there.",
                   tiled.tiles_skipped, tiled.tiles + tiled.tiles_skipped, visible, T * T));
    trace.tensor("m_after_block", "m_i after each key block (-inf: skipped)", tiled.max_after_block,
                 numbered("q_", 1, T), key_block_labels(T, B_c));
    trace.tensor("O_tiled", "causal, tile by tile", tiled.output, numbered("o_", 1, T));
    trace.tensor("O_plain", "softmax(Q K^T / sqrt(d_k) + M_causal) V", O_plain, numbered("o_", 1, T));
    trace.tensor("counts", "what each form evaluated",
                 Mat{{as_double(T * T), as_double(visible)},
                     {as_double(tiled.tiles + tiled.tiles_skipped), as_double(tiled.tiles)}},
                 std::vector<std::string>{"exponentials", "tiles"}, std::vector<std::string>{"plain", "tiled"});
    trace.check("O_tiled equals the masked plain attention", max_abs_difference(tiled.output, O_plain),
                attention_tolerance);
    trace.check(fmt::format("exponentials: T (T + 1) / 2 = {}, none for a masked entry", visible),
                std::abs(as_double(tiled.exponentials) - as_double(visible)), 0.0);
    trace.check("the first output is the first value, o_1 = v_1",
                max_abs_difference(nn::row_of(tiled.output, 0), nn::row_of(in.V, 0)), 1e-15);
}

// Step [memory]: the bytes each form holds, run up to T_max and computed beyond.
void record_memory(Trace& trace, Rng& rng, std::size_t T_max, std::size_t d_k, std::size_t d_v, std::size_t B_r,
                   std::size_t B_c) {
    constexpr std::size_t T_first = 64, T_last_computed = std::size_t{1} << 20;
    const Mat Q = rng.normal_mat(T_max, d_k), K = rng.normal_mat(T_max, d_k), V = rng.normal_mat(T_max, d_v);
    std::vector<std::size_t> lengths;
    for (std::size_t T = T_first; T <= T_last_computed; T *= 2) lengths.push_back(T);
    Mat table = nn::zeros(lengths.size(), 3);
    std::vector<std::string> labels;
    double plain_bytes_error = 0.0, tiled_bytes_error = 0.0, output_error = 0.0, exps_error = 0.0;
    for (std::size_t k = 0; k < lengths.size(); ++k) {
        const std::size_t T = lengths[k];
        const double tile = as_double(std::min(B_r, T) * std::min(B_c, T));
        const double plain_formula = 8.0 * (2.0 * as_double(T) * as_double(T) + as_double(T * d_v));
        const double tiled_formula = 8.0 * (as_double(T * d_v) + 2.0 * as_double(T) + tile);
        double plain_bytes = plain_formula, tiled_bytes = tiled_formula;
        const bool run = T <= T_max;
        if (run) {
            trace.progress(fmt::format("memory: T = {}", T));
            const Mat Q_T = nn::rows_of(Q, 0, T), K_T = nn::rows_of(K, 0, T), V_T = nn::rows_of(V, 0, T);
            nn::TiledAttention tiled = nn::tiled_attention(Q_T, K_T, V_T, B_r, B_c, false);
            tiled_bytes = tiled.working_bytes;
            nn::AttentionResult plain = nn::scaled_dot_product_attention(Q_T, K_T, V_T);
            plain_bytes = as_double((plain.scores.size() + plain.weights.size() + plain.output.size()) * sizeof(double));
            output_error = std::max(output_error, max_abs_difference(tiled.output, plain.output));
            exps_error = std::max(exps_error, std::abs(as_double(tiled.exponentials) - as_double(T * T)));
            plain_bytes_error = std::max(plain_bytes_error, std::abs(plain_bytes - plain_formula));
            tiled_bytes_error = std::max(tiled_bytes_error, std::abs(tiled_bytes - tiled_formula));
        }
        table(k, 0) = plain_bytes / mebibyte;
        table(k, 1) = tiled_bytes / mebibyte;
        table(k, 2) = plain_bytes / tiled_bytes;
        labels.push_back(fmt::format(run ? "T={}" : "T={} *", T));
    }
    trace.step("memory", "The memory: T^2 against T d",
               fmt::format("plain: 8 (2 T^2 + T d_v) bytes;   tiled: 8 (T d_v + 2 T + B_r B_c) bytes   "
                           "(d_v = {}, B_r x B_c = {} x {})",
                           d_v, B_r, B_c),
               fmt::format(
                   "What the tiles buy. nn::scaled_dot_product_attention returns the T x T scores and the T x T "
                   "weights (lesson 7 showed them growing) besides the T x d_v output: that is what it holds at "
                   "its peak. The tiled form holds the output, which doubles as its accumulator, the running "
                   "maxima and sums (T each) and one B_r x B_c tile at a time, so its memory grows like T, not "
                   "T^2. The inputs Q, K, V are the same for both and left out. Rows with 'run' = 1 ran both "
                   "forms at that length (up to T_max = {0}) and counted the bytes of what each allocated; the "
                   "rows after it are the same formulas for lengths this lesson does not run, up to a million "
                   "tokens, where the plain form would need 16 TiB. The work is the same T^2 (d_k + d_v) either "
                   "way (the checks count the exponentials): FlashAttention is faster on a GPU not by doing "
                   "less arithmetic but by reading and writing the T x T matrices to slow memory never, where "
                   "the plain form writes them once and reads them back (Dao et al. 2022, section 3.2). On a "
                   "CPU with attn's plain loops the tiled form gains memory, not time.",
                   T_max));
    trace.tensor("memory", "MiB held by each form; * computed, not run", table, labels,
                 std::vector<std::string>{"plain MiB", "tiled MiB", "plain / tiled"}, View::plot);
    trace.check("where run, the plain form holds 8 (2 T^2 + T d_v) bytes", plain_bytes_error, 0.0);
    trace.check("where run, the tiled form holds 8 (T d_v + 2 T + B_r B_c) bytes", tiled_bytes_error, 0.0);
    trace.check(fmt::format("where run, the two forms give the same outputs (T = 64 .. {})", T_max), output_error,
                attention_tolerance);
    trace.check("where run, the tiled form evaluates T^2 exponentials", exps_error, 0.0);
}

// ---------------------------------------------------------------- the backward pass, tile by tile

// The dense backward of lesson 8 (nn::scaled_dot_product_attention_backward) with its forward.
struct Dense {
    nn::AttentionResult forward;
    nn::AttentionGrads grads;
};

Dense dense_backward(const Inputs& in, const Mat& dO, bool causal) {
    Dense d;
    plain_attention(in.Q, in.K, in.V, causal, d.forward);
    d.grads = nn::scaled_dot_product_attention_backward(in.Q, in.K, in.V, d.forward, dO);
    return d;
}

// The forward tile by tile and what it saves for the backward: O and L.
struct Saved {
    Mat O;
    Vec L;
};

Saved tiled_forward(const Inputs& in, std::size_t B_r, std::size_t B_c, bool causal) {
    const nn::TiledAttention t = nn::tiled_attention(in.Q, in.K, in.V, B_r, B_c, causal);
    return {t.output, nn::row_log_sum_exp(t.row_max, t.row_sum)};
}

nn::TiledAttentionGrads tiled_backward(const Inputs& in, const Mat& dO, std::size_t B_r, std::size_t B_c,
                                       bool causal) {
    const Saved saved = tiled_forward(in, B_r, B_c, causal);
    return nn::tiled_attention_backward(in.Q, in.K, in.V, saved.O, saved.L, dO, B_r, B_c, causal);
}

// Largest difference of dQ, dK and dV from the dense ones.
double gradient_error(const nn::TiledAttentionGrads& t, const nn::AttentionGrads& d) {
    return std::max({max_abs_difference(t.dQ, d.dQ), max_abs_difference(t.dK, d.dK), max_abs_difference(t.dV, d.dV)});
}

// e^{s_ij - c_i} for every entry: the weights recomputed from a per-row constant c (L, or the mistake m).
Mat exp_minus_rows(const Mat& S, const Vec& c) {
    Mat out = xt::empty<double>({S.shape(0), S.shape(1)});
    for (std::size_t i = 0; i < S.shape(0); ++i)
        for (std::size_t j = 0; j < S.shape(1); ++j) out(i, j) = portable::exp(S(i, j) - c(i));
    return out;
}

// Largest |P_ij D_i|: what dS loses when D is forgotten.
double row_term_size(const Mat& P, const Vec& D) {
    double worst = 0.0;
    for (std::size_t i = 0; i < P.shape(0); ++i)
        for (std::size_t j = 0; j < P.shape(1); ++j) worst = std::max(worst, std::abs(P(i, j) * D(i)));
    return worst;
}

// A slip's claim: that it shows (> 1e-3), or, where the inputs hide it (T = 1, say), that it would go unseen.
void check_slip_shows(Trace& trace, const std::string& slip, double miss) {
    if (miss > visible_change)
        trace.check(fmt::format("the slip, {}, misses by {:.3g} > 1e-3", slip, miss),
                    0.0, 0.0);
    else
        trace.check(fmt::format("the slip, {}, would go unseen here: it misses by at most 1e-3", slip), miss,
                    visible_change);
}

// Step [backward-saved]: what the backward keeps of the forward (O and L) and what it makes from them (P, D).
void record_backward_saved(Trace& trace, const Inputs& in, const Mat& dO, std::size_t B_r, std::size_t B_c) {
    const std::size_t T = in.Q.shape(0);
    const nn::TiledAttention t = nn::tiled_attention(in.Q, in.K, in.V, B_r, B_c, false);
    const Vec L = nn::row_log_sum_exp(t.row_max, t.row_sum), D = nn::output_gradient_dots(dO, t.output);
    const Dense dense = dense_backward(in, dO, false);
    const Mat P = exp_minus_rows(dense.forward.scores, L), P_from_m = exp_minus_rows(dense.forward.scores, t.row_max);
    const Mat D_two_ways = row_averages_two_ways(dense.forward.weights, dense.grads.dP, t.output, dO);
    trace.step("backward-saved", "What the backward pass keeps: O and L",
               "L_i = m_i + log l_i,  P_ij = e^{s_ij - L_i},  D_i = sum_j P_ij dP_ij = dO_i . o_i",
               "Lesson 8's backward reads the T x T weights P that the forward kept. The tiled forward threw "
               "every tile away, so the backward pass of FlashAttention (Dao et al. 2022, algorithm 4; Dao "
               "2023) recomputes them, tile by tile, from the scores and one number per row saved by the "
               "forward: the log of the row's normaliser, L_i = m_i + log l_i. Then e^{s_ij - L_i} = "
               "e^{s_ij - m_i} / l_i is the weight itself, already divided: one subtraction and one "
               "exponential per entry, no running maximum, no division. Saving m_i alone is the slip to "
               "avoid: e^{s_ij - m_i} sums to l_i along the row, not to 1. The softmax's backward also needs "
               "the row term D_i = sum_j P_ij dP_ij, a sum over the whole row that no single tile sees. "
               "Lesson 8 (step [softmax-backward]) showed it equals dO_i . o_i, because o_i = sum_j P_ij v_j: "
               "one dot product per row from the saved output (nn::output_gradient_dots), computed once "
               "before the tiles. dO is the gradient arriving at the output, drawn at random here (the loss "
               "sum_ij dO_ij O_ij).");
    trace.tensor("dO", "dL/dO, T x d_v", dO, numbered("o_", 1, T));
    trace.tensor("L", "L_i = m_i + log l_i, from the tiled forward", L, numbered("q_", 1, T));
    trace.tensor("P_recomputed", "e^{s_ij - L_i}", P, numbered("q_", 1, T), numbered("k_", 1, T), View::heatmap)
        .axes("query", "key");
    trace.tensor("D", "D_i = sum_j P_ij dP_ij (column 1) = dO_i . o_i (column 2)", D_two_ways, numbered("q_", 1, T),
                 std::vector<std::string>{"P . dP", "dO . O"});
    // L_i rounds to within an ulp of its size, and e^{s - L} carries that error: a few 1e-16 for scores of
    // a few units, more for large ones (the properties test came to 0.78e-15); a slip is off by O(1)
    trace.check("e^{s_ij - L_i} equals the plain form's weights", max_abs_difference(P, dense.forward.weights),
                attention_tolerance);
    trace.check("D_i = dO_i . o_i equals sum_j P_ij dP_ij (lesson 8's identity)",
                max_abs_difference(nn::column_of(D_two_ways, 0), D), attention_tolerance);
    check_slip_shows(trace, "e^{s_ij - m_i} for the weights (its rows sum to l_i)",
                     nn::max_of(nn::row_sums(P_from_m)) - 1.0);
    check_slip_shows(trace, "D forgotten (dS_ij loses P_ij D_i)", row_term_size(P, D));
}

// The tile shapes of step [backward-tiles]: those of step [block-sizes].
std::vector<std::pair<std::size_t, std::size_t>> tile_shapes(std::size_t T, std::size_t B_r, std::size_t B_c) {
    return {{1, 1}, {2, 5}, {B_r, B_c}, {T, 1}, {1, T}, {T, T}, {T + 3, 2 * T}};
}

// Step [backward-tiles]: the gradients tile by tile against lesson 8's, every tile shape, with and without the mask.
void record_backward_tiles(Trace& trace, const Inputs& in, const Mat& dO, std::size_t B_r, std::size_t B_c) {
    const std::size_t T = in.Q.shape(0);
    const nn::TiledAttentionGrads g = tiled_backward(in, dO, B_r, B_c, false);
    const Dense dense = dense_backward(in, dO, false), dense_causal = dense_backward(in, dO, true);
    const auto shapes = tile_shapes(T, B_r, B_c);
    Mat table = nn::zeros(shapes.size(), 4);
    std::vector<std::string> labels;
    double worst = 0.0, worst_causal = 0.0;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
        const auto [r, c] = shapes[k];
        const nn::TiledAttentionGrads full = tiled_backward(in, dO, r, c, false);
        const nn::TiledAttentionGrads causal = tiled_backward(in, dO, r, c, true);
        table(k, 0) = as_double(full.tiles);
        table(k, 1) = gradient_error(full, dense.grads);
        table(k, 2) = as_double(causal.tiles);
        table(k, 3) = gradient_error(causal, dense_causal.grads);
        worst = std::max(worst, table(k, 1));
        worst_causal = std::max(worst_causal, table(k, 3));
        labels.push_back(fmt::format("{} x {}", r, c));
    }
    trace.step("backward-tiles", "The gradients, one tile at a time",
               "per tile:  P = e^{S - L},  dV_j += sum_i P_ij dO_i,  dS = P * (dO V^T - D),  "
               "dQ_i += sum_j dS_ij k_j / sqrt(d_k),  dK_j += sum_i dS_ij q_i / sqrt(d_k)",
               fmt::format(
                   "Each tile of B_r queries and B_c keys holds every number its share of the gradients needs: "
                   "its scores give P through the saved L, dO_i and v_j give dP_ij, D_i is known, so dS_ij = "
                   "P_ij (dP_ij - D_i) follows, and with it the tile's parts of three sums: dV_j and dK_j sum "
                   "over the queries i, dQ_i over the keys j. Algorithm 4 of Dao et al. (2022) runs the key "
                   "blocks in the outer loop, so that a block's dK_j and dV_j stay in fast memory while every "
                   "query block passes, and adds each tile's dQ_i into slow memory (FlashAttention-2 splits "
                   "this into two passes to avoid the writes, Dao 2023). Nothing here is T x T: one tile of P "
                   "and one of dS at a time (nn::flash_backward_tile, the exercise flash-backward-tile). The "
                   "result is lesson 8's gradients up to rounding, for B_r x B_c = {} x {} as shown and for "
                   "every tile shape of step [block-sizes], those that divide T = {} and those that do not, "
                   "with the causal flag and without (its columns count the tiles computed; step "
                   "[backward-causal] shows the skipped ones). d_v = {} and d_k = {}: a 1/sqrt(d_v) for "
                   "1/sqrt(d_k) would show when they differ.",
                   B_r, B_c, T, in.V.shape(1), in.Q.shape(1)));
    trace.tensor("dQ", "tile by tile, T x d_k", g.dQ, numbered("q_", 1, T));
    trace.tensor("dK", "tile by tile, T x d_k", g.dK, numbered("k_", 1, T));
    trace.tensor("dV", "tile by tile, T x d_v", g.dV, numbered("v_", 1, T));
    trace.tensor("by_tile_shape", "max err = largest |tiled - dense| over dQ, dK, dV", table, labels,
                 std::vector<std::string>{"tiles", "max err", "tiles causal", "max err causal"});
    trace.check("dQ, dK, dV tile by tile equal lesson 8's dense gradients", gradient_error(g, dense.grads),
                attention_tolerance);
    trace.check("so does every tile shape", worst, attention_tolerance);
    trace.check("and every tile shape under the causal flag", worst_causal, attention_tolerance);
}

// Step [backward-causal]: the causal flag skips the tiles above the diagonal in the backward pass too.
void record_backward_causal(Trace& trace, const Inputs& in, const Mat& dO, std::size_t B_r, std::size_t B_c) {
    const std::size_t T = in.Q.shape(0), all = blocks_of(T, B_r) * blocks_of(T, B_c);
    const nn::TiledAttentionGrads g = tiled_backward(in, dO, B_r, B_c, true);
    const Dense dense = dense_backward(in, dO, true);
    Mat last_value_gradient = nn::zeros(1, dO.shape(1));  // P_TT dO_T: only query T sees key T
    nn::add_scaled_to_row(last_value_gradient, 0, dense.forward.weights(T - 1, T - 1), nn::row_of(dO, T - 1));
    trace.step("backward-causal", "The causal flag in the backward pass",
               "tiles with first key > last query: skipped;  dV_T = P_TT dO_T,  dK_T = dS_TT q_T / sqrt(d_k)",
               fmt::format(
                   "The tiles that the forward skipped hold no weight, so they send no gradient back either: "
                   "P_ij = 0 there, and with it dV's, dS's and so dQ's and dK's share. The backward skips the "
                   "same {0} of {1} tiles and, in a tile across the diagonal, every pair j > i (no exponential "
                   "of a masked score, whose e^{{s - L}} would not be 0). So the last key is seen by the last "
                   "query alone, and its gradients come from that one pair: dV_T = P_TT dO_T. The dense "
                   "backward computes all T^2 entries of dP and dS and relies on P_ij = 0 to zero the masked "
                   "ones (lesson 8).",
                   g.tiles_skipped, all));
    trace.tensor("dQ", "causal, tile by tile", g.dQ, numbered("q_", 1, T));
    trace.tensor("dK", "causal, tile by tile", g.dK, numbered("k_", 1, T));
    trace.tensor("dV", "causal, tile by tile", g.dV, numbered("v_", 1, T));
    trace.tensor("tiles", "tiles of the backward pass", Vec{as_double(g.tiles), as_double(g.tiles_skipped)},
                 std::vector<std::string>{"computed", "skipped"});
    trace.check("dQ, dK, dV equal lesson 8's masked dense gradients", gradient_error(g, dense.grads),
                attention_tolerance);
    trace.check(fmt::format("every tile is computed or skipped: {} x {} = {}", blocks_of(T, B_r), blocks_of(T, B_c),
                            all),
                std::abs(as_double(g.tiles + g.tiles_skipped) - as_double(all)), 0.0);
    trace.check("the last value's gradient is P_TT dO_T",
                max_abs_difference(nn::row_of(g.dV, T - 1), nn::row_of(last_value_gradient, 0)), attention_tolerance);
}

// Step [backward-memory]: what each backward holds, run up to min(T_max, backward_run_cap) and computed beyond.
void record_backward_memory(Trace& trace, Rng& rng, std::size_t T_max, std::size_t d_k, std::size_t d_v,
                            std::size_t B_r, std::size_t B_c) {
    const std::size_t T_run = std::min(T_max, backward_run_cap);
    const Inputs all{rng.normal_mat(T_run, d_k), rng.normal_mat(T_run, d_k), rng.normal_mat(T_run, d_v)};
    const Mat dO = rng.normal_mat(T_run, d_v);
    Mat table = nn::zeros(std::size_t{15}, 3);
    std::vector<std::string> labels;
    double dense_error = 0.0, tiled_error = 0.0, gradients = 0.0;
    for (std::size_t k = 0, T = 64; k < table.shape(0); ++k, T *= 2) {
        const double tile = as_double(std::min(B_r, T) * std::min(B_c, T)), t = as_double(T);
        const double dense_formula = 8.0 * (4.0 * t * t + t * as_double(2 * d_k + 2 * d_v));
        const double tiled_formula = 8.0 * (t * as_double(2 * d_k + 2 * d_v + 2) + 2.0 * tile);
        double dense_bytes = dense_formula, tiled_bytes = tiled_formula;
        if (T <= T_run) {
            trace.progress(fmt::format("backward memory: T = {}", T));
            const Inputs in{nn::rows_of(all.Q, 0, T), nn::rows_of(all.K, 0, T), nn::rows_of(all.V, 0, T)};
            const Mat dO_T = nn::rows_of(dO, 0, T);
            const nn::TiledAttentionGrads g = tiled_backward(in, dO_T, B_r, B_c, false);
            const Dense d = dense_backward(in, dO_T, false);
            dense_bytes = as_double((d.forward.scores.size() + d.forward.weights.size() + d.forward.output.size() +
                                     d.grads.dP.size() + d.grads.dS.size() + d.grads.dQ.size() + d.grads.dK.size() +
                                     d.grads.dV.size()) *
                                    sizeof(double));
            tiled_bytes = g.working_bytes;
            gradients = std::max(gradients, gradient_error(g, d.grads));
            dense_error = std::max(dense_error, std::abs(dense_bytes - dense_formula));
            tiled_error = std::max(tiled_error, std::abs(tiled_bytes - tiled_formula));
        }
        table(k, 0) = dense_bytes / mebibyte;
        table(k, 1) = tiled_bytes / mebibyte;
        table(k, 2) = dense_bytes / tiled_bytes;
        labels.push_back(fmt::format(T <= T_run ? "T={}" : "T={} *", T));
    }
    trace.step("backward-memory", "The backward's memory: T^2 against T d",
               fmt::format("dense: 8 (4 T^2 + 2 T (d_k + d_v)) bytes;   tiled: 8 (2 T (d_k + d_v + 1) + 2 B_r B_c) "
                           "bytes   (d_k = {}, d_v = {}, B_r x B_c = {} x {})",
                           d_k, d_v, B_r, B_c),
               fmt::format(
                   "Training is where the memory goes: the forward's activations wait for the backward pass. "
                   "Lesson 8's backward keeps the forward's T x T scores S and weights P and makes dP and dS, "
                   "T x T each, besides the output and the three gradients. The tiled backward keeps of the "
                   "forward only O (T x d_v) and L (T), makes D (T) and the gradients dQ, dK (T x d_k each) "
                   "and dV (T x d_v), and holds one tile of P and one of dS at a time. Rows up to T = {} (T_max, at "
                   "most {}) ran both and counted what each holds; the rows marked * are the formulas. At a million "
                   "tokens the dense backward would hold 32 TiB; the tiled one, at d = 64, about 2 GiB. Its "
                   "price is time: every tile's scores and exponentials are computed a second time (the "
                   "forward's), which on a GPU is cheaper than reading P back from slow memory (Dao et al. "
                   "2022, section 3.1).",
                   T_run, backward_run_cap));
    trace.tensor("memory", "MiB held by each backward; * computed, not run", table, labels,
                 std::vector<std::string>{"dense MiB", "tiled MiB", "dense / tiled"}, View::plot);
    trace.check("where run, the dense backward holds 8 (4 T^2 + 2 T (d_k + d_v)) bytes", dense_error, 0.0);
    trace.check("where run, the tiled backward holds 8 (2 T (d_k + d_v + 1) + 2 B_r B_c) bytes", tiled_error, 0.0);
    trace.check(fmt::format("where run, the two give the same gradients (T = 64 .. {})", T_run), gradients,
                attention_tolerance);
}

void lesson_online_softmax(Trace& trace, const Config& config) {
    const std::size_t T = config.size(param::T), d_k = config.size(param::d_k), d_v = config.size(param::d_v);
    const std::size_t B_r = config.size(param::B_r), B_c = config.size(param::B_c);
    Rng rng(config.seed);
    // attn run --input may replace any of these with the user's own (same shapes)
    const Vec x = trace.input("x", vec_of(demo_row));
    Inputs in{rng.normal_mat(T, d_k), rng.normal_mat(T, d_k), rng.normal_mat(T, d_v)};
    in.Q = trace.input("Q", in.Q);
    in.K = trace.input("K", in.K);
    in.V = trace.input("V", in.V);

    record_two_pass(trace, x);
    record_online(trace, x);
    record_edges(trace);
    record_tiles(trace, in, B_r, B_c);
    record_block_sizes(trace, in, B_r, B_c);
    record_causal(trace, in, B_r, B_c);
    record_memory(trace, rng, config.size(param::T_max), d_k, d_v, B_r, B_c);
    // drawn after the memory step's inputs, so that the steps before keep their numbers
    const Mat dO = trace.input("dO", rng.normal_mat(T, d_v));
    record_backward_saved(trace, in, dO, B_r, B_c);
    record_backward_tiles(trace, in, dO, B_r, B_c);
    record_backward_causal(trace, in, dO, B_r, B_c);
    record_backward_memory(trace, rng, config.size(param::T_max), d_k, d_v, B_r, B_c);
}

}  // namespace
}  // namespace online_softmax

Lesson online_softmax_lesson() {
    using namespace online_softmax;
    return make_lesson(10, "online-softmax", "The online softmax and attention tile by tile",
                       "Milakov & Gimelshein 2018; Rabe & Staats 2021; Dao et al. 2022; Dao 2023",
                       {param::T, param::d_k, param::d_v, param::B_r, param::B_c, param::T_max}, limits, time_estimate,
                       lesson_online_softmax,
                       {"two-pass", "online", "edges", "tiles", "block-sizes", "causal", "memory", "backward-saved",
                        "backward-tiles", "backward-causal", "backward-memory"}, {{"T_max", 64}});
}

}  // namespace attn
