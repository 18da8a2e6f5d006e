// Lesson 4: self-attention, a sentence looking at itself. First Lin et al.'s (2017) structured
// sentence embedding over bidirectional GRU states and its penalty; then the scaled dot-product
// self-attention of Vaswani et al. (2017) in matrix form, its masks, and positions.
// n = tokens, d = embedding width (d_model), u = width of each encoder direction (states are 2u
// wide), d_a = width of Lin's tanh layer, r = attention hops, d_k = query, key and value width.
#include "registry.hpp"
#include "gru.hpp"
#include "support.hpp"

#include "core/portable_math.hpp"
#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/positional.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"
#include "nn/structured.hpp"

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

namespace attn {

namespace self_attention {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d{"d", 6, 2, 256, "width of the token embeddings (d_model); even, for the sinusoidal positions"};
const Param u{"u", 3, 1, 128, "width of each direction of Lin's bidirectional GRU (states are 2u wide)"};
const Param d_a{"d_a", 4, 1, 256, "width of the tanh layer of Lin's attention"};
const Param r{"r", 3, 1, 7, "attention hops of Lin's structured embedding; at most one per token (7)"};
const Param d_k{"d_k", 4, 1, 256, "width of the queries, keys and values"};
}  // namespace param

std::string limits(const Config& c) {
    if (auto why = even(c, param::d); !why.empty()) return why;
    const double widest = std::max({as_double(c.size(param::d)), 2.0 * as_double(c.size(param::u)),
                                    as_double(c.size(param::d_a)), as_double(c.size(param::d_k)),
                                    as_double(c.size(param::r))});
    return memory_limit(40.0 * widest * widest, "lesson 4");
}

// Seconds per widest^2 (widest of d, 2u, d_a, d_k and r): every parameter at its maximum (widest
// 256) took 0.21 s on this project's 2-core machine at a load of 6.1, 3.2e-6 s a unit; 1e-5 on the
// safe side, and half a second for the rest. No setting in range comes near the cap.
TimeEstimate time_estimate(const Config& c) {
    const double widest = std::max({as_double(c.size(param::d)), 2.0 * as_double(c.size(param::u)),
                                    as_double(c.size(param::d_a)), as_double(c.size(param::d_k)),
                                    as_double(c.size(param::r))});
    return {0.5 + 1e-5 * widest * widest, "lesson 4",
            fmt::format("widest^2 = {:.3g} of max(d, 2u, d_a, d_k)^2", widest * widest),
            {{&param::d, 2.0}, {&param::u, 2.0}, {&param::d_a, 2.0}, {&param::d_k, 2.0}}};
}


const std::vector<std::string> vocabulary = {"turn", "off", "the", "lights", "in", "kitchen", "<pad>"};
const std::vector<std::string> sentence = {"turn", "off", "the", "lights", "in", "the", "kitchen"};
const std::vector<std::size_t> sentence_ids = {0, 1, 2, 3, 4, 2, 5};
// The lesson-1 sentence, padded to the same length so that both fit in one batch.
const std::vector<std::string> padded_sentence = {"turn", "off", "the", "lights", "<pad>", "<pad>", "<pad>"};
const std::vector<std::size_t> padded_ids = {0, 1, 2, 3, 6, 6, 6};
constexpr std::size_t valid_length = 4;
// "in the kitchen turn off the lights": row t of the reordered sentence is word reordering[t].
const std::vector<std::size_t> reordering = {4, 5, 6, 0, 1, 2, 3};
constexpr std::size_t first_the = 2, second_the = 5;
// "Moved" and "differ" below mean by more than this; rounding alone stays below 1e-15. How far
// beyond it depends on the weights: at small widths (d = 2, d_k = 1) a row can move by less than
// 1e-3, so a larger bound would claim what the seed decides, not what attention does.
constexpr double visible_change = 1e-9;

std::vector<std::string> permuted(const std::vector<std::string>& words, const std::vector<std::size_t>& order) {
    std::vector<std::string> out;
    for (auto i : order) out.push_back(words[i]);
    return out;
}

// ---------------------------------------------------------------- the encoder

// A GRU drawn gate by gate, weights with variance 1/fan_in and biases N(0, 1/4), then shown (and
// replaceable by --input) stacked as in lesson 2: W_<which> = [W_z; W_r; W_h], likewise U and b.
nn::GruParams drawn_gru(Trace& trace, Rng& rng, const std::string& which, std::size_t d_in, std::size_t u) {
    const nn::GruParams p = draw_gru(rng, d_in, u, fan_in_init(GruInit::Order::by_gate, d_in, u, 0.5, 0.0));
    return unstacked(supplied(trace, gru_names(which, "x_t"), stacked(p)));
}

// ---------------------------------------------------------------- structured self-attention

// Each hop k run alone as the single-vector attention of eq. 5, with w_s2 = row k of W_s2.
Mat hops_one_at_a_time(const Mat& H, const Mat& W_s1, const Mat& W_s2) {
    Mat A = xt::empty<double>({W_s2.shape(0), H.shape(0)});
    for (std::size_t k = 0; k < W_s2.shape(0); ++k) {
        const Mat w_s2 = nn::rows_of(W_s2, k, k + 1);
        nn::set_row(A, k, nn::row_of(nn::structured_self_attention(H, W_s1, w_s2).weights, 0));
    }
    return A;
}

// sum_i sum_j (a_i . a_j - [i = j])^2, one entry of A A^T - I at a time.
double penalty_by_entries(const Mat& A) {
    double total = 0.0;
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = 0; j < A.shape(0); ++j) {
            double overlap = 0.0;
            for (std::size_t t = 0; t < A.shape(1); ++t) overlap += A(i, t) * A(j, t);
            const double entry = overlap - (i == j ? 1.0 : 0.0);
            total += entry * entry;
        }
    return total;
}

// r identical rows a: A A^T = |a|^2 everywhere, so P = r (|a|^2 - 1)^2 + r (r - 1) |a|^4.
double penalty_of_repeated_row(const Vec& a, std::size_t r) {
    const double sq = nn::dot(a, a), hops = as_double(r);
    return hops * (sq - 1.0) * (sq - 1.0) + hops * (hops - 1.0) * sq * sq;
}

Mat repeated_rows(const Vec& a, std::size_t r) {
    Mat A = xt::empty<double>({r, a.size()});
    for (std::size_t k = 0; k < r; ++k) nn::set_row(A, k, a);
    return A;
}

// The token each hop of the diverse example picks: spread from the first word to the last.
std::vector<std::size_t> spread_tokens(std::size_t r, std::size_t n) {
    std::vector<std::size_t> out;
    for (std::size_t k = 0; k < r; ++k) out.push_back(r == 1 ? 0 : k * (n - 1) / (r - 1));
    return out;
}

Mat one_hot_rows(const std::vector<std::size_t>& tokens, std::size_t n) {
    Mat A = nn::zeros(tokens.size(), n);
    for (std::size_t k = 0; k < tokens.size(); ++k) A(k, tokens[k]) = 1.0;
    return A;
}

std::string hop_targets(const std::vector<std::size_t>& tokens) {
    std::string out;
    for (std::size_t k = 0; k < tokens.size(); ++k) out += (k ? ", " : "") + sentence[tokens[k]];
    return out;
}

// ---------------------------------------------------------------- scaled dot-product attention

struct Projections {
    Mat W_Q, W_K, W_V;  // d x d_k each
};

struct QKV {
    Mat Q, K, V;  // n x d_k each
};

QKV project(const Projections& p, const Mat& X) {
    return {nn::matmul(X, p.W_Q, "X W_Q"), nn::matmul(X, p.W_K, "X W_K"), nn::matmul(X, p.W_V, "X W_V")};
}

nn::AttentionResult self_attend(const Projections& p, const Mat& X) {
    const QKV x = project(p, X);
    return nn::scaled_dot_product_attention(x.Q, x.K, x.V);
}

nn::AttentionResult self_attend(const Projections& p, const Mat& X, const Mat& mask) {
    const QKV x = project(p, X);
    return nn::scaled_dot_product_attention(x.Q, x.K, x.V, mask);
}

// o_i = sum_j softmax_j(q_i . k_j / sqrt(d_k)) v_j, one query at a time.
Mat attention_by_rows(const QKV& x) {
    const std::size_t n = x.Q.shape(0), d_k = x.Q.shape(1);
    Mat O = nn::zeros(n, x.V.shape(1));
    for (std::size_t i = 0; i < n; ++i) {
        Vec scores = nn::zeros(n);
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t c = 0; c < d_k; ++c) scores(j) += x.Q(i, c) * x.K(j, c) / std::sqrt(as_double(d_k));
        nn::set_row(O, i, weighted_sum(nn::softmax(scores), x.V));
    }
    return O;
}

// How far any coordinate of any output row lies outside the range of that coordinate over the rows of V.
double outside_value_range(const Mat& O, const Mat& V) {
    const Vec lowest = nn::column_minima(V), highest = nn::column_maxima(V);
    double worst = 0.0;
    for (std::size_t i = 0; i < O.shape(0); ++i)
        for (std::size_t c = 0; c < O.shape(1); ++c)
            worst = std::max({worst, lowest(c) - O(i, c), O(i, c) - highest(c)});
    return worst;
}

// softmax first, then the future weights set to 0: the mask applied too late.
Mat zeroed_after_softmax(const Mat& scores) {
    Mat A = nn::softmax_rows(scores);
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = i + 1; j < A.shape(1); ++j) A(i, j) = 0.0;
    return A;
}

Mat rows_divided_by_their_sums(const Mat& A) {
    const Vec sums = nn::row_sums(A);
    Mat out = A;
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = 0; j < A.shape(1); ++j) out(i, j) /= sums(i);
    return out;
}

// Entry i: sum_{j>i} A_ij, the weight row i of the full softmax gives to later tokens, which
// zeroing after the softmax throws away (0 for the last row, which has no later token).
Vec future_shares(const Mat& A) {
    Vec out = nn::zeros(A.shape(0));
    for (std::size_t i = 0; i < A.shape(0); ++i)
        for (std::size_t j = i + 1; j < A.shape(1); ++j) out(i) += A(i, j);
    return out;
}

// The rows that have later tokens (all but the last) whose sum is not below 1: the misses of the
// claim that zeroing after the softmax loses weight.
double rows_keeping_everything(const Vec& sums) {
    const auto misses = std::count_if(sums.begin(), sums.end() - 1, [](double s) { return s >= 1.0; });
    return as_double(static_cast<std::size_t>(misses));
}

// The row, among those with later tokens, that loses least: its index.
std::size_t least_lost_row(const Vec& lost) {
    return static_cast<std::size_t>(std::distance(lost.begin(), std::min_element(lost.begin(), lost.end() - 1)));
}

double nan_count(const Mat& M) {
    const auto count = std::count_if(M.begin(), M.end(), [](double x) { return std::isnan(x); });
    return as_double(static_cast<std::size_t>(count));
}

// Column 0: how far the causal outputs at positions <= t move when every token after t is
// replaced by the matching row of X_other; column 1: the same without a mask. One row per t.
Mat future_token_changes(const Projections& p, const Mat& X, const Mat& X_other) {
    const std::size_t n = X.shape(0);
    const Mat causal = nn::causal_mask(n);
    const Mat O_causal = self_attend(p, X, causal).output, O_open = self_attend(p, X).output;
    Mat changes = xt::empty<double>({n, std::size_t{2}});
    for (std::size_t t = 0; t < n; ++t) {
        Mat changed = X;
        nn::set_rows(changed, t + 1, nn::rows_of(X_other, t + 1, n));
        changes(t, 0) = max_abs_difference(nn::rows_of(self_attend(p, changed, causal).output, 0, t + 1),
                                           nn::rows_of(O_causal, 0, t + 1));
        changes(t, 1) = max_abs_difference(nn::rows_of(self_attend(p, changed).output, 0, t + 1),
                                           nn::rows_of(O_open, 0, t + 1));
    }
    return changes;
}

// ---------------------------------------------------------------- positions

// PE_p . PE_{p+k} = sum_i sin(w_i p) sin(w_i (p + k)) + cos(w_i p) cos(w_i (p + k))
//                 = sum_i cos(w_i k),  w_i = 1 / 10000^(2i/d): one value per offset k, whatever p.
Vec encoding_dot_by_offset(std::size_t n, std::size_t d) {
    Vec out = nn::zeros(n);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t i = 0; i < d / 2; ++i)
            out(k) += portable::cos(as_double(k) / portable::pow10000(as_double(2 * i) / as_double(d)));
    return out;
}

// Largest |G(p, p + k) - closed_form(k)| over every p and every k >= 0.
double offset_only_error(const Mat& G, const Vec& closed_form) {
    double worst = 0.0;
    for (std::size_t p = 0; p < G.shape(0); ++p)
        for (std::size_t q = p; q < G.shape(1); ++q) worst = std::max(worst, std::abs(G(p, q) - closed_form(q - p)));
    return worst;
}

// Row t: the largest change of output row t against the permuted unpermuted output, without
// positions (column 0) and with them (column 1).
Mat permutation_mismatch(const Mat& O_reordered, const Mat& O, const Mat& O_reordered_pos, const Mat& O_pos) {
    const Mat expected = nn::gather_rows(O, reordering), expected_pos = nn::gather_rows(O_pos, reordering);
    Mat out = xt::empty<double>({O.shape(0), std::size_t{2}});
    for (std::size_t t = 0; t < O.shape(0); ++t) {
        out(t, 0) = nn::max_abs_of(Vec(nn::row_of(O_reordered, t) - nn::row_of(expected, t)));
        out(t, 1) = nn::max_abs_of(Vec(nn::row_of(O_reordered_pos, t) - nn::row_of(expected_pos, t)));
    }
    return out;
}

double row_difference(const Mat& M, std::size_t a, std::size_t b) {
    return max_abs_difference(nn::row_of(M, a), nn::row_of(M, b));
}

// Step [encoder]: H = (h_1, ..., h_n) from lesson 2's bidirectional GRU.
Mat record_encoder(Trace& trace, const nn::GruParams& forward, const nn::GruParams& backward, const Mat& X) {
    const auto rows_n = prefixed("", sentence);  // "1 turn", "2 off", ...: keeps the two "the" apart
    const nn::BiGruRun encoder = nn::bigru_forward(forward, backward, X);
    const Mat& H = encoder.annotations;
    trace.step("encoder", "States that know their neighbours", "H = (h_1, ..., h_n),  h_t = [h→_t; h←_t]: n x 2u",
               "Lin et al. (2017) read the sentence with a bidirectional LSTM; we reuse lesson 2's bidirectional "
               "GRU, which plays the same part. Each row h_t joins a forward state, which has read the words up "
               "to t, and a backward state, which has read them from the end back to t. The two \"the\" rows of "
               "H now differ: each carries its own surroundings.");
    record(trace, gru_names("fwd", "x_t"), stacked(forward));
    record(trace, gru_names("bwd", "x_t"), stacked(backward));
    trace.tensor("H", "h_t = [h→_t; h←_t], n x 2u", H, rows_n);
    return H;
}

// Step [one-hop]: Lin et al.'s single attention vector a over the encoder states H; returns a.
Vec record_one_hop(Trace& trace, const Mat& H, const Mat& W_s1, const Vec& w_s2) {
    const std::size_t d_a = W_s1.shape(0);
    const auto rows_n = prefixed("", sentence);
    const nn::StructuredAttention one = nn::structured_self_attention(H, W_s1, as_row(w_s2));
    const Vec a = nn::row_of(one.weights, 0), m = nn::row_of(one.embedding, 0);
    trace.step("one-hop", "One attention vector over the sentence",
               "a = softmax(w_s2 tanh(W_s1 H^T)),  m = a H",
               "There is no decoder state to compare with, so the question is a learned vector, w_s2 (Lin et "
               "al. 2017, eq. 5). First a tanh layer of width d_a (350 in the paper) turns each state into a "
               "column of features: (d_a x 2u)(2u x n) gives d_a x n. Then w_s2 scores every column, "
               "(1 x d_a)(d_a x n) = 1 x n, and the softmax over the n tokens gives the weights a. The "
               "sentence embedding m = a H, (1 x n)(n x 2u) = 1 x 2u, has the same size however long the "
               "sentence is.");
    trace.parameter("W_s1", "first layer, d_a x 2u", W_s1);
    trace.parameter("w_s2", "the question, 1 x d_a", w_s2);
    trace.tensor("F", "tanh(W_s1 H^T): (d_a x 2u)(2u x n) = d_a x n", one.hidden, numbered("f", 1, d_a), sentence);
    trace.tensor("e", "w_s2 tanh(W_s1 H^T): (1 x d_a)(d_a x n) = 1 x n", nn::row_of(one.scores, 0), rows_n);
    trace.tensor("a", "softmax over the n tokens, 1 x n", a, rows_n, {}, View::bars);
    trace.tensor("m", "m = a H: (1 x n)(n x 2u) = 1 x 2u", m);
    trace.check("a sums to 1", std::abs(nn::sum_of(a) - 1.0), 1e-12);
    trace.check("m = a H equals the sum over tokens sum_t a_t h_t", max_abs_difference(m, weighted_sum(a, H)), 1e-12);
    return a;
}

// Step [hops]: r questions at once, the matrix embedding; returns the weights A.
Mat record_hops(Trace& trace, const Mat& H, const Mat& W_s1, const Mat& W_s2) {
    const std::size_t r = W_s2.shape(0);
    const nn::StructuredAttention hops = nn::structured_self_attention(H, W_s1, W_s2);
    const Mat A = hops.weights;
    trace.step("hops", "r hops: a matrix embedding",
               "A = softmax(W_s2 tanh(W_s1 H^T)),  M = A H",
               "A single vector tends to settle on one part of the sentence, a word or a phrase, while a "
               "sentence has several worth keeping. Lin et al. (2017, eqs. 6-7) ask r questions at once: the "
               "rows of W_s2 (r x d_a). The tanh layer is shared, so (r x d_a)(d_a x n) = r x n scores, a "
               "softmax along each row, and A holds r distributions over the tokens. M = A H, (r x n)(n x 2u) "
               "= r x 2u, stacks r sentence vectors; a classifier reads all of them. The check shows that the "
               "matrix form is nothing more than r single hops side by side.");
    trace.parameter("W_s2", "r questions, r x d_a", W_s2, numbered("hop ", 1, r));
    trace.tensor("A", "softmax(W_s2 tanh(W_s1 H^T)): (r x d_a)(d_a x n) = r x n", A, numbered("hop ", 1, r), sentence,
                 View::heatmap).axes("hop", "word");
    trace.tensor("M", "M = A H: (r x n)(n x 2u) = r x 2u", hops.embedding, numbered("hop ", 1, r));
    trace.check("every row of A sums to 1", row_sum_error(A), 1e-12);
    trace.check("row k of A equals eq. 5 run alone with w_s2 = row k of W_s2",
                max_abs_difference(A, hops_one_at_a_time(H, W_s1, W_s2)), 1e-12);
    return A;
}

// Step [penalty]: ||A A^T - I||_F^2 for our A, for r copies of the single hop a, and for one-hot hops.
void record_penalty(Trace& trace, const Mat& A, const Vec& a) {
    const std::size_t r = A.shape(0), n = A.shape(1);
    const std::vector<std::size_t> picked = spread_tokens(r, n);
    const Mat A_same = repeated_rows(a, r), A_apart = one_hot_rows(picked, n);
    const Vec penalties = {nn::redundancy_penalty(A), nn::redundancy_penalty(A_same), nn::redundancy_penalty(A_apart)};
    trace.step("penalty", "The penalty: hops should not repeat each other", "P = ||A A^T - I||_F^2",
               "Nothing forces r hops to ask different questions; they can all land on the same word. Lin et "
               "al. (2017, section 2.2) add P, times a small coefficient, to the training loss. Entry (i, j) of "
               "A A^T is a_i . a_j. Off the diagonal that is the overlap of two hops, which P drives to 0. On "
               "the diagonal it is |a_i|^2, which for a distribution is at most 1, and exactly 1 only when "
               "all weight sits on one token: subtracting I pushes each hop to focus. Only the diagonal loses "
               "the 1; subtracting 1 from every entry would punish something else. Lin et al. (2017, "
               "arXiv:1703.03130, section 2.2) prefer P to a "
               "KL divergence between hops, which they found unstable in training and which does not ask a "
               "hop to focus. P for three matrices: our A; r copies of the single vector a, as redundant as "
               "it gets; one-hot hops on " +
                   hop_targets(picked) +
                   ", as diverse as it gets. Our untrained A scores almost as badly as the copies: its hops "
                   "are spread out and overlap.");
    trace.tensor("AAt", "A A^T, r x r: overlaps off the diagonal, |a_i|^2 on it", nn::matmul(A, nn::transposed(A), "A A^T"),
                 numbered("hop ", 1, r), numbered("hop ", 1, r));
    trace.tensor("A_same", "every row is a", A_same, numbered("hop ", 1, r), sentence);
    trace.tensor("A_apart", "one-hot rows on different tokens", A_apart, numbered("hop ", 1, r), sentence);
    trace.tensor("P", "||A A^T - I||_F^2 for each", penalties, std::vector<std::string>{"A", "A_same", "A_apart"});
    trace.check("P by A A^T equals the entry sum, sum_ij (a_i . a_j - [i = j])^2",
                max_abs_difference(penalties, Vec{penalty_by_entries(A), penalty_by_entries(A_same),
                                                  penalty_by_entries(A_apart)}),
                1e-12);
    trace.check("P(A_same) = r (|a|^2 - 1)^2 + r (r - 1) |a|^4", std::abs(penalties(1) - penalty_of_repeated_row(a, r)),
                1e-12);
    trace.check("P(A_apart) = 0: one-hot rows on distinct tokens make A A^T = I exactly", penalties(2), 0.0);
}

struct SelfAttention {
    QKV x;
    nn::AttentionResult result;
};

// Steps [qkv] and [attention]: Q, K and V from X, and O = softmax(Q K^T / sqrt(d_k)) V.
SelfAttention record_self_attention(Trace& trace, const Projections& proj, const Mat& X) {
    const auto rows_n = prefixed("", sentence);
    const QKV x = project(proj, X);
    trace.step("qkv", "Queries, keys and values from one sentence", "Q = X W_Q,  K = X W_K,  V = X W_V",
               "Vaswani et al. (2017, section 3.2) drop the recurrent encoder and the learned question: every "
               "token asks its own. Three weight matrices give each token three roles: a query (what it looks "
               "for), a key (what it offers to be found by) and a value (what it hands over when found). Each "
               "projection is (n x d)(d x d_k) = n x d_k. Since rows 3 and 6 of X are equal, so are rows 3 "
               "and 6 of Q, K and V.");
    trace.parameter("W_Q", "d x d_k", proj.W_Q);
    trace.parameter("W_K", "d x d_k", proj.W_K);
    trace.parameter("W_V", "d x d_k (here d_v = d_k)", proj.W_V);
    trace.tensor("Q", "Q = X W_Q: (n x d)(d x d_k) = n x d_k", x.Q, rows_n);
    trace.tensor("K", "K = X W_K: (n x d)(d x d_k) = n x d_k", x.K, rows_n);
    trace.tensor("V", "V = X W_V: (n x d)(d x d_k) = n x d_k", x.V, rows_n);

    const nn::AttentionResult att = nn::scaled_dot_product_attention(x.Q, x.K, x.V);
    trace.step("attention", "Scaled dot-product self-attention", "O = softmax(Q K^T / sqrt(d_k)) V",
               "All n x n scores come from one product, (n x d_k)(d_k x n); lesson 3 showed why they are "
               "divided by sqrt(d_k). Row i of A is token i's softmax over all n tokens, itself included, and "
               "row i of O = A V, (n x n)(n x d_k) = n x d_k, mixes the value rows with those weights (Vaswani "
               "et al. 2017, eq. 1). Weights that are non-negative and sum to 1 make each o_i a convex "
               "combination of the v_j: it lies inside their convex hull, so in particular every coordinate "
               "stays within that coordinate's range over V. No step waits for another, unlike the GRU.");
    trace.tensor("S", "S = Q K^T / sqrt(d_k): (n x d_k)(d_k x n) = n x n", att.scores, rows_n, sentence);
    trace.tensor("A_self", "A = softmax of each row of S", att.weights, rows_n, sentence, View::heatmap).axes("query word", "key word");
    trace.tensor("O", "O = A V: (n x n)(n x d_k) = n x d_k", att.output, rows_n);
    trace.check("no weight is negative", negativity(att.weights), 0.0);
    trace.check("every row of A sums to 1", row_sum_error(att.weights), 1e-12);
    trace.check("the loop o_i = sum_j softmax_j(q_i . k_j / sqrt(d_k)) v_j equals O",
                max_abs_difference(attention_by_rows(x), att.output), 1e-12);
    trace.check("every o_i lies within the range of the v_j, coordinate by coordinate",
                outside_value_range(att.output, x.V), 1e-12);
    return {x, att};
}

// Step [causal]: the causal mask on the scores; returns the masked attention.
nn::AttentionResult record_causal(Trace& trace, const QKV& x) {
    const std::size_t n = x.Q.shape(0);
    const auto rows_n = prefixed("", sentence);
    const Mat causal = nn::causal_mask(n);
    const nn::AttentionResult masked = nn::scaled_dot_product_attention(x.Q, x.K, x.V, causal);
    trace.step("causal", "The causal mask: no looking ahead",
               "A = softmax(Q K^T / sqrt(d_k) + M),  M_ij = -inf for j > i",
               "A model that writes a sentence word by word must not see the words it has not written yet. The "
               "mask adds -inf to the score of every later token before the softmax (Vaswani et al. 2017, "
               "section 3.2.3): exp(-inf) = 0, so those weights are exactly 0, and the softmax spreads the "
               "whole weight over the tokens that remain. The first token sees only itself, so its output is "
               "its own value. All n rows are still computed at once, which is why training a Transformer "
               "decoder is parallel. The mask also tells the two \"the\" apart: the first sees three words, "
               "the second six, so their outputs differ.");
    trace.tensor("M_causal", "0 on and below the diagonal, -inf above", causal, rows_n, sentence);
    trace.tensor("S_causal", "S + M", masked.scores, rows_n, sentence);
    trace.tensor("A_causal", "softmax of each row of S + M", masked.weights, rows_n, sentence, View::heatmap).axes("query word", "key word");
    trace.tensor("O_causal", "A_causal V", masked.output, rows_n);
    trace.check("every weight above the diagonal is exactly 0", largest_above_diagonal(masked.weights), 0.0);
    trace.check("every row of A_causal sums to 1", row_sum_error(masked.weights), 1e-12);
    trace.check("the first output is the first value: o_1 = v_1",
                max_abs_difference(nn::row_of(masked.output, 0), nn::row_of(x.V, 0)), 1e-12);
    return masked;
}

// Step [wrong-way]: the mask applied after the softmax instead, against the causal weights.
void record_wrong_way(Trace& trace, const nn::AttentionResult& att, const nn::AttentionResult& masked) {
    const auto rows_n = prefixed("", sentence);
    const Mat A_zeroed = zeroed_after_softmax(att.scores);
    const Vec zeroed_sums = nn::row_sums(A_zeroed);
    const Vec lost = future_shares(att.weights);
    const std::size_t least = least_lost_row(lost), n = lost.size();
    trace.step("wrong-way", "The wrong way: zeroing after the softmax",
               "A_zeroed = softmax(S) with A_ij := 0 for j > i,  1 - sum_j A_zeroed_ij = sum_{j>i} A_ij",
               fmt::format(
                   "Some notes mask by setting the future weights to 0 after the softmax. The weights then no "
                   "longer sum to 1: each row keeps only the share it gave to the past, and the output shrinks "
                   "towards 0 by the share it lost, the weight the full softmax gave to later tokens (lost). The "
                   "first token keeps nothing but its weight on itself; the last has no later token and loses "
                   "nothing. How much the other rows lose depends on the scores, not on the mask: exp is never 0, "
                   "so every row but the last loses something, but a row that gives almost all of its weight to "
                   "earlier tokens loses little, and nothing bounds that from below. Here row {} ({}) loses least, "
                   "{:.3g} of its weight. The mask belongs in the scores, before the softmax. Dividing each zeroed "
                   "row by its sum repairs it and gives A_causal exactly, since the softmax of the visible scores "
                   "is their exponentials over their own total.",
                   least + 1, sentence[least], lost(least)));
    trace.tensor("A_zeroed", "the wrong way", A_zeroed, rows_n, sentence);
    trace.tensor("row_sums", "sum_j of each row of A_zeroed", zeroed_sums, rows_n, {}, View::bars);
    trace.tensor("lost", "sum_{j>i} A_ij: the weight row i gave to later tokens", lost, rows_n);
    trace.check("each row of A_zeroed falls short of 1 by the weight it gave to later tokens",
                max_abs_difference(zeroed_sums + lost, nn::ones(n)), 1e-12);
    trace.check("the wrong way: rows 1..n-1 sum to less than 1 (rows that do not, counted)",
                rows_keeping_everything(zeroed_sums), 0.0);
    trace.check("each zeroed row divided by its sum gives A_causal",
                max_abs_difference(rows_divided_by_their_sums(A_zeroed), masked.weights), 1e-12);
}

// Step [padding]: a shorter sentence padded to n, and the padding mask that keeps it apart.
void record_padding(Trace& trace, const Projections& proj, const Mat& E, std::size_t n) {
    const Mat X_pad = nn::gather_rows(E, padded_ids);
    const Mat pad_mask = nn::padding_mask(n, n, valid_length, valid_length);
    const nn::AttentionResult padded = self_attend(proj, X_pad, pad_mask);
    const nn::AttentionResult alone = self_attend(proj, nn::rows_of(X_pad, 0, valid_length));
    const auto rows_pad = prefixed("", padded_sentence);
    trace.step("padding", "Padding: a shorter sentence in the batch",
               "M_ij = -inf when j >= L or i >= L,  L = 4 real tokens",
               "Sentences are batched as one tensor, so lesson 1's \"turn off the lights\" is padded to 7 "
               "tokens with <pad>. Its valid length L = 4 gives the mask: no query may look at a <pad> key. "
               "What should a <pad> query get? Masking only the keys would hand it an ordinary-looking average "
               "of the real words that means nothing, and every later step would have to remember to ignore "
               "it. Here the mask blanks its whole row instead. Such a row has no score left at all, and a "
               "plain softmax would give 0/0 = NaN there; nn::softmax defines the weights of a fully masked row "
               "as all zeros, so the <pad> outputs are exactly 0 and no NaN can leak further. The real tokens "
               "get exactly what they would get alone. A decoder adds this mask to the causal one: both hold "
               "only 0 and -inf, so their sum masks what either masks.");
    trace.tensor("X_pad", "x_t = E[w_t], padded to n", X_pad, rows_pad);
    trace.tensor("M_pad", "-inf where the query or the key is <pad>", pad_mask, rows_pad, padded_sentence);
    trace.tensor("A_pad", "softmax of each row of S + M_pad", padded.weights, rows_pad, padded_sentence, View::heatmap).axes("query word", "key word");
    trace.tensor("O_pad", "A_pad V", padded.output, rows_pad);
    trace.check("no NaN in A_pad or O_pad (count shown)", nan_count(padded.weights) + nan_count(padded.output), 0.0);
    trace.check("the <pad> rows of A_pad and O_pad are exactly 0",
                std::max(nn::max_abs_of(nn::rows_of(padded.weights, valid_length, n)),
                         nn::max_abs_of(nn::rows_of(padded.output, valid_length, n))),
                0.0);
    trace.check("the real rows of A_pad sum to 1", row_sum_error(nn::rows_of(padded.weights, 0, valid_length)), 1e-12);
    trace.check("the real rows of O_pad equal attention over the 4 real tokens alone",
                max_abs_difference(nn::rows_of(padded.output, 0, valid_length), alone.output), 1e-12);
}

// Step [future]: replacing later tokens moves no earlier output under the causal mask.
void record_future(Trace& trace, const Projections& proj, const Mat& X, const Mat& X_other) {
    const std::size_t n = X.shape(0);
    const Mat changes = future_token_changes(proj, X, X_other);
    const Vec open_changes = nn::column_of(nn::rows_of(changes, 0, n - 1), 1);
    trace.step("future", "The future cannot reach the past",
               "O_causal(X')_s = O_causal(X)_s  for s <= t,  X' = X changed after t",
               "For every t from 1 to n, the tokens after position t are replaced by other vectors (X_other), "
               "and the outputs at positions 1..t are compared. With the causal mask they do not move at all, "
               "for every t: a decoder trained this way can be run one word at a time later, and position t "
               "will never notice that the future it was trained beside is missing. Without the mask every "
               "position reads the future, so every earlier output moves (at t = n there is nothing after, so "
               "nothing moves).");
    trace.tensor("X_other", "replacement tokens, n x d", X_other, numbered("x'", 1, n));
    trace.tensor("change", "max |O(X') - O(X)| over positions 1..t", changes, numbered("t=", 1, n),
                 std::vector<std::string>{"causal", "no mask"});
    trace.check("causal: for every t the outputs at positions <= t are unchanged",
                nn::max_of(nn::column_of(changes, 0)), 1e-12);
    trace.check("no mask: each t < n moves an earlier output by > 1e-9, far beyond rounding (misses counted)",
                count_at_most(open_changes, visible_change), 0.0);
}

// The largest |PE_(p+k) - R_k PE_p| over the rows p, p + k of PE.
double rotation_error(const Mat& PE) {
    const std::size_t n = PE.shape(0), d = PE.shape(1);
    double worst = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const Mat R = nn::offset_rotation(d, k);
        for (std::size_t p = 0; p + k < n; ++p) {
            const Vec turned = nn::matvec(R, nn::row_of(PE, p), "R_k PE_p");
            worst = std::max(worst, max_abs_difference(turned, nn::row_of(PE, p + k)));
        }
    }
    return worst;
}

// [0, 1, 0, 1, ...], d entries: i mod 2.
Vec zeros_and_ones(std::size_t d) {
    Vec out = xt::empty<double>({d});
    for (std::size_t i = 0; i < d; ++i) out(i) = as_double(i % 2);
    return out;
}

// Step [positions]: the sinusoidal encoding, its rotation by an offset and its dot products.
Mat record_positions(Trace& trace, std::size_t n, std::size_t d) {
    const Mat PE = nn::sinusoidal_encoding(n, d);
    const Mat G = nn::matmul(PE, nn::transposed(PE), "PE PE^T");
    const Vec by_offset = encoding_dot_by_offset(n, d);
    trace.step("positions", "Sinusoidal positions",
               "PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(the same angle)",
               "Without a mask, attention never looks at the order of the rows (the last step shows it). "
               "Vaswani et al. (2017, section 3.5) add to each token a vector that depends only on its position, "
               "counted from 0. Columns 2i and 2i+1 are the sine and cosine of one angle that grows with pos, "
               "fast for i = 0 and ever slower for larger i, like the hands of a clock. The dot product of two "
               "positions is then sum_i cos(w_i (q - p)) with w_i = 1 / 10000^(2i/d): it depends on the "
               "offset k = q - p only, so G = PE PE^T is constant along each diagonal. Behind this: moving k "
               "positions turns every pair by the same angle k w_i, whatever pos, a fixed linear map (Vaswani "
               "et al. chose the encoding for that). Positions are not orthogonal, as is sometimes claimed: "
               "neighbours have similar encodings and the dot product falls with distance, until the fastest "
               "clock comes round (its period is 2 pi, about 6 positions). This width has d/2 = " +
                   std::to_string(d / 2) +
                   " clocks; the more there are (d = 512 has 256), the longer the slow ones keep distant positions "
                   "apart. The rotation is checked below for every pair of positions: PE_(p+k) = R_k PE_p. The "
                   "encoding over 64 positions shows the clocks: the first columns flip every few rows, the last "
                   "barely move. Sines and cosines exist for any position, so a sentence longer than any seen in "
                   "training still gets encodings that keep this structure; learned position vectors (one per "
                   "position, trained) have nothing for positions beyond the training length, which is why "
                   "Vaswani et al. chose the sinusoids, having found the two nearly identical (their table 3, row E).");
    trace.tensor("PE", "sinusoidal encoding, n x d", PE, numbered("pos ", 0, n), {}, View::heatmap).axes("position", "feature");
    trace.tensor("PE_64", "the same encoding over 64 positions", nn::sinusoidal_encoding(64, d), numbered("pos ", 0, 64),
                 {}, View::heatmap).axes("position", "feature");
    trace.check("PE_(p+k) = R_k PE_p for every p, k with p + k < n: one rotation per offset, whatever p",
                rotation_error(PE), 1e-12);
    trace.tensor("G", "G_pq = PE_p . PE_q, constant along each diagonal", G, numbered("p=", 0, n), numbered("q=", 0, n));
    trace.tensor("g", "g_k = sum_i cos(k / 10000^(2i/d))", by_offset, numbered("k=", 0, n));
    trace.check("PE_p . PE_(p+k) = g_k for every p and k: the offset alone decides",
                offset_only_error(G, by_offset), 1e-12);
    trace.check("PE(0, .) = [0, 1, 0, 1, ...]",
                max_abs_difference(nn::row_of(PE, 0), zeros_and_ones(d)),
                0.0);
    return PE;
}

// Step [order]: reordering the words moves the outputs along, until positions are added.
void record_order(Trace& trace, const Projections& proj, const Mat& X, const Mat& PE, const nn::AttentionResult& att) {
    const auto rows_n = prefixed("", sentence);
    const Mat X_reordered = nn::gather_rows(X, reordering);
    const Mat O = att.output, O_reordered = self_attend(proj, X_reordered).output;
    const Mat O_pos = self_attend(proj, X + PE).output, O_reordered_pos = self_attend(proj, X_reordered + PE).output;
    const Mat mismatch = permutation_mismatch(O_reordered, O, O_reordered_pos, O_pos);
    const Vec positional_mismatch = nn::column_of(mismatch, 1);
    trace.step("order", "Without positions, word order is invisible",
               "O(P X) = P O(X),  but  O(P X + PE) != P O(X + PE)",
               "Reorder the sentence as \"in the kitchen turn off the lights\": a permutation matrix P moves the "
               "rows of X. Without positions, the outputs just move along: each token's output depends on which "
               "tokens are present, never on where, so self-attention is permutation-equivariant. That is also "
               "why the two \"the\" get the same output. Adding PE after reordering, the words land on new "
               "positions and every output changes beyond the reordering; the two \"the\" now differ too. By how much "
               "depends on the weights: at small widths (d = 2, d_k = 1) a row can move by less than 1e-3, so the "
               "checks ask only for a change far beyond rounding. (Had "
               "the positions moved with the words, P (X + PE), the outputs would again just be permuted: what "
               "breaks the symmetry is exactly that a position stays put while the words move.) PE is added to "
               "X before the projections, so the query of token t carries p(t) and the key of token i carries "
               "p(i); a formula that puts p(i) into the query of t, as one of the source texts does, has "
               "swapped them.");
    trace.tensor("mismatch", "row t: max |O(P X) - P O(X)|, then with X + PE", mismatch,
                 prefixed("", permuted(sentence, reordering)), std::vector<std::string>{"no PE", "with PE"});
    trace.tensor("O_pos", "O(X + PE)", O_pos, rows_n);
    trace.check("without positions: O(P X) = P O(X)", nn::max_of(nn::column_of(mismatch, 0)), 1e-12);
    trace.check("without positions: the two \"the\" rows of O are equal", row_difference(O, first_the, second_the),
                1e-12);
    trace.check("with positions: every row of the mismatch exceeds 1e-9, far beyond rounding (misses counted)",
                count_at_most(positional_mismatch, visible_change), 0.0);
    trace.check("with positions: the two \"the\" rows of O(X + PE) differ by > 1e-9, far beyond rounding",
                count_at_most(Vec{row_difference(O_pos, first_the, second_the)}, visible_change), 0.0);
}

void lesson_self_attention(Trace& trace, const Config& config) {
    const std::size_t d = config.size(param::d), u = config.size(param::u), d_a = config.size(param::d_a), r = config.size(param::r),
                      d_k = config.size(param::d_k), n = sentence.size();
    Rng rng(config.seed);
    // attn run --input may replace any of these with the user's own (same shapes)
    const Mat E = trace.input("E", rng.normal_mat(vocabulary.size(), d));
    const nn::GruParams forward = drawn_gru(trace, rng, "fwd", d, u);
    const nn::GruParams backward = drawn_gru(trace, rng, "bwd", d, u);
    const Mat W_s1 = trace.input("W_s1", rng.normal_mat(d_a, 2 * u, 1.0 / std::sqrt(as_double(2 * u))));
    // Lin's second layer is drawn large so that untrained hops already prefer some tokens; with
    // variance 1/d_a every weight vector would be close to uniform.
    const Vec w_s2 = trace.input("w_s2", rng.normal_vec(d_a, 2.0));
    const Mat W_s2 = trace.input("W_s2", rng.normal_mat(r, d_a, 2.0));
    const double projection_scale = 1.0 / std::sqrt(as_double(d));
    Projections proj{rng.normal_mat(d, d_k, projection_scale), rng.normal_mat(d, d_k, projection_scale),
                     rng.normal_mat(d, d_k, projection_scale)};
    proj.W_Q = trace.input("W_Q", proj.W_Q);
    proj.W_K = trace.input("W_K", proj.W_K);
    proj.W_V = trace.input("W_V", proj.W_V);
    const Mat X_other = trace.input("X_other", rng.normal_mat(n, d));

    const Mat X = nn::gather_rows(E, sentence_ids);
    trace.step("sentence", "A sentence as a matrix", "S = (w_1, ..., w_n),  one row per token: n x d",
               "From here on there is no second sentence and no decoder: the sentence \"turn off the lights in "
               "the kitchen\" attends to itself. Each word is looked up in an embedding table drawn from the "
               "seed (untrained, so only the shapes of the computation are meaningful). Lin et al. (2017, "
               "section 2.1) call the n x d result S; we call it X, as the Transformer part will. \"the\" occurs "
               "twice, so rows 3 and 6 of X are the same vector: keep an eye on them.");
    trace.tensor("E", "embedding table, one row per word, V x d", E, vocabulary);
    trace.tensor("X", "x_t = E[w_t], n x d", X, prefixed("", sentence));

    const Mat H = record_encoder(trace, forward, backward, X);
    const Vec a = record_one_hop(trace, H, W_s1, w_s2);
    record_penalty(trace, record_hops(trace, H, W_s1, W_s2), a);
    const SelfAttention self = record_self_attention(trace, proj, X);
    const nn::AttentionResult masked = record_causal(trace, self.x);
    record_wrong_way(trace, self.result, masked);
    record_padding(trace, proj, E, X.shape(0));
    record_future(trace, proj, X, X_other);
    const Mat PE = record_positions(trace, X.shape(0), X.shape(1));
    record_order(trace, proj, X, PE, self.result);
}

}  // namespace
}  // namespace self_attention

Lesson self_attention_lesson() {
    using namespace self_attention;
    return make_lesson(4, "self-attention", "Self-attention: Q, K, V, masks and positions",
                       "Lin et al. 2017; Vaswani et al. 2017", {param::d, param::u, param::d_a, param::r, param::d_k},
                       limits, time_estimate, lesson_self_attention,
                       {"sentence", "encoder", "one-hop", "hops", "penalty", "qkv", "attention", "causal",
                        "wrong-way", "padding", "future", "positions", "order"});
}

}  // namespace attn
