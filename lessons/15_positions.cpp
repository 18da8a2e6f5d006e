// Lesson 15: positions in the scores. Rotary position embeddings (RoPE, Su et al. 2021) grown from
// lesson 4's rotation of the sinusoidal code, their two layouts, RoPE in lesson 13's key-value cache,
// and ALiBi's linear biases (Press et al. 2022).
// T = positions, d = width of the token vectors, d_k = query and key width (even), d_v = value
// width, h = ALiBi's heads.
#include "real_translation.hpp"
#include "registry.hpp"
#include "support.hpp"
#include "transformer_race.hpp"
#include "translation.hpp"

#include "core/portable_math.hpp"
#include "core/rng.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/kv_cache.hpp"
#include "nn/linalg.hpp"
#include "nn/position_schemes.hpp"
#include "nn/positional.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/rotary.hpp"
#include "nn/self_attention.hpp"
#include "nn/softmax.hpp"
#include "text/sentencepiece.hpp"

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attn {

namespace positions {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param T{"T", 8, 3, 64, "positions: of the offset grid, the layouts' sentence and the cached decoding"};
const Param d{"d", 8, 1, 64, "width of the token vectors that the projections read"};
const Param d_k{"d_k", 6, 4, 64, "width of queries and keys; even (RoPE turns pairs), at least 4 (two layouts differ)"};
const Param d_v{"d_v", 4, 1, 64, "width of the values (d_v != d_k by default, so no product can mix them up)"};
const Param heads{"heads", 6, 1, 64, "ALiBi's heads; 6 is not a power of two, so the slopes take the paper's rule"};
// lesson 12's, passed on: the race on length trains lesson 12's Transformer as drawn there, on its batches in
// its order, for 6 epochs rather than lesson 12's 8 (five trainings of 8 took 25 of the 30 s a lesson may
// take, and the race on real verses needs some of them)
const Param epochs{"epochs", 6, 1, 60, "the race on length (lesson 12's training): passes over the training set"};
const Param sentences{"sentences", 800, 50, 20000, "the race on length: lesson 12's training pairs"};
const Param test{"test", 200, 20, 2000, "the race on length: lesson 12's held-out test pairs"};
// lesson 14's, passed on: its training verses (of at most verse_words words) for the race on real verses
const Param verses{"verses", 128, 16, 30000,
                   "the race on real verses: lesson 14's training verse pairs, of at most 15 words (2000 learn more, "
                   "in about 40 s)"};
}  // namespace param

std::string limits(const Config& c) {
    const long long d_k = c.get(param::d_k.key);
    if (d_k % 2 != 0)
        return fmt::format("d_k={} is odd: RoPE turns a query or key in pairs of coordinates (Su et al. 2021), so "
                           "d_k must be even; {} or {} would do",
                           d_k, d_k - 1, d_k + 1);
    const double T = as_double(c.size(param::T)), widest = std::max(as_double(c.size(param::d)), as_double(c.size(param::d_k)));
    return memory_limit(T * T * widest * 8.0, "lesson 15");
}

// Seconds per T^3 max(d, d_k) (the uncached decoding redoes every prefix): every parameter at its maximum
// (1.7e7 units) took 0.08 s on this project's 2-core machine at a load of 3, 5e-9 s a unit; 1e-7 on the
// safe side, and half a second for the rest. The race on length trains lesson 12's Transformer five times
// and decodes the test set and the long set with each: 24.9 s of user time at 8 epochs (load 2.7), 2.9 s
// an epoch, where lesson 12's own estimate (its three models, two retrainings and the long set) is 23 s;
// 1.2 of that estimate on the safe side, growing as it does with epochs, sentences and test. The race on
// real verses reads both modules and trains a tokenizer (about 2.8 s with 16 verses) and five
// Transformers for 3 epochs: 19 ms a training verse (2000 took 40.5 s, load 1.5); 3 s and 20 ms.
constexpr double verse_fixed_seconds = 3.0;
constexpr double seconds_per_verse = 0.02;

TimeEstimate time_estimate(const Config& c) {
    const double T = as_double(c.size(param::T)), w = as_double(std::max(c.size(param::d), c.size(param::d_k)));
    const double race = 1.2 * find_lesson("transformer")->time(transformer::race_config(c)).seconds;
    const double verses = verse_fixed_seconds + seconds_per_verse * as_double(c.size(param::verses));
    return {0.5 + 1e-7 * T * T * T * w + race + verses, "lesson 15 (its races on length above all)",
            fmt::format("T^3 max(d, d_k) = {:.3g}, five trainings of lesson 12's Transformer: {:.0f} s, and five on "
                        "verses: {:.0f} s",
                        T * T * T * w, race, verses),
            {{&param::epochs, 1.0}, {&param::sentences, 1.0}, {&param::test, 1.0}, {&param::verses, 1.0},
             {&param::T, 3.0}, {&param::d, 1.0}, {&param::d_k, 1.0}}};
}

// "Differ" and "move" below mean by more than this; rounding alone stays below 1e-13 at these sizes.
// How far beyond it depends on the draws (at T = 3 and d = 1 a mistake can move a weight by less than
// 1e-2), so a larger bound would claim what the seed decides.
constexpr double visible_change = 1e-9;

// T copies of v as rows: one vector to be turned at T positions.
Mat repeated(const Vec& v, std::size_t T) {
    Mat out = xt::empty<double>({T, v.size()});
    for (std::size_t t = 0; t < T; ++t) nn::set_row(out, t, v);
    return out;
}

// The columns of M in `order`: column j of the result is column order[j] of M.
Mat columns_in_order(const Mat& M, const std::vector<std::size_t>& order) {
    Mat out = xt::empty<double>({M.shape(0), order.size()});
    for (std::size_t j = 0; j < order.size(); ++j) nn::set_column(out, j, nn::column_of(M, order[j]));
    return out;
}

std::vector<std::string> offsets_labels(std::size_t T) {
    std::vector<std::string> out;
    for (std::size_t k = 0; k + 1 < 2 * T; ++k) out.push_back(fmt::format("m-n={}", static_cast<long long>(k) - static_cast<long long>(T - 1)));
    return out;
}

// ---------------------------------------------------------------- step [rope]

// The largest |R_m q - rope(q, m)| over m < T, R_m the transpose of lesson 4's block-diagonal
// nn::offset_rotation, built as an explicit d x d matrix and multiplied.
double against_lesson_4(const Vec& q, const Mat& turned) {
    double worst = 0.0;
    for (std::size_t m = 0; m < turned.shape(0); ++m) {
        const Vec by_matrix = nn::matvec(nn::transposed(nn::offset_rotation(q.size(), m)), q, "R_m q");
        worst = std::max(worst, max_abs_difference(by_matrix, nn::row_of(turned, m)));
    }
    return worst;
}

// (1, 0, 1, 0, ...) turned at each position p < T holds (cos p theta_i, sin p theta_i) in pair i; the
// sinusoidal encoding's row p holds (sin, cos) of the same angles: how far apart.
Apart angles_against_encoding(std::size_t T, std::size_t d) {
    Vec unit = nn::zeros(d);
    for (std::size_t i = 0; i < d / 2; ++i) unit(2 * i) = 1.0;
    const Mat turned = nn::rotary_rotation(repeated(unit, T), 0);
    const Mat PE = nn::sinusoidal_encoding(T, d);
    Mat swapped = xt::empty<double>({T, d});
    for (std::size_t p = 0; p < T; ++p)
        for (std::size_t i = 0; i < d / 2; ++i) swapped(p, 2 * i) = PE(p, 2 * i + 1), swapped(p, 2 * i + 1) = PE(p, 2 * i);
    return Apart::of(turned, swapped);
}

// Step [rope]: q turned at positions 0 .. T-1, against lesson 4's rotation and encoding.
void record_rope(Trace& trace, const Vec& q, std::size_t T) {
    const std::size_t d_k = q.size();
    const Vec theta = nn::rotary_frequencies(d_k);
    const Mat turned = nn::rotary_rotation(repeated(q, T), 0);
    double length_error = 0.0;
    for (std::size_t m = 0; m < T; ++m)
        length_error = std::max(length_error, std::abs(nn::norm_of(nn::row_of(turned, m)) - nn::norm_of(q)));
    trace.step("rope", "From lesson 4's rotation to RoPE",
               "f(x, m) = R_m x,  pair i: (x_2i, x_2i+1) -> (x_2i cos m theta_i - x_2i+1 sin m theta_i, "
               "x_2i sin m theta_i + x_2i+1 cos m theta_i),  theta_i = 10000^(-2i/d)",
               "Lesson 4 showed that the sinusoidal code of position p + k is the code of p turned by a fixed "
               "block-diagonal rotation R_k: each pair of coordinates turns by the angle k theta_i, with the "
               "frequencies theta_i = 10000^(-2i/d) of Vaswani et al. (2017, section 3.5). Su et al. (2021, "
               "RoFormer, section 3.2) keep the rotation and drop the code: nothing is added to the token. "
               "Instead the query of the token at position m, and its key, are turned by R_m, pair i by the "
               "angle m theta_i. Pair 0 turns by one radian per position, the last pair barely moves. Turning "
               "changes no length, and position 0 is no turn at all. RoPE's R_m is the transpose of lesson 4's: "
               "the angles are the same, but lesson 4's pairs are (sin, cos) and RoPE's are coordinates (x, "
               "y), so one turns the other way. The checks build R_m as the explicit d_k x d_k matrix from lesson "
               "4 and multiply, and find lesson 4's sines and cosines, bit for bit, inside RoPE's turn.");
    trace.tensor("theta", "theta_i = 10000^(-2i/d_k), one per pair", theta, numbered("pair ", 0, d_k / 2));
    trace.tensor("q", "a query, d_k", q);
    trace.tensor("q_turned", "row m: R_m q", turned, numbered("m=", 0, T));
    trace.check("R_m q by the explicit matrix (lesson 4's R_m transposed) equals RoPE's turn, pair by pair, for every m",
                against_lesson_4(q, turned), 1e-14, others_rounding);
    const Apart angles = angles_against_encoding(T, d_k);
    trace.check("RoPE's cos and sin of m theta_i are lesson 4's PE(m, 2i+1) and PE(m, 2i), bit for bit (entries "
                "that differ)",
                angles.bits, 0.0, attn_bits_only);
    trace.check("and where a student's PE ran, to rounding (largest |difference|; 0 here, 1e-12 there)", angles.largest,
                0.0, others_rounding);
    trace.check("turning keeps the length: |R_m q| = |q| for every m", length_error, 1e-12);
    const Apart at_zero = Apart::of(nn::rows_of(turned, 0, 1), as_row(q));
    trace.check("position 0 leaves q as it is, bit for bit (entries that differ)", at_zero.bits, 0.0, attn_bits_only);
    trace.check("and where a student's RoPE ran, to rounding (largest |difference|; 0 here, 1e-12 there)",
                at_zero.largest, 0.0, others_rounding);
}

// ---------------------------------------------------------------- step [relative]

// g(m - n) = sum_i (q_2i k_2i + q_2i+1 k_2i+1) cos((m - n) theta_i) + (q_2i k_2i+1 - q_2i+1 k_2i) sin((m - n) theta_i),
// entry k for m - n = k - (T - 1): the closed form of R_m q . R_n k = q^T R_(n-m) k.
Vec by_offset(const Vec& q, const Vec& k, std::size_t T) {
    const std::size_t d = q.size();
    Vec g = nn::zeros(2 * T - 1);
    for (std::size_t o = 0; o + 1 < 2 * T; ++o) {
        const double offset = static_cast<double>(o) - static_cast<double>(T - 1);
        for (std::size_t i = 0; i < d / 2; ++i) {
            const double angle = offset / portable::pow10000(as_double(2 * i) / as_double(d));
            g(o) += (q(2 * i) * k(2 * i) + q(2 * i + 1) * k(2 * i + 1)) * portable::cos(angle) +
                    (q(2 * i) * k(2 * i + 1) - q(2 * i + 1) * k(2 * i)) * portable::sin(angle);
        }
    }
    return g;
}

// Per offset m - n (rows, as by_offset): the largest minus the smallest of S(m, n) over the pairs with
// that offset, for two score grids (columns).
Mat spreads(const Mat& S_a, const Mat& S_b) {
    const std::size_t T = S_a.shape(0);
    Mat out = nn::zeros(2 * T - 1, 2);
    for (std::size_t o = 0; o + 1 < 2 * T; ++o) {
        const Mat* grids[] = {&S_a, &S_b};
        for (std::size_t c = 0; c < 2; ++c) {
            double lo = std::numeric_limits<double>::infinity(), hi = -lo;
            for (std::size_t m = 0; m < T; ++m)
                for (std::size_t n = 0; n < T; ++n)
                    if (m + T - 1 == n + o) lo = std::min(lo, (*grids[c])(m, n)), hi = std::max(hi, (*grids[c])(m, n));
            out(o, c) = hi - lo;
        }
    }
    return out;
}

double largest_off_closed_form(const Mat& S, const Vec& g) {
    const std::size_t T = S.shape(0);
    double worst = 0.0;
    for (std::size_t m = 0; m < T; ++m)
        for (std::size_t n = 0; n < T; ++n) worst = std::max(worst, std::abs(S(m, n) - g(m + T - 1 - n)));
    return worst;
}

// Pairs of distinct offsets whose values lie within `bound` of each other.
double close_pairs(const Vec& g, double bound) {
    double n = 0.0;
    for (std::size_t a = 0; a < g.size(); ++a)
        for (std::size_t b = a + 1; b < g.size(); ++b) n += std::abs(g(a) - g(b)) <= bound ? 1.0 : 0.0;
    return n;
}

// Step [relative]: every R_m q . R_n k against the closed form in m - n, and the sinusoidal code
// added instead, whose scores depend on m and n apart.
void record_relative(Trace& trace, const Vec& q, const Vec& k, std::size_t T) {
    const std::size_t d_k = q.size();
    const Mat Q = nn::rotary_rotation(repeated(q, T), 0), K = nn::rotary_rotation(repeated(k, T), 0);
    const Mat S = nn::matmul(Q, nn::transposed(K), "R_m q . R_n k");
    const Mat PE = nn::sinusoidal_encoding(T, d_k);
    const Mat S_added = nn::matmul(repeated(q, T) + PE, nn::transposed(repeated(k, T) + PE), "(q + PE_m) . (k + PE_n)");
    const Vec g = by_offset(q, k, T);
    const Mat spread = spreads(S, S_added);
    // offsets that more than one pair (m, n) shares: |m - n| < T - 1, rows 1 .. 2T - 3
    const Vec added_shared = nn::entries_of(nn::column_of(spread, 1), 1, 2 * T - 2);
    trace.step("relative", "The score depends on the offset only",
               "R_m q . R_n k = q^T R_m^T R_n k = q^T R_(n-m) k = g(m - n)",
               "A rotation's transpose turns back, so R_m^T R_n = R_(n-m): the score of the query at position m "
               "on the key at position n sees the two positions only through their offset m - n (Su et al. "
               "2021, section 3.2). Per pair that is (q . k) cos((m - n) theta_i) + (q_2i k_2i+1 - q_2i+1 k_2i) "
               "sin((m - n) theta_i), the closed form g. S holds R_m q . R_n k for every m and n below T: it "
               "is constant along each diagonal, and the 2T - 1 diagonals hold 2T - 1 different values, so "
               "the offset is not lost either. Lesson 4 added the code to the token instead (Vaswani et al. "
               "2017): then (q + PE_m) . (k + PE_n) has the cross terms q . PE_n and PE_m . k, which move with m "
               "and n themselves, and the same offset gives different scores at different places (the spread "
               "column). The property holds for any frequencies; which frequencies is what the golden file "
               "holds to the bit.");
    trace.tensor("k", "a key, d_k", k);
    trace.tensor("S", "S_mn = R_m q . R_n k", S, numbered("m=", 0, T), numbered("n=", 0, T), View::heatmap).axes("query position m", "key position n");
    trace.tensor("g", "the closed form, one value per offset m - n", g, offsets_labels(T));
    trace.tensor("spread", "per offset: largest minus smallest score over its pairs (m, n)", spread, offsets_labels(T),
                 {"RoPE", "PE added"});
    trace.check("every R_m q . R_n k equals g(m - n), for all m, n < T", largest_off_closed_form(S, g), 1e-12);
    trace.check("different offsets give different scores: the 2T - 1 values of g differ by > 1e-9 (pairs closer "
                "counted)",
                close_pairs(g, visible_change), 0.0);
    trace.check("with PE added instead, every offset shared by several pairs spreads by > 1e-9 (offsets that do not, "
                "counted)",
                count_at_most(added_shared, visible_change), 0.0);
}

// ---------------------------------------------------------------- step [layouts]

// Step [layouts]: RoPE on interleaved pairs with W_Q, W_K against RoPE on halves with their columns
// reordered, and on halves with the weights as they are.
void record_layouts(Trace& trace, const Mat& X, const Mat& W_Q, const Mat& W_K) {
    const std::size_t T = X.shape(0), d_k = W_Q.shape(1);
    const auto order = nn::halves_from_interleaved(d_k);
    const Mat Q = nn::rotary_rotation(nn::matmul(X, W_Q, "X W_Q"), 0), K = nn::rotary_rotation(nn::matmul(X, W_K, "X W_K"), 0);
    const Mat S = nn::matmul(Q, nn::transposed(K), "Q K^T");
    const Mat W_Q_halves = columns_in_order(W_Q, order), W_K_halves = columns_in_order(W_K, order);
    const Mat Q_h = nn::rotary_rotation(nn::matmul(X, W_Q_halves, "X W_Q P"), 0, nn::RotaryLayout::halves);
    const Mat K_h = nn::rotary_rotation(nn::matmul(X, W_K_halves, "X W_K P"), 0, nn::RotaryLayout::halves);
    const Mat S_h = nn::matmul(Q_h, nn::transposed(K_h), "Q_h K_h^T");
    const Mat Q_w = nn::rotary_rotation(nn::matmul(X, W_Q, "X W_Q"), 0, nn::RotaryLayout::halves);
    const Mat K_w = nn::rotary_rotation(nn::matmul(X, W_K, "X W_K"), 0, nn::RotaryLayout::halves);
    const Mat S_w = nn::matmul(Q_w, nn::transposed(K_w), "Q K^T, halves on interleaved weights");
    Vec order_values = xt::empty<double>({d_k});
    for (std::size_t j = 0; j < d_k; ++j) order_values(j) = as_double(order[j]);
    const auto rows_t = numbered("pos ", 0, T);
    trace.step("layouts", "Two layouts of the same rotation",
               "halves: pair i = (x_i, x_i+d/2);  RoPE_halves(x P) = RoPE_interleaved(x) P,  P: column 2i -> i, "
               "2i+1 -> i + d/2",
               "Su et al. (2021, section 3.4.2) and GPT-J turn neighbouring coordinates, (x_0, x_1), (x_2, x_3), ... "
               "GPT-NeoX and LLaMA turn the first half against the second, (x_i, x_i+d/2), which their "
               "rotate_half computes with two slices instead of a stride. Pair i has the same frequency either "
               "way, so the two are one rotation with the coordinates renamed: reorder the columns of W_Q and "
               "W_K by P (column 2i to i, 2i + 1 to i + d/2; W_V stays) and the halves layout gives the "
               "interleaved queries and keys with their columns reordered, entry for entry, and the same "
               "scores, up to the order of the sum in each dot product. This is how checkpoints move between "
               "the two conventions. Run the halves layout on weights trained for interleaved pairs without "
               "reordering them, and every pair mixes two coordinates that were never meant to turn together: "
               "the scores change, and nothing fails loudly.");
    trace.tensor("X", "T tokens, T x d", X, rows_t);
    trace.parameter("W_Q", "d x d_k", W_Q);
    trace.parameter("W_K", "d x d_k", W_K);
    trace.tensor("P", "column j of the halves layout is interleaved column P_j", order_values);
    trace.tensor("S_interleaved", "Q K^T, Q = RoPE(X W_Q), K = RoPE(X W_K), interleaved", S, rows_t, rows_t);
    trace.tensor("S_halves", "the same, halves, with W_Q P and W_K P", S_h, rows_t, rows_t);
    trace.tensor("S_unordered", "halves on W_Q and W_K as they are: the wrong scores", S_w, rows_t, rows_t);
    Apart reordered = Apart::of(Q_h, columns_in_order(Q, order));
    reordered.add(K_h, columns_in_order(K, order));
    trace.check("halves on reordered weights: Q and K are the interleaved ones with columns reordered, bit for bit "
                "(entries that differ)",
                reordered.bits, 0.0, attn_bits_only);
    trace.check("and where a student's RoPE ran, to rounding (largest |difference|; 0 here, 1e-12 there)",
                reordered.largest, 0.0, others_rounding);
    trace.check("and the scores are the same, up to the order of each sum", max_abs_difference(S_h, S), 1e-12);
    trace.check("halves on the weights as they are: the scores move by more than 1e-9, far beyond rounding (1 when "
                "not)",
                count_at_most({max_abs_difference(S_w, S)}, visible_change), 0.0);
}

// ---------------------------------------------------------------- step [rope-cache]

struct Decoder {
    Mat W_Q, W_K, W_V;  // d x d_k, d x d_k, d x d_v
};

// RoPE(X W_Q) from position `first` on, scaled by 1 / sqrt(d_k) after the turn, entry by entry.
Mat turned_queries(const Decoder& m, const Mat& X, std::size_t first) {
    Mat Q = nn::rotary_rotation(nn::matmul(X, m.W_Q, "X W_Q"), first);
    const double scale = 1.0 / std::sqrt(as_double(m.W_Q.shape(1)));
    for (std::size_t j = 0; j < Q.size(); ++j) Q.data()[j] = Q.data()[j] * scale;
    return Q;
}

// The uncached pass over the prefix X[0 .. t]: all t + 1 queries under the causal mask; its last row.
nn::AttentionResult uncached_last_row(const Decoder& m, const Mat& prefix) {
    const std::size_t t = prefix.shape(0) - 1;
    const Mat Q = turned_queries(m, prefix, 0);
    const Mat K = nn::rotary_rotation(nn::matmul(prefix, m.W_K, "X W_K"), 0);
    const Mat V = nn::matmul(prefix, m.W_V, "X W_V");
    const Mat A = nn::masked_softmax(nn::matmul(Q, nn::transposed(K), "Q K^T"), nn::causal_mask(t + 1));
    const Mat O = nn::matmul(A, V, "A V");
    return {Mat(), nn::rows_of(A, t, t + 1), nn::rows_of(O, t, t + 1)};
}

enum class Mistake { none, key_turned_again, query_at_zero };

struct CachedRun {
    Mat weights;  // T x T: row t is step t's weights, 0 past t
    Mat outputs;  // T x d_v
    Mat keys;     // the cache's keys at the end
};

// Decoding with the cache, one position a step: the new key turned once at its own position and
// appended; the new query turned at its own position (or as the mistake has it).
CachedRun cached(const Decoder& m, const Mat& X, Mistake mistake) {
    const std::size_t T = X.shape(0);
    CachedRun run{nn::zeros(T, T), nn::zeros(T, m.W_V.shape(1)), Mat()};
    nn::KVCache cache{xt::empty<double>({std::size_t{0}, m.W_K.shape(1)}), xt::empty<double>({std::size_t{0}, m.W_V.shape(1)})};
    for (std::size_t t = 0; t < T; ++t) {
        const Mat x = nn::rows_of(X, t, t + 1);
        const Mat q = turned_queries(m, x, mistake == Mistake::query_at_zero ? 0 : t);
        const Mat k = nn::rotary_rotation(nn::matmul(x, m.W_K, "x W_K"), t);
        const Mat v = nn::matmul(x, m.W_V, "x W_V");
        nn::AttentionResult r;
        if (mistake == Mistake::key_turned_again) {
            // the cached keys turned once more, at the new position t, before the step reads them
            nn::KVCache again{cache.K.shape(0) == 0 ? cache.K : nn::rotary_rotation(cache.K, std::vector<std::size_t>(t, t)),
                              cache.V};
            r = nn::kv_cache_step(again, q, k, v);
            cache.K = cache.K.shape(0) == 0 ? k : nn::concatenated_rows(cache.K, k);
            cache.V = again.V;
        } else {
            r = nn::kv_cache_step(cache, q, k, v);
        }
        for (std::size_t j = 0; j <= t; ++j) run.weights(t, j) = r.weights(0, j);
        nn::set_row(run.outputs, t, nn::row_of(r.output, 0));
    }
    run.keys = cache.K;
    return run;
}

// Row t: the largest |weight| difference of each mistake from the right cached weights (columns).
Mat mistake_changes(const Mat& right, const Mat& key_again, const Mat& query_zero) {
    const std::size_t T = right.shape(0);
    Mat out = xt::empty<double>({T, std::size_t{2}});
    for (std::size_t t = 0; t < T; ++t) {
        out(t, 0) = max_abs_difference(nn::row_of(key_again, t), nn::row_of(right, t));
        out(t, 1) = max_abs_difference(nn::row_of(query_zero, t), nn::row_of(right, t));
    }
    return out;
}

// Step [rope-cache]: decoding with the cache against the uncached pass, and the two offset mistakes.
void record_rope_cache(Trace& trace, const Decoder& m, const Mat& X) {
    const std::size_t T = X.shape(0), d_v = m.W_V.shape(1);
    Mat plain_weights = nn::zeros(T, T), plain_outputs = nn::zeros(T, d_v);
    for (std::size_t t = 0; t < T; ++t) {
        const nn::AttentionResult r = uncached_last_row(m, nn::rows_of(X, 0, t + 1));
        for (std::size_t j = 0; j <= t; ++j) plain_weights(t, j) = r.weights(0, j);
        nn::set_row(plain_outputs, t, nn::row_of(r.output, 0));
    }
    const CachedRun right = cached(m, X, Mistake::none);
    const CachedRun again = cached(m, X, Mistake::key_turned_again), at_zero = cached(m, X, Mistake::query_at_zero);
    const Mat changes = mistake_changes(right.weights, again.weights, at_zero.weights);
    const Mat K_all = nn::rotary_rotation(nn::matmul(X, m.W_K, "X W_K"), 0);
    const auto steps = numbered("t=", 0, T);
    trace.step("rope-cache", "RoPE in the key-value cache",
               "k_t = R_t W_K^T x_t, cached once;  q_t = R_t W_Q^T x_t / sqrt(d_k);  a_t = softmax(q_t K_<=t^T)",
               "Lesson 13 decodes one position a step and keeps every earlier key and value in a cache, and "
               "shows that the cached step repeats the uncached pass's last row to the bit. With RoPE the "
               "key of position t is turned once, by R_t, when it enters the cache, and stays as it is: its "
               "position never changes. The new query is turned by R_t, its own position. The scale 1/sqrt(d_k) "
               "(Vaswani et al. 2017) comes after the turn in both ways, and every product adds its terms in "
               "the same order, so the weights are the same bits as the uncached pass over the whole prefix "
               "(here one attention head, d_k = " +
                   std::to_string(m.W_K.shape(1)) + " and d_v = " + std::to_string(d_v) +
                   "). Two mistakes of the offset: turning the cached keys again by the new position t (key j "
                   "then sits at j + t, and the offset becomes -j), and turning every query at position 0 (the "
                   "score then sees -j as well). At the first step there is one key, whose weight is 1 "
                   "whatever the turn: a test with T = 1 sees neither mistake. From the second step on both "
                   "move the weights: here by up to " +
                   fmt::format("{:.3g} and {:.3g}", nn::max_of(nn::column_of(changes, 0)), nn::max_of(nn::column_of(changes, 1))) +
                   ". How far depends on the weights (a saturated softmax hides much), so the checks ask only for "
                   "a change far beyond rounding; the golden file holds the numbers.");
    trace.parameter("W_V", "d x d_v (W_Q and W_K are step [layouts]'s)", m.W_V);
    trace.tensor("weights", "row t: the cached step t's weights on keys 0 .. t", right.weights, steps,
                 numbered("key ", 0, T), View::heatmap)
        .axes("step", "cached key");
    trace.tensor("outputs", "row t: the cached step t's output, d_v", right.outputs, steps);
    trace.tensor("mistakes", "row t: largest |weight change| of each mistake", changes, steps,
                 {"key turned again", "query at 0"});
    const Apart weights = Apart::of(right.weights, plain_weights), outputs = Apart::of(right.outputs, plain_outputs),
                keys = Apart::of(right.keys, K_all);
    trace.check("at every step the cached weights equal the uncached pass's last row, bit for bit (entries that "
                "differ)",
                weights.bits, 0.0, attn_bits_only);
    trace.check("and so do the outputs (entries that differ)", outputs.bits, 0.0, attn_bits_only);
    trace.check("the cache's keys are the uncached pass's turned keys, each turned once (entries that differ)",
                keys.bits, 0.0, attn_bits_only);
    trace.check("and where a student's functions ran, all three to rounding (largest |difference|; 0 here, 1e-12 "
                "there)",
                std::max({weights.largest, outputs.largest, keys.largest}), 0.0, others_rounding);
    trace.check("at the first step (T = 1) neither mistake changes anything (largest change)",
                std::max(changes(0, 0), changes(0, 1)), 0.0, others_rounding);
    trace.check("keys turned again: the weights move by more than 1e-9, far beyond rounding (1 when not)",
                count_at_most({nn::max_of(nn::column_of(changes, 0))}, visible_change), 0.0);
    trace.check("queries at position 0: the weights move by more than 1e-9, far beyond rounding (1 when not)",
                count_at_most({nn::max_of(nn::column_of(changes, 1))}, visible_change), 0.0);
}

// ---------------------------------------------------------------- step [alibi-slopes]

// 2^(-8k/h) for k = 1 .. h: the geometric sequence taken for every h, wrong when h is not a power of two.
Vec naive_slopes(std::size_t h) {
    Vec out = xt::empty<double>({h});
    for (std::size_t k = 0; k < h; ++k)
        out(k) = portable::exp(-8.0 * as_double(k + 1) / as_double(h) * 0.69314718055994530942);
    return out;
}

// The step begins before the slopes are computed: with exercise alibi-bias not done yet, the lesson stops
// inside this step, and exercise rope's last step, [rope-cache], stands complete.
void record_alibi_slopes(Trace& trace, std::size_t h) {
    trace.step("alibi-slopes", "ALiBi: one slope per head",
               "h a power of two: m_k = 2^(-8k/h);  otherwise: the n = 2^floor(log2 h) slopes for n heads, then "
               "the 1st, 3rd, 5th, ... of those for 2n heads",
               "Press et al. (2022, ALiBi) add no position to queries or keys at all: each head adds to the "
               "score of query i on key j a penalty proportional to their distance, -m (i - j), with a slope m "
               "of its own. The slopes are fixed, not learned: for h heads a geometric sequence starting at "
               "2^(-8/h) with that same ratio, 1/2, 1/4, ..., 1/256 for 8 heads (their section 3). For a number "
               "of heads that is not a power of two their code takes the slopes of the largest power of two "
               "below, n, and fills up with every other slope of 2n heads, which fall between them: for 6 heads "
               "1/4, 1/16, 1/64, 1/256 (the four-head sequence), then 1/2 and 1/8. The geometric sequence "
               "2^(-8k/6) is not it: its first slope is 2^(-4/3) = 0.397. Heads with a large slope look at the "
               "last few tokens, heads with a small one far back.");
    const Vec slopes = nn::alibi_slopes(h), eight = nn::alibi_slopes(8), six = nn::alibi_slopes(6);
    // Press et al. 2022, section 3 (8 heads), and their reference code's rule for 6 heads
    const Vec published_8 = {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625};
    const Vec published_6 = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    double outside = 0.0, repeated_slopes = 0.0;
    for (std::size_t a = 0; a < h; ++a) {
        outside += slopes(a) > 0.0 && slopes(a) < 1.0 ? 0.0 : 1.0;
        for (std::size_t b = a + 1; b < h; ++b) repeated_slopes += slopes(a) == slopes(b) ? 1.0 : 0.0;
    }
    trace.tensor("slopes", fmt::format("m_k for h = {} heads", h), slopes, numbered("head ", 1, h));
    trace.tensor("slopes_6", "the rule for 6 heads", six, numbered("head ", 1, 6));
    trace.tensor("naive_6", "2^(-8k/6): the geometric sequence, wrong for 6 heads", naive_slopes(6), numbered("head ", 1, 6));
    trace.check("8 heads: 1/2, 1/4, ..., 1/256 exactly (Press et al. 2022, section 3)", max_abs_difference(eight, published_8),
                0.0, others_rounding);
    trace.check("6 heads: 1/4, 1/16, 1/64, 1/256, 1/2, 1/8 exactly, as the reference code gives",
                max_abs_difference(six, published_6), 0.0, others_rounding);
    trace.check("the geometric sequence for 6 heads is off by more than 0.1 (1 when not)",
                count_at_most({max_abs_difference(naive_slopes(6), published_6)}, 0.1), 0.0);
    trace.check(fmt::format("the {} slopes lie in (0, 1) and no two are equal (misses counted)", h),
                outside + repeated_slopes, 0.0);
}

// ---------------------------------------------------------------- step [alibi-bias]

// Largest |B_ij - B_(i+1)(j+1)|: 0 when the bias depends on i - j only.
double off_toeplitz(const Mat& B) {
    double worst = 0.0;
    for (std::size_t i = 0; i + 1 < B.shape(0); ++i)
        for (std::size_t j = 0; j + 1 < B.shape(1); ++j) worst = std::max(worst, std::abs(B(i, j) - B(i + 1, j + 1)));
    return worst;
}

// S + m j in column j: the bias without the mask, shifted by m i in row i.
Mat plus_later_keys(const Mat& S, double m) {
    Mat out = S;
    for (std::size_t i = 0; i < S.shape(0); ++i)
        for (std::size_t j = 0; j < S.shape(1); ++j) out(i, j) += m * as_double(j);
    return out;
}

void record_alibi_bias(Trace& trace, const Mat& S, double m) {
    const std::size_t T = S.shape(0);
    const Mat B = nn::alibi_bias(T, m), B_causal = nn::causal_alibi_bias(T, m);
    const Mat A_open = nn::softmax_rows(S + B), A_causal = nn::softmax_rows(S + B_causal);
    const auto rows_t = numbered("i=", 0, T), cols_t = numbered("j=", 0, T);
    double causal_error = 0.0;
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j)
            causal_error = std::max(causal_error, j > i ? (B_causal(i, j) == -std::numeric_limits<double>::infinity() ? 0.0 : 1.0)
                                                        : std::abs(B_causal(i, j) - B(i, j)));
    trace.step("alibi-bias", "The bias matrix and its causal form",
               "a_i = softmax(q_i K^T / sqrt(d_k) + m [-i, ..., -2, -1, 0]),  query i counted from 0 (Press et al. 2022, section 3)",
               fmt::format(
                   "The head with slope m = {} adds B_ij = -m (i - j) to the scores: 0 on the diagonal, -m for "
                   "the key one step back, -2m two steps back. B depends on i - j only (it is constant along "
                   "its diagonals, like lesson 4's G), and nothing is added to the tokens, so the values carry "
                   "no position. Press et al. use it in a causal language model: the keys after i are masked "
                   "(-inf), so the bias only ever penalises distance into the past. Without the mask it would "
                   "not: a softmax ignores a constant added to a whole row, and -m (i - j) is -m i + m j, so row i "
                   "gets softmax(S + m j), which favours the later keys, the ones furthest ahead (the check). "
                   "A model that reads both ways needs -m |i - j| instead. S here are scores of one head, drawn.",
                   m));
    trace.tensor("S_alibi", "scores q_i . k_j / sqrt(d_k) of one head, drawn", S, rows_t, cols_t);
    trace.tensor("B", "B_ij = -m (i - j)", B, rows_t, cols_t);
    trace.tensor("B_causal", "B with -inf above the diagonal", B_causal, rows_t, cols_t);
    trace.tensor("A_alibi", "softmax(S + B_causal)", A_causal, rows_t, cols_t, View::heatmap).axes("query i", "key j");
    trace.check("B depends on i - j only: equal along every diagonal", off_toeplitz(B), 0.0, others_rounding);
    trace.check("B_causal is B on and below the diagonal and -inf above it", causal_error, 0.0, others_rounding);
    trace.check("without the mask, softmax(S + B) = softmax(S + m j): the bias would favour later keys",
                max_abs_difference(A_open, nn::softmax_rows(plus_later_keys(S, m))), 1e-14, others_rounding);
    trace.check("every row of softmax(S + B_causal) sums to 1", row_sum_error(A_causal), 1e-12);
}

// ---------------------------------------------------------------- step [alibi-decay]

void record_alibi_decay(Trace& trace, const Vec& slopes, std::size_t T, double score) {
    const std::size_t h = slopes.size();
    const Mat S = nn::ones(T, T) * score;
    Mat last = xt::empty<double>({h, T});  // head k: the last query's weight on the key at distance j
    double ratio_error = 0.0, rows_without_nan = 0.0;
    for (std::size_t k = 0; k < h; ++k) {
        const Mat B = nn::causal_alibi_bias(T, slopes(k));
        const Mat A = nn::softmax_rows(S + B);
        const double per_step = portable::exp(-slopes(k));
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 1; j <= i; ++j)  // key j - 1 is one step further back than key j
                ratio_error = std::max(ratio_error, std::abs(A(i, j - 1) / A(i, j) / per_step - 1.0));
        for (std::size_t j = 0; j < T; ++j) last(k, j) = A(T - 1, T - 1 - j);
        const Mat naive = unshifted_softmax_rows(S + B);
        for (std::size_t i = 0; i < T; ++i) {
            bool nan = false;
            for (std::size_t j = 0; j < T; ++j) nan = nan || std::isnan(naive(i, j));
            rows_without_nan += nan ? 0.0 : 1.0;
        }
    }
    trace.step("alibi-decay", "What the bias does as the distance grows",
               "equal scores s:  a_ij = e^(-m (i - j)) (1 - e^(-m)) / (1 - e^(-m (i + 1))),  a_i(j-1) / a_ij = e^(-m)",
               fmt::format(
                   "Give every key the same score s = {:g}: the softmax then sees only the bias, and the weight "
                   "on a key falls by the factor e^(-m) for every step of distance, a geometric decay. For m = "
                   "1/2 that halves the weight about every 1.4 positions; for m = 1/256 it takes 177. The table "
                   "holds, per head, the last query's weights on the keys 0, 1, 2, ... steps back. A score of {:g} "
                   "also shows why the softmax subtracts each row's largest entry first: exp({:g}) overflows to "
                   "inf, and the textbook formula gives inf / inf = NaN in every row; shifted, the weights are "
                   "exact to rounding. Press et al. (2022) train on short sequences and test on longer ones: the "
                   "penalty grows with distance without bound, so far keys fade, however long the input.",
                   score, score, score));
    trace.tensor("decay", "head k: the last query's weights on the keys 0, 1, 2, ... steps back", last,
                 numbered("head ", 1, h), numbered("back ", 0, T), View::heatmap)
        .axes("head", "distance");
    // s + B_ij rounds to within half an ulp of s (eps s / 2 at most), once in each of the two weights of a
    // ratio, and exp multiplies an absolute error in its argument into the same relative error: 8 eps s
    // leaves a margin of four. A wrong decay (a slope off, e^(-2m)) is off by m >= 2^-8, far above it.
    trace.check("for equal scores the weight falls by e^(-m) per step of distance, every head and query (relative "
                "error)",
                ratio_error, 8.0 * std::numeric_limits<double>::epsilon() * score);
    trace.check(fmt::format("the unshifted softmax of scores {:g} overflows: NaN in every row (rows without one counted)",
                            score),
                rows_without_nan, 0.0);
}


// ---------------------------------------------------------------- the race on length

using translation::Pair;
using translation::Scores;

// The five ways of giving lesson 12's Transformer its positions, in the order of every table.
constexpr std::size_t schemes = 5;
const std::array<const char*, schemes> scheme_names = {"sinusoidal", "learned", "RoPE", "ALiBi", "none"};

nn::EncoderDecoder positioned(nn::EncoderDecoder m, nn::PositionScheme scheme) {
    m.positions = scheme;
    return m;
}

// `base` given its positions the five ways, in scheme_names' order (`learned`: base with its learned tables).
std::array<nn::EncoderDecoder, schemes> five_ways(const nn::EncoderDecoder& base, const nn::EncoderDecoder& learned) {
    return {base, learned, positioned(base, nn::PositionScheme::rope), positioned(base, nn::PositionScheme::alibi),
            positioned(base, nn::PositionScheme::none)};
}

// Runs work(k, progress) for each of the five models, each on a thread of its own if the processor has two
// or more: every training is the lessons' one sum in the portable arithmetic on its thread, so the bytes are
// those of one loop. The progress line (shown, never recorded) counts the epochs of all five as they end:
// "training five Transformers <on>: 7 of 30 epochs done".
void for_each_of_five(Trace& trace, const std::string& on, std::size_t epochs,
                      const std::function<void(std::size_t, const transformer::TrainingProgress&)>& work) {
    std::mutex reporting;
    std::array<std::size_t, schemes> epochs_done{};
    translation::for_each_independent(schemes, [&](std::size_t k) {
        const transformer::TrainingProgress progress = [&](std::size_t epoch, std::size_t, std::size_t, std::size_t) {
            const std::lock_guard<std::mutex> hold(reporting);
            epochs_done[k] = epoch - 1;
            std::size_t done = 0;
            for (std::size_t e : epochs_done) done += e;
            trace.progress(
                fmt::format("training five Transformers {}: {} of {} epochs done", on, done, schemes * epochs));
        };
        work(k, progress);
    });
}

struct LengthRace {
    Config race;                   // lesson 12's configuration (transformer::race_config)
    transformer::RaceStart start;  // its corpus, models as drawn and generator
    std::vector<Pair> long_pairs;  // lesson 12's long test set
    std::array<nn::EncoderDecoder, schemes> drawn;
    std::array<transformer::Retrained, schemes> trained;
    std::array<Scores, schemes> test, longer;
};

// Lesson 12's Transformer as drawn, given its positions five ways (the learned tables as lesson 12 draws
// them), each trained on the race's batches in the race's order, and each scored by greedy decoding on
// the test set and the long one.
LengthRace race_on_length(const Config& config, Trace& trace) {
    const Config race = transformer::race_config(config);
    LengthRace r{race, transformer::race_start(race), {}, {}, {}, {}, {}};
    const std::size_t epochs = r.race.size(param::epochs);
    transformer::LongStart drawn = transformer::long_start(r.race, r.start);
    r.long_pairs = std::move(drawn.pairs);
    const nn::EncoderDecoder& base = r.start.start.transformer;
    r.drawn = five_ways(base, drawn.learned);
    const auto train_and_translate = [&](std::size_t k, const transformer::TrainingProgress& progress) {
        r.trained[k] = transformer::retrain_transformer(r.start.rng, r.start.corpus, r.drawn[k], r.race, progress);
        r.test[k] = translation::scores_to_reference(r.trained[k].model, r.start.corpus.test);
        r.longer[k] = translation::scores_to_reference(r.trained[k].model, r.long_pairs);
    };
    for_each_of_five(trace, "on lesson 12's corpus", epochs, train_and_translate);
    return r;
}

// ---------------------------------------------------------------- step [bag-of-words]

// The largest |H'[T-1-t] - H[t]| over the rows: H the encoder's output on a source, H' on it reversed.
double reversal_gap(const Mat& H, const Mat& reversed) {
    double worst = 0.0;
    const std::size_t T = H.shape(0);
    for (std::size_t t = 0; t < T; ++t)
        worst = std::max(worst, max_abs_difference(nn::row_of(reversed, T - 1 - t), nn::row_of(H, t)));
    return worst;
}

// Step [bag-of-words]: the drawn encoder without positions, and with the sinusoids, on a source and on
// it reversed.
void record_bag_of_words(Trace& trace, const nn::EncoderDecoder& m, const Pair& p) {
    const std::vector<std::size_t> src = p.src, rev(p.src.rbegin(), p.src.rend());
    const auto bare = [&](const std::vector<std::size_t>& ids) {
        return nn::positioned_encoder_stack(nn::scaled_embeddings(m.E_src, ids), m.encoder, m.encoder_norm, m.heads,
                                            nn::PositionScheme::none)
            .output;
    };
    const double bag = reversal_gap(bare(src), bare(rev));
    const double sinusoidal = reversal_gap(nn::encoder_output(m, src), nn::encoder_output(m, rev));
    trace.step("bag-of-words", "Why the encoder keeps its positions",
               "Attention(P X) = P Attention(X) for a permutation P of the rows, with no positions and no mask",
               fmt::format(
                   "Before the race, what \"no positions\" can mean. Self-attention without a mask treats its rows "
                   "as a set: permute the tokens and every score, weight and output is permuted with them, and the "
                   "position-wise network and the norms act row by row. So an encoder given no positions reads a "
                   "bag of words: lesson 12's encoder as drawn, given \"{}\" and the same words reversed, returns "
                   "the same rows reversed, to {:.1e}; with the sinusoids added, the rows differ by up to {:.3f}. "
                   "A causal decoder is different: its mask tells the first token (which sees only itself) from the "
                   "second (which sees two), and so on (Haviv et al. 2022 trained language models with no "
                   "positions at all; Kazemnejad et al. 2023 found them to generalise to longer inputs). The "
                   "race's fifth contestant therefore takes the positions out of the decoder and leaves the "
                   "encoder's sinusoids in.",
                   fmt::join(translation::lights_src, " "), bag, sinusoidal));
    trace.tensor("reversal_gap", "largest |H(reversed)[T-1-t] - H[t]|", Vec{bag, sinusoidal},
                 {"no positions", "sinusoids added"}, {}, View::bars)
        .foreign_tolerance(1e-10, 1e-10, "rounding: the sums of attention run in another order on the reversed rows");
    trace.check("without positions, the encoder's output on the reversed source is its output reversed", bag, 1e-12);
    trace.check("with the sinusoids added, reversing the source changes the encoder's output beyond rounding",
                sinusoidal > visible_change ? 0.0 : 1.0, 0.0);
}

// ---------------------------------------------------------------- step [race-gradients]

// Step [race-gradients]: the backward of each new scheme against central differences, before training.
void record_race_gradients(Trace& trace, const LengthRace& r, const Pair& p) {
    Mat table = xt::empty<double>({std::size_t{3}, std::size_t{3}});
    double worst = 0.0, tolerance = 0.0;
    std::size_t tensors = 0;
    for (std::size_t k = 2; k < schemes; ++k) {
        const transformer::GradientCheck c = transformer::transformer_gradient_check(r.drawn[k], p);
        table(k - 2, 0) = c.loss, table(k - 2, 1) = c.worst, table(k - 2, 2) = c.tolerance;
        worst = std::isnan(c.worst) || std::isnan(worst) ? std::numeric_limits<double>::quiet_NaN()
                                                          : std::max(worst, c.worst / c.tolerance);
        tolerance = std::max(tolerance, c.tolerance);
        tensors = c.names.size();
    }
    trace.step("race-gradients", "The new backward passes, checked before training",
               "dL/dw ~ (L(w + h) - L(w - h)) / 2h,  h = 1e-6, one entry of every tensor",
               fmt::format(
                   "RoPE and ALiBi change self-attention's backward (nn/position_schemes.cpp). ALiBi's bias is a "
                   "constant, so its effect is all in the weights the forward kept. RoPE's rotation R is "
                   "orthogonal, so the gradient of a turned query goes back through R^T: each pair turned by minus "
                   "its angle. The model with no positions in the decoder changes only its inputs. Each of the "
                   "three models, as drawn, is checked as lesson 12 checks its own: on \"{}\", one weight of each "
                   "of the {} tensors (the one with the largest gradient) is moved by +-h and the loss recomputed, "
                   "with lesson 8's tolerance 100 eps max(1, |L|) / h. A rotation by +angle in the backward, or a "
                   "bias that reached the future, would be off by the size of the gradient.",
                   fmt::join(translation::lights_src, " "), tensors));
    trace.tensor("race_gradients", "teacher-forced loss, largest error, tolerance", table, {"RoPE", "ALiBi", "none"},
                 {"loss", "largest error", "tolerance"})
        .foreign_tolerance(tolerance, tolerance, central_difference_noise());
    trace.check("RoPE's, ALiBi's and the bare decoder's backward passes match central differences on every tensor "
                "(largest error over tolerance)",
                worst, 1.0);
}

// ---------------------------------------------------------------- step [length-race]

// "1/4, 1/16, 1/64, 1/256": ALiBi's slopes for h heads, each the inverse of a whole number.
std::string slope_list(std::size_t h) {
    const Vec m = nn::alibi_slopes(h);
    std::vector<std::string> out;
    for (double v : m) out.push_back(fmt::format("1/{:.0f}", 1.0 / v));
    return fmt::format("{}", fmt::join(out, ", "));
}

// The largest change of rows 0 .. T-2 of the decoder's probabilities when the last decoder input changes:
// 0 for a causal decoder.
double future_leak(const nn::EncoderDecoder& m, const Pair& p) {
    const Mat H = nn::encoder_output(m, p.src);
    std::vector<std::size_t> in = translation::decoder_inputs(p);
    const Mat a = nn::decoder_probabilities(m, H, in);
    in.back() = in.back() == 3 ? 4 : 3;
    const Mat b = nn::decoder_probabilities(m, H, in);
    double worst = 0.0;
    for (std::size_t i = 0; i + 1 < in.size(); ++i)
        worst = std::max(worst, max_abs_difference(nn::row_of(a, i), nn::row_of(b, i)));
    return worst;
}

// What each run reached, for the step's text: its test loss, exact and word shares on the test and the long
// set, and its word share across the training boundary (bins L - 1 and L).
std::string race_report(const LengthRace& r, const transformer::LengthBins& bins, const transformer::ByLength& by) {
    const std::size_t E = r.trained[0].test_loss.size() - 1, L = bins.first_long;
    std::string report;
    for (std::size_t k = 0; k < schemes; ++k)
        report += fmt::format("{}{}: test loss {:.3f}, exact {:.3f} on the test set and {:.3f} on the long one, word "
                              "accuracy {:.3f} and {:.3f}, from {:.3f} in bin {} to {:.3f} in bin {}",
                              k == 0 ? "" : (k + 1 == schemes ? "; and " : "; "), scheme_names[k],
                              r.trained[k].test_loss(E), r.test[k].exact, r.longer[k].exact, r.test[k].free_tokens,
                              r.longer[k].free_tokens, by.words(L - 1, k), bins.labels[L - 1], by.words(L, k),
                              bins.labels[L]);
    return report;
}

// Step [length-race].
void record_length_race(Trace& trace, const LengthRace& r, const Pair& p) {
    const translation::Corpus& c = r.start.corpus;
    const transformer::LengthBins bins = transformer::race_length_bins(r.race);
    const transformer::ByLength by = transformer::accuracy_by_length(bins, c.test, r.test, r.long_pairs, r.longer);
    const std::size_t E = r.trained[0].test_loss.size() - 1;
    Mat losses = xt::empty<double>({E + 1, schemes});
    for (std::size_t e = 0; e <= E; ++e)
        for (std::size_t k = 0; k < schemes; ++k) losses(e, k) = r.trained[k].test_loss(e);
    double leak = 0.0;
    for (std::size_t k = 0; k < schemes; ++k) leak = std::max(leak, future_leak(r.trained[k].model, p));
    trace.step("length-race", "The race on length: five ways to give positions",
               "added PE(t) or P[t];  R_m q . R_n k (RoPE);  q . k / sqrt(d_k) - m |i - j| (ALiBi);  none",
               fmt::format(
                   "Lesson 12 found that neither sinusoids nor learned positions carried its Transformer past the "
                   "lengths it trained on. Here the same Transformer, from the same initial weights, is trained five "
                   "times on the same batches in the same order ({} epochs of {} pairs), its positions given "
                   "five ways: sinusoids added to both stacks' inputs; a learned table added instead (drawn as "
                   "lesson 12 draws it); RoPE in the self-attention of both stacks; ALiBi there (the encoder's bias "
                   "symmetric, -m |i - j|, the decoder's causal; slopes {}); and no positions in the decoder at all, "
                   "the encoder keeping its sinusoids (step [bag-of-words]). Cross-attention takes no positions in "
                   "any of them. Each then translates lesson 12's test set and its {} long pairs of {} to {} source "
                   "words by greedy decoding (stopped one word past the reference's length: no later word can change "
                   "a score), while no training source has more than {} words. What each run "
                   "reached: {}. This is one run at one seed and one small model: reported, never checked. What "
                   "is checked holds at every seed: the long sources are longer than every training source, the "
                   "learned rows beyond the training lengths never move, and every trained decoder is causal.",
                   E, c.train.size(), slope_list(r.drawn[0].heads), r.long_pairs.size(),
                   transformer::shortest_source(r.long_pairs), bins.bins.back().second,
                   transformer::longest(c.train).first, race_report(r, bins, by)));
    const std::vector<std::string> names(scheme_names.begin(), scheme_names.end());
    trace.tensor("test_loss", "nats per target word, teacher-forced", losses, numbered("epoch ", 0, E + 1), names,
                 View::plot)
        .foreign_shown(trained_here());
    trace.tensor("words_by_length", "share of target words right (greedy); rows from " + bins.labels[bins.first_long] +
                                        " on are longer than any training source",
                 by.words, bins.labels, names, View::plot)
        .foreign_shown(trained_here());
    trace.tensor("exact_by_length", "share of sentences translated exactly", by.exact, bins.labels, names)
        .foreign_shown(trained_here());
    trace.tensor("pairs", "pairs per bin (test set, then the long set)", by.pairs, bins.labels, {}, View::bars);
    trace.check("every long test source is longer than every training source",
                as_double(transformer::lengths_shared(c.train, r.long_pairs)), 0.0);
    trace.check("learned position rows past the training lengths are exactly as drawn (no gradient reaches them)",
                transformer::untrained_rows_moved(r.trained[1].model, r.drawn[1], c.train), 0.0);
    trace.check("every trained decoder is causal: changing the last input word moves no earlier prediction", leak,
                1e-12);
}

// ---------------------------------------------------------------- step [verse-race]

// The race again on lesson 14's verses: its tokenizer and Transformer sizes, trained on short verses
// only and tested on John's verses of every length.
constexpr long long verse_words = 15;   // most words of a training verse, on either side
constexpr long long verse_test = 120;   // John's verses, taken evenly across the book
constexpr long long verse_epochs = 3;   // passes over the training verses

// Lesson 14's configuration for the race: its defaults, this lesson's seed and verses.
Config verse_config(const Config& c) {
    namespace lesson_14 = real_translation::param;
    return apply_settings(real_translation::lesson().params, c.seed,
                          {{lesson_14::pairs.key, c.get(param::verses.key)},
                           {lesson_14::max_words.key, verse_words},
                           {lesson_14::test.key, verse_test},
                           {lesson_14::epochs.key, verse_epochs}});
}

struct VerseRace {
    Config config;                     // lesson 14's (verse_config)
    real_translation::Tokenized data;  // pieces of the training verses, the validation verses and John's
    std::array<nn::EncoderDecoder, schemes> drawn;
    std::array<transformer::Retrained, schemes> trained;
};

// The five Transformers at lesson 14's sizes, drawn once from the seed (the learned tables with rows for
// John's longest verse), each trained on the short verses in the same order.
VerseRace verse_race(const Config& config, Trace& trace, const real_translation::Verses& verses) {
    VerseRace r{verse_config(config), {}, {}, {}};
    const real_translation::Chosen chosen = real_translation::chosen_verses(verses, r.config);
    const text::Tokenizer pieces(real_translation::trained_tokenizer(chosen, verses, r.config));
    r.data = real_translation::tokenized(pieces, chosen);
    Rng rng(config.seed ^ 0x7665727365ull);  // "verse"
    const std::size_t V = r.data.pieces.size();
    const nn::EncoderDecoder base =
        translation::drawn_transformer(rng, real_translation::sizes_of(r.config), V, V);
    const auto [src_rows, in_rows] = transformer::longest(r.data.test);
    r.drawn = five_ways(base, transformer::with_learned_positions(base, rng, src_rows, in_rows));
    const std::size_t epochs = r.config.size(real_translation::param::epochs);
    for_each_of_five(trace, "on verses", epochs, [&](std::size_t k, const transformer::TrainingProgress& progress) {
        r.trained[k] = transformer::trained_transformer(
            rng, r.data.train, r.data.validation, r.drawn[k], epochs,
            [&](std::size_t step) { return real_translation::transformer_adam(step, r.config); }, progress);
    });
    return r;
}

// Source lengths in pieces: two bins up to the longest training source L, then bins as wide beyond it,
// the last open; only the bins that hold a verse of `test`. first_long is the first bin past L (count()
// when none holds a verse).
transformer::LengthBins verse_bins(std::size_t L, const std::vector<Pair>& test) {
    const std::size_t width = (L + 1) / 2, beyond = 4, open = std::numeric_limits<std::size_t>::max();
    std::vector<std::pair<std::size_t, std::size_t>> all = {{1, width}, {width + 1, L}};
    for (std::size_t b = 0; b < beyond; ++b)
        all.push_back({L + 1 + b * width, b + 1 == beyond ? open : L + (b + 1) * width});
    transformer::LengthBins out;
    bool past = false;
    for (const std::pair<std::size_t, std::size_t>& bin : all) {
        const bool held = std::any_of(test.begin(), test.end(), [&](const Pair& p) {
            return p.src.size() >= bin.first && p.src.size() <= bin.second;
        });
        if (!held) continue;
        if (bin.first > L && !past) {
            out.first_long = out.bins.size();
            past = true;
        }
        out.bins.push_back(bin);
        out.labels.push_back(bin.second == open ? fmt::format("T_x {}+", bin.first)
                                                : fmt::format("T_x {}-{}", bin.first, bin.second));
    }
    if (!past) out.first_long = out.bins.size();
    return out;
}

// Verses of `test` on the wrong side of the training boundary L in `bins`: binned past it but no longer
// than L, or before it but longer.
std::size_t across_boundary(const transformer::LengthBins& bins, std::size_t L, const std::vector<Pair>& test) {
    std::size_t wrong = 0;
    for (const Pair& p : test) wrong += (bins.of(p.src.size()) >= bins.first_long) != (p.src.size() > L) ? 1 : 0;
    return wrong;
}

// Teacher-forced loss per target piece (and <eos>) and the share of pieces predicted right, by bin of
// source length: bins x schemes each.
struct VerseScores {
    Mat loss, right;
    Vec pairs;
};
VerseScores verse_scores(const transformer::LengthBins& bins, const std::vector<Pair>& test,
                         const std::array<transformer::Retrained, schemes>& trained) {
    VerseScores out{nn::zeros(bins.count(), schemes), nn::zeros(bins.count(), schemes), nn::zeros(bins.count())};
    Vec targets = nn::zeros(bins.count());
    std::vector<translation::Forward> passes(test.size() * schemes);
    translation::for_each_independent(passes.size(), [&](std::size_t n) {
        passes[n] = translation::teacher_forced(trained[n % schemes].model, test[n / schemes]);
    });
    for (std::size_t j = 0; j < test.size(); ++j) {  // summed in the order of the verses
        const std::size_t b = bins.of(test[j].src.size());
        const std::vector<std::size_t> out_ids = translation::decoder_outputs(test[j]);
        out.pairs(b) += 1.0;
        targets(b) += as_double(out_ids.size());
        for (std::size_t k = 0; k < schemes; ++k) {
            const translation::Forward& f = passes[j * schemes + k];
            out.loss(b, k) += f.loss;
            for (std::size_t i = 0; i < out_ids.size(); ++i) out.right(b, k) += f.predicted[i] == out_ids[i] ? 1.0 : 0.0;
        }
    }
    for (std::size_t b = 0; b < bins.count(); ++b)
        for (std::size_t k = 0; k < schemes; ++k) {
            out.loss(b, k) /= targets(b);
            out.right(b, k) /= targets(b);
        }
    return out;
}

// What each run reached, for the step's text: each model's loss in the last bin of training lengths, the
// first past them and the last ("nats a piece in bins A, B, C: sinusoidal x, y, z; ...").
std::string verse_report(const transformer::LengthBins& bins, const VerseScores& s) {
    std::vector<std::size_t> shown;
    if (bins.first_long > 0) shown.push_back(bins.first_long - 1);
    if (bins.first_long < bins.count()) shown.push_back(bins.first_long);
    if (bins.first_long + 1 < bins.count()) shown.push_back(bins.count() - 1);
    std::vector<std::string> shown_labels;
    for (std::size_t b : shown) shown_labels.push_back(bins.labels[b]);
    std::string report = fmt::format("nats a piece in bins {}: ", fmt::join(shown_labels, ", "));
    for (std::size_t k = 0; k < schemes; ++k) {
        std::vector<std::string> losses_shown;
        for (std::size_t b : shown) losses_shown.push_back(fmt::format("{:.3f}", s.loss(b, k)));
        report += fmt::format("{}{} {}", k == 0 ? "" : (k + 1 == schemes ? "; and " : "; "), scheme_names[k],
                              fmt::join(losses_shown, ", "));
    }
    return report;
}

// Step [verse-race].
void record_verse_race(Trace& trace, const VerseRace& r) {
    const std::size_t L = transformer::longest(r.data.train).first;
    const transformer::LengthBins bins = verse_bins(L, r.data.test);
    const VerseScores s = verse_scores(bins, r.data.test, r.trained);
    const std::size_t longer = static_cast<std::size_t>(std::count_if(
        r.data.test.begin(), r.data.test.end(), [&](const Pair& p) { return p.src.size() > L; }));
    const std::size_t E = r.trained[0].test_loss.size() - 1;
    Mat losses = xt::empty<double>({E + 1, schemes});
    for (std::size_t e = 0; e <= E; ++e)
        for (std::size_t k = 0; k < schemes; ++k) losses(e, k) = r.trained[k].test_loss(e);
    double leak = 0.0;
    for (std::size_t k = 0; k < schemes; ++k) leak = std::max(leak, future_leak(r.trained[k].model, r.data.test.front()));
    const std::string report = verse_report(bins, s);
    trace.step("verse-race", "The race on real verses",
               "loss per piece by source length, teacher-forced: -log p(y_i | y_<i, x) averaged in each bin",
               fmt::format(
                   "The same five ways, now on lesson 14's verses: its SentencePiece tokenizer ({} pieces) and its "
                   "Transformer (d_model {}, {} heads, {} block), drawn once and given its positions five ways, "
                   "each trained for {} epochs on the same {} verse pairs in the same order, all of at most {} "
                   "words, so that no training source has more than {} pieces. Then each reads {} of John's verses "
                   "(every length, taken evenly across the book), {} of them longer than any training source, and "
                   "is scored teacher-forced: the loss of each true next piece given the ones before. A model this "
                   "small, trained for seconds, translates nothing (lesson 14), but its loss still says how well "
                   "it predicts, and whether it predicts worse where the positions are new to it ({} training "
                   "verses barely start that: --set verses=2000 trains for about 40 s). What each run reached: "
                   "{}. This is one run at one seed: reported, never checked. What is checked holds at "
                   "every seed: the bins past the training lengths hold exactly the longer verses, the learned "
                   "rows past the training lengths never move, and every trained decoder is causal.",
                   r.data.pieces.size(), r.drawn[0].E_src.shape(1), r.drawn[0].heads, r.drawn[0].decoder.size(), E,
                   r.data.train.size(), verse_words, L, r.data.test.size(), longer, r.data.train.size(), report));
    const std::vector<std::string> names(scheme_names.begin(), scheme_names.end());
    trace.tensor("verse_validation_loss",
                 "nats per piece of the validation verses (as short as the training ones), teacher-forced", losses,
                 numbered("epoch ", 0, E + 1), names, View::plot)
        .foreign_shown(trained_here());
    const std::string past = bins.first_long < bins.count()
                                 ? "rows from " + bins.labels[bins.first_long] + " on are longer than any training source"
                                 : "no verse is longer than every training source";
    trace.tensor("verse_loss_by_length", "nats per target piece, teacher-forced; " + past, s.loss, bins.labels, names,
                 View::plot)
        .foreign_shown(trained_here());
    trace.tensor("verse_right_by_length", "share of target pieces predicted right, teacher-forced", s.right,
                 bins.labels, names)
        .foreign_shown(trained_here());
    trace.tensor("verse_pairs", "John's verses per bin", s.pairs, bins.labels, {}, View::bars);
    trace.check("the bins past the training lengths hold exactly the verses longer, in pieces, than every training "
                "verse (verses on the wrong side counted)",
                as_double(across_boundary(bins, L, r.data.test)), 0.0);
    trace.check("learned position rows past the training lengths are exactly as drawn (no gradient reaches them)",
                transformer::untrained_rows_moved(r.trained[1].model, r.drawn[1], r.data.train), 0.0);
    trace.check("every trained decoder is causal on a verse: changing the last input piece moves no earlier "
                "prediction",
                leak, 1e-12);
}

void lesson_positions(Trace& trace, const Config& config) {
    const std::size_t T = config.size(param::T), d = config.size(param::d), d_k = config.size(param::d_k),
                      d_v = config.size(param::d_v), h = config.size(param::heads);
    Rng rng(config.seed);
    // attn run --input may replace any of these with the user's own (same shapes)
    const Vec q = trace.input("q", rng.normal_vec(d_k));
    const Vec k = trace.input("k", rng.normal_vec(d_k));
    const Mat X = trace.input("X", rng.normal_mat(T, d));
    // drawn wide enough that the softmax is far from uniform: the mistakes then move it visibly
    const double scale = 1.5 / std::sqrt(as_double(d));
    Decoder m{rng.normal_mat(d, d_k, scale), rng.normal_mat(d, d_k, scale), rng.normal_mat(d, d_v, scale)};
    m.W_Q = trace.input("W_Q", m.W_Q);
    m.W_K = trace.input("W_K", m.W_K);
    m.W_V = trace.input("W_V", m.W_V);
    const Mat S_alibi = trace.input("S_alibi", rng.normal_mat(T, T));

    record_rope(trace, q, T);
    record_relative(trace, q, k, T);
    record_layouts(trace, X, m.W_Q, m.W_K);
    record_rope_cache(trace, m, X);
    record_alibi_slopes(trace, h);
    const Vec slopes = nn::alibi_slopes(h);
    record_alibi_bias(trace, S_alibi, slopes(0));
    record_alibi_decay(trace, slopes, T, 1000.0);

    trace.need_next_step();  // a run asked for the steps so far (an exercise's check) ends before training
    // the verses of step [verse-race] first: without the Bible's modules the run stops here, naming the
    // package, rather than after the race on length
    trace.progress("reading the verses of both Bibles");
    const std::shared_ptr<const real_translation::Verses> verses = real_translation::read_verses();
    LengthRace race = race_on_length(config, trace);
    const Pair lights = translation::pair_of(race.start.corpus, translation::lights_src, translation::lights_tgt);
    record_bag_of_words(trace, race.drawn[0], lights);
    record_race_gradients(trace, race, lights);
    record_length_race(trace, race, lights);
    record_verse_race(trace, verse_race(config, trace, *verses));
}

}  // namespace
}  // namespace positions

Lesson positions_lesson() {
    using namespace positions;
    return make_lesson(15, "positions", "Positions in the scores: RoPE and ALiBi",
                       "Su et al. 2021; Press et al. 2022; Vaswani et al. 2017; Haviv et al. 2022; Kazemnejad et al. 2023",
                       {param::T, param::d, param::d_k, param::d_v, param::heads, param::epochs, param::sentences,
                        param::test, param::verses},
                       limits, time_estimate, lesson_positions,
                       {"rope", "relative", "layouts", "rope-cache", "alibi-slopes", "alibi-bias", "alibi-decay",
                        "bag-of-words", "race-gradients", "length-race", "verse-race"},
                       {{"epochs", 1}, {"sentences", 50}, {"test", 20}, {"verses", 16}});
}

}  // namespace attn
