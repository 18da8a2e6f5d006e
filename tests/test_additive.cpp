// Lesson 2 (additive attention, Bahdanau et al. 2015) and the op it adds: the bidirectional GRU
// against nn::gru_step run by hand in both directions, the additive score against explicit
// loops, and the lesson's alignment, its recorded tensors and its heatmap.
#include "core/render.hpp"
#include "core/rng.hpp"
#include "nn/attention.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"
#include "run.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_additive {

using namespace attn;
using attn::test::recorded;
using Catch::Matchers::WithinAbs;

namespace {

// Small weights keep the gates away from saturation, so a wrong index shows in the states.
nn::GruParams small_gru(Rng& rng, std::size_t d_in, std::size_t d) {
    const double s = 0.6;
    return {rng.normal_mat(d, d_in, s), rng.normal_mat(d, d, s), rng.normal_vec(d, s),
            rng.normal_mat(d, d_in, s), rng.normal_mat(d, d, s), rng.normal_vec(d, s),
            rng.normal_mat(d, d_in, s), rng.normal_mat(d, d, s), rng.normal_vec(d, s)};
}

// The GRU state after each row of X, visiting the rows in `order`, from a zero state;
// row t of the result belongs to row t of X whatever the order of reading.
Mat states_by_hand(const nn::GruParams& p, const Mat& X, const std::vector<std::size_t>& order) {
    Mat states = nn::zeros(X.shape(0), p.hidden_width());
    Vec h = nn::zeros(p.hidden_width());
    for (const std::size_t t : order) {
        h = nn::gru_step(p, nn::row_of(X, t), h).state;
        nn::set_row(states, t, h);
    }
    return states;
}

struct BiShape {
    std::size_t T, d_in, d_fwd, d_bwd;
};

struct ScoreShape {
    std::size_t T_q, T_k, d_q, d_k, d_a;
};

// The GRU of a lesson's stacked tensors W = [W_z; W_r; W_h], U = [U_z; U_r; U_h], b = [b_z; b_r; b_h].
nn::GruParams gru_from_stacked(const Mat& W, const Mat& U, const Vec& b) {
    const std::size_t w = U.shape(1);
    nn::GruParams p;
    Mat* W_blocks[] = {&p.W_z, &p.W_r, &p.W_h};
    Mat* U_blocks[] = {&p.U_z, &p.U_r, &p.U_h};
    Vec* b_blocks[] = {&p.b_z, &p.b_r, &p.b_h};
    for (std::size_t k = 0; k < 3; ++k) {
        *W_blocks[k] = nn::rows_of(W, k * w, (k + 1) * w);
        *U_blocks[k] = nn::rows_of(U, k * w, (k + 1) * w);
        *b_blocks[k] = nn::entries_of(b, k * w, (k + 1) * w);
    }
    return p;
}

Trace run_additive(std::uint64_t seed) {
    const Lesson* lesson = find_lesson("additive");
    REQUIRE(lesson != nullptr);
    Config config = lesson->defaults;
    config.seed = seed;
    return run_lesson(*lesson, config);
}

std::size_t argmax_of_row(const Mat& m, std::size_t i) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < m.shape(1); ++j)
        if (m(i, j) > m(i, best)) best = j;
    return best;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The UTF-8 sequences of a string, one per code point.
std::vector<std::string> code_points(const std::string& s) {
    std::vector<std::string> out;
    for (const char ch : s) {
        const bool continuation = (static_cast<unsigned char>(ch) & 0xC0) == 0x80;
        if (continuation && !out.empty())
            out.back() += ch;
        else
            out.emplace_back(1, ch);
    }
    return out;
}

// What follows the first `columns` display columns of a line.
std::string after_columns(const std::string& line, std::size_t columns) {
    std::string rest;
    std::size_t width = 0;
    for (const auto& cp : code_points(line)) {
        if (width >= columns) rest += cp;
        width += display_width(cp);
    }
    return rest;
}

// The index of the darkest heatmap cell in a row of 2-column cells drawn with " ░▒▓█".
std::size_t darkest_cell(const std::string& cells, std::size_t width) {
    const std::vector<std::string> shades = {" ", "░", "▒", "▓", "█"};
    const auto points = code_points(cells);
    std::size_t best = 0, best_shade = 0;
    for (std::size_t k = 0; width * k < points.size(); ++k) {
        std::size_t shade = 0;
        while (shade < shades.size() && shades[shade] != points[width * k]) ++shade;
        if (shade > best_shade) best = k, best_shade = shade;
    }
    return best;
}

const std::vector<std::string> target_words = {"लाइट", "बंद", "करो"};
const std::vector<std::string> source_words = {"turn", "off", "the", "lights"};
const std::vector<std::size_t> expected_source = {3, 1, 0};  // लाइट→lights, बंद→off, करो→turn

}  // namespace

TEST_CASE("bigru_forward equals gru_step run forwards and over the reversed sentence", "[additive][bigru]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto shape = GENERATE(values<BiShape>({{1, 3, 2, 2}, {2, 4, 3, 2}, {5, 2, 4, 4}, {7, 3, 1, 3}}));
    INFO("seed " << seed << ", T " << shape.T << ", d_in " << shape.d_in);
    Rng rng(seed);
    const nn::GruParams fwd = small_gru(rng, shape.d_in, shape.d_fwd), bwd = small_gru(rng, shape.d_in, shape.d_bwd);
    const Mat X = rng.normal_mat(shape.T, shape.d_in);

    const nn::BiGruRun run = nn::bigru_forward(fwd, bwd, X);
    const Mat expected_fwd = states_by_hand(fwd, X, nn::ascending_indices(shape.T));
    const Mat expected_bwd = states_by_hand(bwd, X, nn::descending_indices(shape.T));

    REQUIRE(shape_of(run.annotations) == Shape{shape.T, shape.d_fwd + shape.d_bwd});
    CHECK(max_abs_difference(run.forward.states, expected_fwd) <= 1e-14);
    CHECK(max_abs_difference(run.backward.states, expected_bwd) <= 1e-14);
    const Mat fwd_half = nn::columns_of(run.annotations, 0, shape.d_fwd);
    const Mat bwd_half = nn::columns_of(run.annotations, shape.d_fwd, shape.d_fwd + shape.d_bwd);
    CHECK(max_abs_difference(fwd_half, expected_fwd) <= 1e-14);
    CHECK(max_abs_difference(bwd_half, expected_bwd) <= 1e-14);

    // the backward gates are stored in source order too: row T-1 is the first step, from h = 0
    const std::size_t last_row = shape.T - 1;
    const nn::GruStep last = nn::gru_step(bwd, nn::row_of(X, last_row), nn::zeros(shape.d_bwd));
    const Vec last_update = nn::row_of(run.backward.update_gates, last_row);
    const Vec last_candidate = nn::row_of(run.backward.candidates, last_row);
    CHECK(max_abs_difference(last_update, last.update_gate) <= 1e-14);
    CHECK(max_abs_difference(last_candidate, last.candidate) <= 1e-14);
}

TEST_CASE("the forward half of h_j never sees later words; the backward half does", "[additive][bigru]") {
    const auto seed = GENERATE(4u, 5u);
    Rng rng(seed);
    const nn::GruParams fwd = small_gru(rng, 3, 2), bwd = small_gru(rng, 3, 2);
    const Mat X = rng.normal_mat(4, 3);
    Mat changed = X;
    nn::set_row(changed, 3, rng.normal_vec(3));  // a different last word

    const nn::BiGruRun a = nn::bigru_forward(fwd, bwd, X), b = nn::bigru_forward(fwd, bwd, changed);
    const Mat a_early = nn::rows_of(a.forward.states, 0, 3);
    const Mat b_early = nn::rows_of(b.forward.states, 0, 3);
    // the same operations on the same inputs: bit for bit equal
    CHECK(max_abs_difference(a_early, b_early) == 0.0);
    const Vec a_first = nn::row_of(a.backward.states, 0), b_first = nn::row_of(b.backward.states, 0);
    CHECK(max_abs_difference(a_first, b_first) > 1e-6);
}

TEST_CASE("bigru_forward rejects inputs of the wrong width, naming the direction", "[additive][bigru]") {
    Rng rng(6);
    const nn::GruParams fwd = small_gru(rng, 3, 2), bwd = small_gru(rng, 4, 2);
    const Mat X = rng.normal_mat(2, 3);
    CHECK_THROWS_WITH(nn::bigru_forward(fwd, bwd, X), Catch::Contains("backward GRU"));
    CHECK_THROWS_AS(nn::bigru_forward(bwd, fwd, X), ShapeError);
}

TEST_CASE("additive scores equal v^T tanh(W_q q_i + W_k k_j) written as loops", "[additive][scores]") {
    const auto seed = GENERATE(1u, 2u, 3u);
    const auto shape =
        GENERATE(values<ScoreShape>({{1, 1, 1, 1, 1}, {2, 3, 4, 5, 3}, {3, 7, 2, 6, 5}, {1, 9, 3, 3, 2}}));
    INFO("seed " << seed << ", T_q " << shape.T_q << ", T_k " << shape.T_k);
    Rng rng(seed);
    const Mat Q = rng.normal_mat(shape.T_q, shape.d_q), K = rng.normal_mat(shape.T_k, shape.d_k);
    const Mat W_q = rng.normal_mat(shape.d_a, shape.d_q), W_k = rng.normal_mat(shape.d_a, shape.d_k);
    const Vec v = rng.normal_vec(shape.d_a);

    const Mat E = nn::additive_scores(Q, K, W_q, W_k, v);
    REQUIRE(shape_of(E) == Shape{shape.T_q, shape.T_k});
    for (std::size_t i = 0; i < shape.T_q; ++i)
        for (std::size_t j = 0; j < shape.T_k; ++j) {
            double e = 0.0;
            for (std::size_t a = 0; a < shape.d_a; ++a) {
                double pre = 0.0;
                for (std::size_t b = 0; b < shape.d_q; ++b) pre += W_q(a, b) * Q(i, b);
                for (std::size_t b = 0; b < shape.d_k; ++b) pre += W_k(a, b) * K(j, b);
                e += v(a) * std::tanh(pre);
            }
            CHECK_THAT(E(i, j), WithinAbs(e, 1e-12));
        }

    // concat form with W = [W_q W_k]
    Mat W = xt::empty<double>({shape.d_a, shape.d_q + shape.d_k});
    nn::set_columns(W, 0, W_q);
    nn::set_columns(W, shape.d_q, W_k);
    CHECK(max_abs_difference(nn::concat_scores(Q, K, W, v), E) <= 1e-12);
}

TEST_CASE("additive scores reject a W_k that does not fit the keys", "[additive][scores]") {
    Rng rng(8);
    const Mat Q = rng.normal_mat(2, 3), K = rng.normal_mat(4, 5);
    CHECK_THROWS_AS(nn::additive_scores(Q, K, rng.normal_mat(2, 3), rng.normal_mat(2, 4), rng.normal_vec(2)),
                    ShapeError);
}

TEST_CASE("lesson 2 aligns लाइट with lights, बंद with off, करो with turn", "[additive][lessons]") {
    const Trace trace = run_additive(find_lesson("additive")->defaults.seed);
    const TensorRecord& alpha = recorded(trace, "weights", "alpha");
    CHECK(alpha.rows == target_words);
    CHECK(alpha.cols == source_words);
    REQUIRE(alpha.shape() == Shape{3, 4});
    const Mat weights = alpha.value;
    for (std::size_t i = 0; i < 3; ++i) {
        INFO("row " << target_words[i]);
        CHECK(argmax_of_row(weights, i) == expected_source[i]);
        CHECK(weights(i, expected_source[i]) > 0.5);  // a clear peak, not a near tie
        CHECK_THAT(weights(i, 0) + weights(i, 1) + weights(i, 2) + weights(i, 3), WithinAbs(1.0, 1e-12));
    }
    // बंद also glances at "turn": "बंद करो" translates "turn off"
    CHECK(weights(1, 0) > weights(1, 2));
    CHECK(weights(1, 0) > weights(1, 3));
}

TEST_CASE("lesson 2 has 10 steps and every identity check holds", "[additive][lessons]") {
    const Trace trace = run_additive(find_lesson("additive")->defaults.seed);
    std::vector<std::string> ids;
    std::size_t checks = 0;
    for (const auto& s : trace.steps()) {
        ids.push_back(s.id);
        checks += s.checks.size();
        for (const auto& c : s.checks) {
            INFO(s.id << ": " << c.claim << " (error " << c.max_abs_error << ")");
            CHECK(c.holds);
        }
    }
    CHECK(ids == std::vector<std::string>{"embeddings", "encoder", "decoder-start", "alignment-model", "first-word",
                                          "decoder", "scores", "weights", "context", "many-to-one"});
    CHECK(checks == 17);
    CHECK(trace.all_checks_hold());
}

TEST_CASE("lesson 2: the plan, not the seed, fixes the scores", "[additive][lessons]") {
    const auto seed = GENERATE(1u, 2u, 3u, 11u, 12u);
    const Trace reference = run_additive(find_lesson("additive")->defaults.seed);
    const Trace other = run_additive(seed);
    INFO("seed " << seed);
    CHECK(other.all_checks_hold());
    CHECK(max_abs_difference(recorded(other, "scores", "E").value, recorded(reference, "scores", "E").value) <= 1e-12);
    // while the weights that produce those scores differ
    CHECK(max_abs_difference(recorded(other, "alignment-model", "W_a").value,
                             recorded(reference, "alignment-model", "W_a").value) > 1e-3);
}

TEST_CASE("lesson 2's many-to-one grid: entarté spreads its weight over hit, with, a and pie", "[additive][lessons]") {
    const Trace t = run_additive(find_lesson("additive")->defaults.seed);
    const Mat K = recorded(t, "many-to-one", "K_pie").value, Q = recorded(t, "many-to-one", "Q_pie").value;
    const Mat alpha = recorded(t, "many-to-one", "alpha_pie").value;
    REQUIRE(alpha.shape(0) == 4);
    REQUIRE(alpha.shape(1) == 6);
    // the scores by hand, v = 2 in every feature, then a softmax per row with std::exp
    for (std::size_t i = 0; i < 4; ++i) {
        std::vector<double> e(6, 0.0);
        double total = 0.0;
        for (std::size_t j = 0; j < 6; ++j) {
            for (std::size_t f = 0; f < 6; ++f) e[j] += 2.0 * std::tanh(Q(i, f) + K(j, f));
            total += std::exp(e[j]);
        }
        for (std::size_t j = 0; j < 6; ++j) CHECK(std::abs(std::exp(e[j]) / total - alpha(i, j)) <= 1e-12);
    }
    // he hit me with a pie: entarté's row (the last) holds four equal weights on columns 1, 3, 4, 5
    for (std::size_t j : {3u, 4u, 5u}) CHECK(alpha(3, j) == Approx(alpha(3, 1)).epsilon(1e-12));
    CHECK(alpha(3, 1) + alpha(3, 3) + alpha(3, 4) + alpha(3, 5) > 0.95);
    CHECK(alpha(3, 0) < 0.05);
    CHECK(alpha(3, 2) < 0.05);
    // the other three words each point at one English word: il-he, a-hit, m'-me
    for (std::size_t i = 0; i < 3; ++i) CHECK(alpha(i, i) > 0.5);
}

TEST_CASE("lesson 2 can be recomputed from its recorded tensors alone", "[additive][lessons]") {
    const Trace t = run_additive(find_lesson("additive")->defaults.seed);
    const auto value = [&](const std::string& step, const std::string& name) -> Array {
        return recorded(t, step, name).value;
    };
    // encoder: the annotations from X and the stacked GRU weights
    const Mat X = value("embeddings", "X");
    const nn::GruParams fwd = gru_from_stacked(value("encoder", "W_fwd"), value("encoder", "U_fwd"),
                                               value("encoder", "b_fwd"));
    const nn::GruParams bwd = gru_from_stacked(value("encoder", "W_bwd"), value("encoder", "U_bwd"),
                                               value("encoder", "b_bwd"));
    const Mat H = value("encoder", "H");
    CHECK(max_abs_difference(nn::bigru_forward(fwd, bwd, X).annotations, H) <= 1e-12);

    // s_0 = tanh(W_s h←_1), the first row of S_prev
    const Mat W_s = value("decoder-start", "W_s"), H_bwd = value("encoder", "H_bwd");
    const Vec s0 = xt::tanh(nn::matvec(W_s, nn::row_of(H_bwd, 0), "W_s h←_1"));
    CHECK(max_abs_difference(s0, value("decoder-start", "s_0")) <= 1e-12);

    // scores, weights and contexts from the alignment model and the queries
    const Mat S_prev = value("scores", "S_prev");
    CHECK(max_abs_difference(nn::row_of(S_prev, 0), s0) <= 1e-12);
    const Mat W_a = value("alignment-model", "W_a"), U_a = value("alignment-model", "U_a");
    const Vec v_a = value("alignment-model", "v_a");
    const Mat E = nn::additive_scores(S_prev, H, W_a, U_a, v_a);
    CHECK(max_abs_difference(E, value("scores", "E")) <= 1e-12);
    const Mat alpha = nn::softmax_rows(E);
    CHECK(max_abs_difference(alpha, value("weights", "alpha")) <= 1e-12);
    const Mat C = nn::context_vectors(alpha, H);
    CHECK(max_abs_difference(C, value("context", "C")) <= 1e-12);
    CHECK(max_abs_difference(nn::row_of(E, 0), value("first-word", "e_1")) <= 1e-12);

    // the decoder: D_in = [y_{i-1}; c_i] and s_i = GRU(D_in_i, s_{i-1})
    const Mat D_in = value("decoder", "D_in"), S = value("decoder", "S"), Y_in = value("embeddings", "Y_in");
    const std::size_t d = Y_in.shape(1);
    const Mat D_words = nn::columns_of(D_in, 0, d);
    const Mat D_contexts = nn::columns_of(D_in, d, D_in.shape(1));
    CHECK(max_abs_difference(D_words, Y_in) == 0.0);  // copies, not computations
    CHECK(max_abs_difference(D_contexts, C) <= 1e-12);
    const nn::GruParams dec = gru_from_stacked(value("decoder-start", "W_dec"), value("decoder-start", "U_dec"),
                                               value("decoder-start", "b_dec"));
    for (std::size_t i = 0; i < 3; ++i) {
        const Vec s = nn::gru_step(dec, nn::row_of(D_in, i), nn::row_of(S_prev, i)).state;
        CHECK(max_abs_difference(s, nn::row_of(S, i)) <= 1e-12);
        if (i + 1 < 3) CHECK(max_abs_difference(s, nn::row_of(S_prev, i + 1)) <= 1e-12);
    }
}

TEST_CASE("lesson 2's heatmap keeps its columns aligned with the Devanagari labels", "[additive][render]") {
    const Trace trace = run_additive(find_lesson("additive")->defaults.seed);
    const TensorRecord& alpha = recorded(trace, "weights", "alpha");
    REQUIRE(alpha.view == View::heatmap);
    RenderOptions options;
    options.color = false;
    const auto lines = lines_of(render_tensor(alpha, options));

    std::vector<std::string> number_rows, grid_rows;
    for (const auto& word : target_words)
        for (const auto& line : lines)
            if (line.rfind("  " + word + " ", 0) == 0)
                (line.find('.') != std::string::npos ? number_rows : grid_rows).push_back(line);
    REQUIRE(number_rows.size() == 3);
    REQUIRE(grid_rows.size() == 3);

    // "  " + label padded to the widest label (लाइट, 4 columns) + "  ", then the numbers or cells
    const std::size_t prefix = 2 + display_width("लाइट") + 2;
    for (std::size_t i = 0; i < 3; ++i) {
        INFO("row " << target_words[i]);
        CHECK(display_width(number_rows[i]) == display_width(number_rows[0]));
        const std::string numbers = after_columns(number_rows[i], prefix);
        CHECK(numbers.find_first_not_of(" -0123456789.") == std::string::npos);
        // cells as wide as the longest column label ("lights") plus one, so the words sit above them
        const std::size_t cell = display_width("lights") + 1;
        CHECK(display_width(grid_rows[i]) == prefix + cell * 4);
        CHECK(darkest_cell(after_columns(grid_rows[i], prefix), cell) == expected_source[i]);
    }
    // the column labels sit above the numbers: both lines end at the same column
    std::string header;
    for (const auto& line : lines)
        if (header.empty() && line.find("lights") != std::string::npos && line.find("turn") != std::string::npos)
            header = line;
    REQUIRE_FALSE(header.empty());
    CHECK(display_width(header) == display_width(number_rows[0]));
}

}  // namespace test_additive
