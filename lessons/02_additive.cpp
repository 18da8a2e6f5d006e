// Lesson 2: additive attention (Bahdanau et al. 2015). The decoder keeps every encoder
// annotation and, before each target word, scores all of them against its current state.
// T_x = source tokens, T_y = target tokens, d = embedding width, u = width of each encoder
// direction (annotations are 2u wide), n = decoder state width, d_a = alignment layer width (= T_x).
#include "registry.hpp"
#include "gru.hpp"
#include "support.hpp"

#include "core/portable_math.hpp"
#include "core/rng.hpp"
#include "nn/attention.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/scores.hpp"
#include "nn/softmax.hpp"

#include <fmt/format.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace attn {

namespace additive {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d{"d", 6, 1, 256, "width of the word embeddings"};
const Param n{"n", 6, 4, 256,
              "width of the decoder state s_i; at least 4, so that W_a can send the 3 states s_{i-1} to their "
              "planned queries exactly"};
const Param u{"u", 3, 3, 128,
              "width of each encoder direction (annotations h_j are 2u wide); at least 3, so that U_a can send "
              "the 4 annotations to their planned keys exactly"};
}  // namespace param

std::string limits(const Config& c) {
    const double widest = std::max({as_double(c.size(param::d)), as_double(c.size(param::n)),
                                    2.0 * as_double(c.size(param::u))});
    return memory_limit(20.0 * widest * widest, "lesson 2");
}

// Seconds per widest^2 (widest of d, n and 2u): every parameter at its maximum (widest 256) took
// 0.31 s on this project's 2-core machine at a load of 6.0, 4.7e-6 s a unit; 1e-5 on the safe side,
// and half a second for the rest. No setting in range comes near the cap.
TimeEstimate time_estimate(const Config& c) {
    const double widest = std::max({as_double(c.size(param::d)), as_double(c.size(param::n)),
                                    2.0 * as_double(c.size(param::u))});
    return {0.5 + 1e-5 * widest * widest, "lesson 2",
            fmt::format("widest^2 = {:.3g} of max(d, n, 2u)^2", widest * widest),
            {{&param::d, 2.0}, {&param::n, 2.0}, {&param::u, 2.0}}};
}


const std::vector<std::string> source_sentence = {"turn", "off", "the", "lights"};
const std::vector<std::string> target_sentence = {"लाइट", "बंद", "करो"};
const std::vector<std::string> decoder_inputs = {"y_0 <sos>", "y_1 लाइट", "y_2 बंद"};  // teacher forcing
const std::vector<std::string> feature_names = {"f_turn", "f_off", "f_the", "f_lights"};

// Levels of the construction. A key lifts its own feature by key_height; a query entry
// decides whether that lift reaches the score: at `open` the lift carries tanh across its
// steep middle (-0.76 to +0.76), at `closed` tanh is already flat (+0.995 to +0.99991).
constexpr double key_height = 2.0;
constexpr double open = -key_height / 2;
constexpr double half_open = 0.0;
constexpr double closed = 3.0;
constexpr double score_scale = 2.0;  // every entry of v_a

// Row k of Q_plan is the query the decoder should send when it is about to emit target word k.
Mat planned_queries() {
    return Mat{{closed, closed, closed, open},      // लाइट: read "lights"
               {half_open, open, closed, closed},   // बंद: read "off", and "turn" a little
               {open, closed, closed, closed}};     // करो: read "turn"
}

// Row j of K_plan is the key of source word j: its own feature raised, the others at 0.
Mat planned_keys() { return key_height * xt::eye<double>(source_sentence.size()); }

// The alignment the plan builds in (step [alignment-model]) and the last step checks: for each
// target word, the source word whose feature its query opens most (its smallest entry).
// For the lesson's plan: लाइट←lights, बंद←off, करो←turn.
std::vector<std::size_t> planned_sources(const Mat& Q_plan) {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < Q_plan.shape(0); ++i) {
        const Vec row = nn::row_of(Q_plan, i);
        out.push_back(static_cast<std::size_t>(std::distance(row.begin(), std::min_element(row.begin(), row.end()))));
    }
    return out;
}

// A GRU drawn stacked, [W_z; W_r; W_h] then U then b (Cho et al. 2014's gates z, r, h~):
// weights with variance 1/fan_in, biases N(0, 1/4); --input may replace W_<which>, U_<which>, b_<which>.
StackedGru drawn_gru(Trace& trace, Rng& rng, const GruNames& names, std::size_t d_in, std::size_t w) {
    return supplied(trace, names,
                    stacked(draw_gru(rng, d_in, w, fan_in_init(GruInit::Order::stacked, d_in, w, 0.5, 0.0))));
}

// The three weights of the alignment model a(s_{i-1}, h_j) — Bahdanau et al. 2015, appendix A.1.2.
struct AlignmentModel {
    Mat W_a;  // d_a x n, applied to the decoder state
    Mat U_a;  // d_a x 2u, applied to each annotation
    Vec v_a;  // d_a
};

// One score step written out: the projected query, each projected key, the tanh layer, the scores.
struct ScoreParts {
    Vec query;   // W_a s_{i-1}
    Mat keys;    // T_x x d_a, row j: U_a h_j
    Mat hidden;  // T_x x d_a, row j: tanh(W_a s_{i-1} + U_a h_j)
    Vec scores;  // T_x, e_ij = v_a . hidden_j
};

ScoreParts scores_from_projections(const Vec& query, const Mat& keys, const Vec& v) {
    const std::size_t T_x = keys.shape(0), d_a = keys.shape(1);
    ScoreParts parts{query, keys, xt::empty<double>({T_x, d_a}), nn::zeros(T_x)};
    for (std::size_t j = 0; j < T_x; ++j)
        for (std::size_t a = 0; a < d_a; ++a) {
            parts.hidden(j, a) = portable::tanh(query(a) + keys(j, a));
            parts.scores(j) += v(a) * parts.hidden(j, a);
        }
    return parts;
}

// e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j) for one decoder step, one annotation at a time.
ScoreParts scores_by_hand(const Vec& s_prev, const Mat& H, const AlignmentModel& m) {
    Mat keys = xt::empty<double>({H.shape(0), m.U_a.shape(0)});
    for (std::size_t j = 0; j < H.shape(0); ++j) nn::set_row(keys, j, nn::matvec(m.U_a, nn::row_of(H, j), "U_a h_j"));
    return scores_from_projections(nn::matvec(m.W_a, s_prev, "W_a s_{i-1}"), keys, m.v_a);
}

// Everything the decoder computes, one row per target position i.
struct DecoderRun {
    Mat queries;   // T_y x n, row i: s_{i-1}, the state held before y_i is emitted
    Mat scores;    // T_y x T_x, row i: e_i
    Mat weights;   // T_y x T_x, row i: alpha_i = softmax(e_i)
    Mat contexts;  // T_y x 2u, row i: c_i = sum_j alpha_ij h_j
    Mat inputs;    // T_y x (d + 2u), row i: [y_{i-1}; c_i]
    Mat states;    // T_y x n, row i: s_i
};

// The scores e_i given the step i and the state s_{i-1}.
using ScoreRule = std::function<Vec(std::size_t, const Vec&)>;

// s_i = GRU([y_{i-1}; c_i], s_{i-1}) with c_i from the scores of s_{i-1} — Bahdanau et al. 2015,
// section 3.1. Teacher forcing: y_{i-1} is the reference token, row i-1 of Y_in.
DecoderRun decode(const nn::GruParams& decoder, const Vec& s0, const Mat& Y_in, const Mat& H, const ScoreRule& score) {
    const std::size_t T_y = Y_in.shape(0), T_x = H.shape(0), n = s0.size(), width = H.shape(1);
    DecoderRun run{xt::empty<double>({T_y, n}),     xt::empty<double>({T_y, T_x}),
                   xt::empty<double>({T_y, T_x}),   xt::empty<double>({T_y, width}),
                   xt::empty<double>({T_y, Y_in.shape(1) + width}),
                   xt::empty<double>({T_y, n})};
    Vec s = s0;
    for (std::size_t i = 0; i < T_y; ++i) {
        const Vec e = score(i, s);
        const Vec alpha = nn::softmax(e);
        const Vec c = weighted_sum(alpha, H);
        const Vec input = nn::concatenated(nn::row_of(Y_in, i), c);
        nn::set_row(run.queries, i, s);
        nn::set_row(run.scores, i, e);
        nn::set_row(run.weights, i, alpha);
        nn::set_row(run.contexts, i, c);
        nn::set_row(run.inputs, i, input);
        s = nn::gru_step(decoder, input, s).state;
        nn::set_row(run.states, i, s);
    }
    return run;
}

// U_a sends each annotation to its planned key. W_a must send each s_{i-1} to its planned
// query; those states depend on W_a only through the queries it produces, so a run fed the
// planned queries directly passes through them, and W_a is solved from that run.
AlignmentModel build_alignment_model(const nn::GruParams& decoder, const Vec& s0, const Mat& Y_in, const Mat& H,
                                     const Mat& Q_plan, const Mat& K_plan, const Vec& v_a) {
    const DecoderRun planned = decode(decoder, s0, Y_in, H, [&](std::size_t i, const Vec&) {
        return scores_from_projections(nn::row_of(Q_plan, i), K_plan, v_a).scores;
    });
    return {nn::linear_map_sending(planned.queries, Q_plan), nn::linear_map_sending(H, K_plan), v_a};
}

// W = [W_a U_a], so that W [s; h] = W_a s + U_a h.
Mat joined_weights(const AlignmentModel& m) {
    const std::size_t n = m.W_a.shape(1), width = m.U_a.shape(1);
    Mat W = xt::empty<double>({m.W_a.shape(0), n + width});
    nn::set_columns(W, 0, m.W_a);
    nn::set_columns(W, n, m.U_a);
    return W;
}

// 0 when the largest weight of row i sits in column `expected`, 1 otherwise.
double misaligned(const Mat& alpha, std::size_t i, std::size_t expected) {
    const Vec row = nn::row_of(alpha, i);
    const auto best = std::distance(row.begin(), std::max_element(row.begin(), row.end()));
    return static_cast<std::size_t>(best) == expected ? 0.0 : 1.0;
}

// T_x, T_y and the number of scores T_x * T_y.
Vec score_count(std::size_t T_x, std::size_t T_y) {
    return Vec{static_cast<double>(T_x), static_cast<double>(T_y), static_cast<double>(T_x * T_y)};
}

// How far any coordinate of any c_i lies outside the range [min_j h_j, max_j h_j] of that coordinate.
double outside_annotation_range(const Mat& C, const Mat& H) {
    const Vec lowest = xt::amin(H, {0}), highest = xt::amax(H, {0});
    double worst = 0.0;
    for (std::size_t i = 0; i < C.shape(0); ++i)
        for (std::size_t k = 0; k < C.shape(1); ++k)
            worst = std::max({worst, lowest(k) - C(i, k), C(i, k) - highest(k)});
    return worst;
}

// The real decoder run: the scores of step i compare s_{i-1} with every annotation through the model.
DecoderRun decode_with(const AlignmentModel& model, const nn::GruParams& decoder, const Vec& s0, const Mat& Y_in,
                       const Mat& H) {
    return decode(decoder, s0, Y_in, H, [&](std::size_t, const Vec& s_prev) {
        return scores_by_hand(s_prev, H, model).scores;
    });
}

// Step [embeddings]: the source words X and the target words Y_in fed to the decoder.
void record_embeddings(Trace& trace, const Mat& X, const Mat& Y_in) {
    trace.step("embeddings", "The sentence pair as vectors", "x_j = E_src[w_j],  y_{i-1} = E_tgt[w'_{i-1}]",
               "The same pair as lesson 1: \"turn off the lights\" becomes \"लाइट बंद करो\". Each source word is "
               "a row of d numbers drawn from the seed, and so is each target word the decoder is fed. Training "
               "feeds the reference words (teacher forcing), so the decoder's inputs are <sos>, लाइट and बंद; "
               "the last word, करो, is only ever an output.");
    trace.tensor("X", "x_j, one row per source word", X, source_sentence);
    trace.tensor("Y_in", "y_{i-1}, the word fed in before y_i is emitted", Y_in, decoder_inputs);
}

// Step [encoder]: the annotations H = [H_fwd H_bwd] of the bidirectional GRU over X.
nn::BiGruRun record_encoder(Trace& trace, const GruNames& fwd, const StackedGru& forward, const GruNames& bwd,
                            const StackedGru& backward, const Mat& X) {
    trace.step("encoder", "Annotations: the sentence read in both directions",
               "h_j = [h→_j; h←_j],  h→_j = GRU→(x_j, h→_{j-1}),  h←_j = GRU←(x_j, h←_{j+1})",
               "A forward GRU reads turn → lights and a backward GRU reads lights → turn, both from zero "
               "states (Bahdanau et al. 2015, section 3.2). Row j of H puts the two states of word j side by "
               "side: h_j has seen the whole sentence, but since a recurrent state is dominated by its latest "
               "inputs, it is focused on the words around x_j. Instead of one summary, the decoder will get all "
               "T_x annotations.\n"
               "Each GRU's weights are stored as three stacked blocks, W = [W_z; W_r; W_h] and likewise U and "
               "b, rows labelled by gate: z the update gate, r the reset gate, h~ the candidate, as in lesson 1.");
    record(trace, fwd, forward);
    record(trace, bwd, backward);
    const nn::BiGruRun encoder = nn::bigru_forward(unstacked(forward), unstacked(backward), X);
    trace.tensor("H_fwd", "h→_j, has read x_1 .. x_j", encoder.forward.states, source_sentence);
    trace.tensor("H_bwd", "h←_j, has read x_T .. x_j", encoder.backward.states, source_sentence);
    trace.tensor("H", "h_j = [h→_j; h←_j], T_x x 2u", encoder.annotations, source_sentence);
    return encoder;
}

// Step [decoder-start]: the decoder's weights and s_0 = tanh(W_s h←_1), the state it starts from.
Vec record_decoder_start(Trace& trace, const GruNames& dec, const StackedGru& decoder, const Mat& W_s,
                         const nn::BiGruRun& encoder) {
    const Vec s0 = nn::tanh_each(nn::matvec(W_s, nn::row_of(encoder.backward.states, 0), "W_s h←_1"));
    trace.step("decoder-start", "The decoder and the state it starts from",
               "s_0 = tanh(W_s h←_1),  s_i = GRU([y_{i-1}; c_i], s_{i-1})",
               "The decoder is a GRU of width n whose input is the previous target word next to a context "
               "vector c_i, computed afresh for every word. Bahdanau et al. (2015, appendix A.2.2) give "
               "y_{i-1} and c_i separate weight matrices; one matrix acting on [y_{i-1}; c_i] is the same map. "
               "Their appendix writes the update as (1 - z) * s_{i-1} + z * s~_i; here, as in lesson 1, z "
               "weighs the old state (Cho et al. 2014, eq. 7), which only renames the gate. The first state "
               "comes from h←_1, the backward state that has read the whole sentence.\n"
               "Mind the index: the decoder chooses y_i while it still holds s_{i-1}, so that is the state "
               "the scores compare with the annotations, e_ij = a(s_{i-1}, h_j) (section 3.1). In this ordering, "
               "writing s_i there, or s_{j-1} as some notes do, breaks the order of the computation: s_i needs "
               "c_i. Luong et al. (2015) order it the other way: their decoder computes its state h_t first and "
               "scores with it, then mixes in the context (lesson 3, step [attentional-state]).");
    record(trace, dec, decoder);
    trace.parameter("W_s", "initial-state weights, n x u", W_s);
    trace.tensor("s_0", "s_0 = tanh(W_s h←_1)", s0);
    return s0;
}

// Step [alignment-model]: W_a, U_a and v_a built to realise the planned keys and queries.
AlignmentModel record_alignment_model(Trace& trace, const nn::GruParams& decoder, const Vec& s0, const Mat& Y_in,
                                      const Mat& H, const Mat& Q_plan, const Mat& K_plan, const Vec& v_a) {
    const AlignmentModel model = build_alignment_model(decoder, s0, Y_in, H, Q_plan, K_plan, v_a);
    trace.step("alignment-model", "The alignment model, built by a rule",
               "a(s_{i-1}, h_j) = v_a^T tanh(W_a s_{i-1} + U_a h_j)",
               "Nothing in this lesson is trained. We decide which source word each target word should read "
               "and build that into the alignment model by three rules; the next steps show the plan surviving "
               "the real encoder and decoder. (Bahdanau et al. 2015, figure 3, got such alignments from "
               "training on translation alone; lesson 9, learning-to-align, trains this architecture and "
               "watches its alignment emerge.) The tanh layer gets one feature per source word, d_a = T_x.\n"
               "1. Keys: U_a sends annotation h_j to k_j: 2 on feature j, 0 elsewhere.\n"
               "2. Queries: W_a sends s_{i-1} to q_i, row i of Q_plan. An entry of -1 opens its feature: a "
               "key's +2 then moves tanh from -0.76 to +0.76. An entry of 3 closes it: tanh is already flat "
               "there, and the same +2 adds 0.005. An entry of 0 is half open.\n"
               "3. v_a = 2 for every feature, so a score sums its features.\n"
               "U_a and W_a are the smallest linear maps with these outputs (least squares). W_a is found "
               "before the real run: s_1 and s_2 depend on it only through the queries it produces, which are "
               "planned, so a first run fed Q_plan directly yields the states. A new seed changes every "
               "weight but not the scores: the plan fixes them.");
    trace.tensor("K_plan", "k_j: word j lifts its own feature by 2", K_plan, source_sentence, feature_names);
    trace.tensor("Q_plan", "q_i: -1 opens a feature, 3 closes it, 0 half opens it", Q_plan, target_sentence,
                 feature_names);
    trace.tensor("U_a", "least squares: U_a h_j = k_j,  d_a x 2u", model.U_a, feature_names);
    trace.tensor("W_a", "least squares: W_a s_{i-1} = q_i,  d_a x n", model.W_a, feature_names);
    trace.tensor("v_a", "2 for every feature", model.v_a, feature_names);
    trace.check("U_a h_j equals the planned key k_j for every source word (to 256 eps |U_a| max |h_j|)",
                max_abs_difference(nn::matmul(H, nn::transposed(model.U_a), "H U_a^T"), K_plan),
                solve_tolerance(model.U_a, H));
    return model;
}

// Step [first-word]: query, keys, tanh layer, scores, weights and context of y_1 written out.
void record_first_word(Trace& trace, const DecoderRun& run, const Vec& s0, const Mat& H, const AlignmentModel& model) {
    const ScoreParts first = scores_by_hand(s0, H, model);
    const Mat W_joined = joined_weights(model);
    trace.step("first-word", "The first word, one score at a time",
               "e_1j = v_a^T tanh(W_a s_0 + U_a h_j),  c_1 = sum_j alpha_1j h_j",
               "To emit y_1 the decoder holds s_0. Its query W_a s_0 is computed once per decoder step, each "
               "key U_a h_j once per sentence, as it does not depend on i (Bahdanau et al. 2015, appendix "
               "A.1.2); K's tiny entries, near 1e-16, are rounding from the least-squares solve. Query and key "
               "are added, squashed by tanh and weighed by v_a: one score e_1j per source word. In tanh_1 the "
               "closed features sit at 0.995 or 0.9999 whatever the key; only f_lights, opened by q_1, tells "
               "one word from another. Softmax makes the scores weights that sum to 1, and c_1 is the weighted "
               "sum of the annotations (eq. 5; some notes write h_i inside that sum, but it runs over j). With "
               "W = [W_a U_a] acting on [s_0; h_j] the score takes the concat form of Luong et al. (2015, "
               "section 3.1); the check shows both forms agree.");
    trace.tensor("q_1", "W_a s_0", first.query, feature_names);
    trace.tensor("K", "row j: U_a h_j", first.keys, source_sentence, feature_names);
    trace.tensor("tanh_1", "row j: tanh(W_a s_0 + U_a h_j)", first.hidden, source_sentence, feature_names);
    trace.tensor("e_1", "e_1j = v_a . tanh(W_a s_0 + U_a h_j)", first.scores, source_sentence);
    trace.tensor("alpha_1", "alpha_1j = exp(e_1j) / sum_k exp(e_1k)", nn::row_of(run.weights, 0), source_sentence, {},
                 View::bars);
    trace.tensor("c_1", "c_1 = sum_j alpha_1j h_j", nn::row_of(run.contexts, 0));
    trace.tensor("W", "W = [W_a U_a],  d_a x (n + 2u)", W_joined, feature_names);
    trace.check("the concat form v_a^T tanh(W [s_0; h_j]) equals the split form v_a^T tanh(W_a s_0 + U_a h_j)",
                max_abs_difference(nn::concat_scores(as_row(s0), H, W_joined, model.v_a), as_row(first.scores)),
                1e-12);
}

// Step [decoder]: the decoder inputs and states, and the check that W_a produced the planned queries.
void record_decoder(Trace& trace, const DecoderRun& run, const AlignmentModel& model, const Mat& Q_plan) {
    trace.step("decoder", "The decoder loop: score, weigh, sum, update",
               "s_i = GRU([y_{i-1}; c_i], s_{i-1}),  c_i from e_ij = a(s_{i-1}, h_j)",
               "c_1 goes into the decoder next to y_0 = <sos>, and the GRU update gives s_1, the state that "
               "asks for the second word; then the same again. The scores for word i need s_{i-1}, which needs "
               "c_{i-1}, so the steps run strictly in order, in training too. In lesson 1 every D_in row "
               "carried the same c; now each row carries its own context. The check closes the construction "
               "of step [alignment-model]: the real decoder, using W_a, produces the planned queries, exactly up to "
               "rounding. How much rounding depends on the conditioning: W_a is solved from n-wide states s_0, s_1, "
               "s_2, and when they are close to linearly dependent (likely when n is 4, barely more than 3) W_a "
               "must be large, about |Q_plan| / sigma_min, and rounding in the solve and in W_a s_{i-1} grows "
               "with it, to about n eps |W_a| |s_{i-1}| per entry; the real run feeds that once more through the "
               "decoder. The check allows 256 eps |W_a|_F max |s_{i-1}|: " + fmt::format("{:.3g}", solve_tolerance(model.W_a, run.queries)) +
               " here, with |W_a|_F = " + fmt::format("{:.3g}", std::sqrt(nn::sum_of(Mat(model.W_a * model.W_a)))) + ".");
    trace.tensor("D_in", "row i: [y_{i-1}; c_i]", run.inputs,
                 std::vector<std::string>{"<sos> ; c_1", "लाइट ; c_2", "बंद ; c_3"});
    trace.tensor("S", "s_i = GRU([y_{i-1}; c_i], s_{i-1})", run.states, numbered("s_", 1, target_sentence.size()));
    trace.check("W_a s_{i-1} equals the planned query q_i at every step (to 256 eps |W_a| max |s_{i-1}|)",
                max_abs_difference(nn::matmul(run.queries, nn::transposed(model.W_a), "S_prev W_a^T"), Q_plan),
                solve_tolerance(model.W_a, run.queries));
}

// Step [scores]: E, all T_y x T_x scores in one call, against those of the decoder loop.
Mat record_scores(Trace& trace, const DecoderRun& run, const Mat& H, const AlignmentModel& model) {
    const std::size_t T_x = source_sentence.size(), T_y = target_sentence.size();
    const Mat E = nn::additive_scores(run.queries, H, model.W_a, model.U_a, model.v_a);
    trace.step("scores", "Every score at once", "E = [e_ij],  e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)",
               "The loop could not score all words at once, because s_1 needed c_1 first. Once it has run, "
               "though, the queries s_0 .. s_{T_y-1} are all known, and the scores of every step form one "
               "T_y x T_x matrix, which one call computes and which must agree with the loop. A sentence pair "
               "needs T_x * T_y scores, each through a d_a-wide tanh layer: the cost grows with the product of "
               "the two lengths.");
    trace.tensor("S_prev", "row i: s_{i-1}, the query for y_i", run.queries, numbered("s_", 0, T_y));
    trace.tensor("E", "e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)", E, target_sentence, source_sentence);
    trace.tensor("score_count", "scores computed for this pair", score_count(T_x, T_y),
                 std::vector<std::string>{"T_x", "T_y", "T_x * T_y"});
    trace.check("the matrix of scores equals the scores computed one step at a time",
                max_abs_difference(E, run.scores), 1e-12);
    return E;
}

// Step [weights]: alpha = softmax(E) row by row, and each target word's peak on its planned source word.
Mat record_weights(Trace& trace, const Mat& E, const Mat& Q_plan) {
    const std::size_t T_y = target_sentence.size();
    const std::vector<std::size_t> planned_source = planned_sources(Q_plan);
    const Mat alpha = nn::softmax_rows(E);
    trace.step("weights", "Attention weights: the alignment", "alpha_ij = exp(e_ij) / sum_k exp(e_ik)",
               "Softmax along each row turns scores into weights: positive, summing to 1 per target word. "
               "Adding one number to a whole row of E changes nothing, so only differences within a row "
               "matter; the closed features add almost the same to every column. Read the heatmap by rows: "
               "लाइट looks at \"lights\", बंद at \"off\" and a little at \"turn\", करो at \"turn\". Hindi puts "
               "the object before the verb, so the peaks run right to left across the English, which no "
               "single fixed context could give. This is the alignment built into W_a and U_a, reached "
               "through the real encoder and decoder.");
    trace.tensor("alpha", "alpha = softmax(E) along each row", alpha, target_sentence, source_sentence,
                 View::heatmap).axes("target word", "source word");
    trace.check("no attention weight is negative", negativity(alpha), 0.0);
    trace.check("every row of alpha sums to 1", row_sum_error(alpha), 1e-12);
    for (std::size_t i = 0; i < T_y; ++i)
        trace.check(target_sentence[i] + " gives its largest weight to \"" + source_sentence[planned_source[i]] +
                        "\"",
                    misaligned(alpha, i, planned_source[i]), 0.0);
    return alpha;
}

// Step [context]: C = alpha H, every context at once, against the decoder loop's.
void record_context(Trace& trace, const Mat& alpha, const Mat& H, const DecoderRun& run) {
    const Mat C = nn::context_vectors(alpha, H);
    trace.step("context", "Context vectors: one per target word", "c_i = sum_j alpha_ij h_j,  C = alpha H",
               "Each context is a weighted average of the annotations. Because the weights are non-negative "
               "and sum to 1 it is a convex combination: every coordinate of c_i lies between the smallest and "
               "the largest value of that coordinate over the h_j. All T_y contexts at once are one matrix "
               "product, alpha H, which must equal the loop over j that the decoder ran. This is what the "
               "decoder gains over lesson 1: a summary of the sentence made for each word it writes.");
    trace.tensor("C", "c_i = sum_j alpha_ij h_j", C, numbered("c_", 1, target_sentence.size()));
    trace.check("the matrix form alpha H equals the loop sum_j alpha_ij h_j", max_abs_difference(C, run.contexts),
                1e-12);
    trace.check("every c_i lies within the range of the annotations, coordinate by coordinate",
                outside_annotation_range(C, H), 1e-12);
}

// ---------------------------------------------------------------- many-to-one (step [many-to-one])

// The second pair, from Chakraborty's lecture on attention in seq2seq models: four French words for
// six English ones, the last of which, "entarté" (pied), carries four English words at once.
const std::vector<std::string> pie_source = {"he", "hit", "me", "with", "a", "pie"};
const std::vector<std::string> pie_target = {"il", "a", "m'", "entarté"};
// The English words each French word translates (0-based): the auxiliary "a" carries the past
// tense of "hit"; "entarté" is "hit with a pie".
const std::vector<std::vector<std::size_t>> pie_partners = {{0}, {1}, {2}, {1, 3, 4, 5}};

// Keys and queries by the rule of step [alignment-model]: key j lifts feature j, and a query opens
// the features of its partners and closes the others. Nothing is drawn; --input may replace both.
Mat pie_keys() { return key_height * xt::eye<double>(pie_source.size()); }
Mat pie_queries() {
    Mat Q = closed * xt::ones<double>({pie_target.size(), pie_source.size()});
    for (std::size_t i = 0; i < pie_target.size(); ++i)
        for (std::size_t j : pie_partners[i]) Q(i, j) = open;
    return Q;
}

// The weight row i gives to its partners together.
double partner_mass(const Mat& alpha, std::size_t i) {
    double mass = 0.0;
    for (std::size_t j : pie_partners[i]) mass += alpha(i, j);
    return mass;
}

// Step [many-to-one]: one target word aligned to four source words at once.
void record_many_to_one(Trace& trace, const Mat& K_pie, const Mat& Q_pie, double v_entry) {
    const Mat E = nn::additive_scores_projected(Q_pie, K_pie, Vec(v_entry * nn::ones(K_pie.shape(1))));
    const Mat alpha = nn::softmax_rows(E);
    const std::size_t last = pie_target.size() - 1;
    const Vec last_row = nn::row_of(alpha, last);
    const double largest = *std::max_element(last_row.begin(), last_row.end());
    trace.step("many-to-one", "Many source words, one target word",
               "alpha_ij = softmax_j(v^T tanh(q_i + k_j)),  entarté: q opens hit, with, a, pie",
               fmt::format(
                   "A hard alignment links each target word to one source word. \"He hit me with a pie\" is "
                   "\"il a m' entarté\" in French (the pair from Chakraborty's lecture on attention in seq2seq models): "
                   "\"entarté\" means \"hit with a pie\", four English words in one. Bahdanau et al. (2015, "
                   "section 5.2.1) make this point with \"the man\" -> \"l' homme\": soft alignment lets a "
                   "target word draw on several source words at once. Keys and queries are built by the rule "
                   "of step [alignment-model] with v = {} for every feature, but here straight into the scores, "
                   "without the encoder and decoder: the query of \"entarté\" opens four features at once, "
                   "so four words share its weight almost evenly (the largest single weight is {:.3f}), and "
                   "\"hit\" is read twice, by \"a\", which carries its past tense, and by \"entarté\". "
                   "\"m'\" comes before the verb in French, so the alignment crosses again. Lesson 9 learns "
                   "such a many-to-one alignment (\"pick up\" -> \"uthao\") from data.",
                   v_entry, largest));
    trace.tensor("K_pie", "k_j: word j lifts its own feature by 2", K_pie, pie_source,
                 prefixed("f_", pie_source));
    trace.tensor("Q_pie", "q_i: -1 opens the features of i's partners, 3 closes the others", Q_pie, pie_target,
                 prefixed("f_", pie_source));
    trace.tensor("E_pie", "e_ij = v^T tanh(q_i + k_j)", E, pie_target, pie_source);
    trace.tensor("alpha_pie", "softmax of E_pie along each row", alpha, pie_target, pie_source, View::heatmap).axes("French word", "English word");
    trace.check("every row of alpha_pie sums to 1", row_sum_error(alpha), 1e-12);
    for (std::size_t i = 0; i < last; ++i)
        trace.check(pie_target[i] + " gives its largest weight to \"" + pie_source[pie_partners[i][0]] + "\"",
                    misaligned(alpha, i, pie_partners[i][0]), 0.0);
    // measured 0.976 and 0.244 at the lesson's levels; the checks leave room for --input plans
    trace.check("entarté gives at least 9/10 of its weight to hit, with, a and pie together",
                std::max(0.0, 0.9 - partner_mass(alpha, last)), 0.0);
    trace.check("no single English word gets more than a third of entarté's weight: no hard alignment fits",
                std::max(0.0, largest - 1.0 / 3.0), 0.0);
}

void lesson_additive(Trace& trace, const Config& config) {
    const std::size_t d = config.size(param::d), u = config.size(param::u), n = config.size(param::n);
    const std::size_t T_x = source_sentence.size(), T_y = target_sentence.size();
    Rng rng(config.seed);
    // attn run --input may replace any of these with the user's own (same shapes)
    const Mat X = trace.input("X", rng.normal_mat(T_x, d));
    const Mat Y_in = trace.input("Y_in", rng.normal_mat(T_y, d));
    const GruNames fwd = gru_names("fwd", "x_j"), bwd = gru_names("bwd", "x_j");
    const GruNames dec = gru_names("dec", "[y_{i-1}; c_i]");
    const StackedGru forward = drawn_gru(trace, rng, fwd, d, u);
    const StackedGru backward = drawn_gru(trace, rng, bwd, d, u);
    const StackedGru decoder = drawn_gru(trace, rng, dec, d + 2 * u, n);
    const Mat W_s = trace.input("W_s", rng.normal_mat(n, u, 1.0 / std::sqrt(static_cast<double>(u))));
    // the plan of step [alignment-model] is built by rule, not drawn; it can be replaced too
    const Mat K_plan = trace.input("K_plan", planned_keys());
    const Mat Q_plan = trace.input("Q_plan", planned_queries());
    const Vec v_a = trace.input("v_a", Vec(score_scale * nn::ones(T_x)));

    record_embeddings(trace, X, Y_in);
    const nn::BiGruRun encoder = record_encoder(trace, fwd, forward, bwd, backward, X);
    const Mat& H = encoder.annotations;
    const nn::GruParams decoder_gru = unstacked(decoder);
    const Vec s0 = record_decoder_start(trace, dec, decoder, W_s, encoder);
    const AlignmentModel model = record_alignment_model(trace, decoder_gru, s0, Y_in, H, Q_plan, K_plan, v_a);
    const DecoderRun run = decode_with(model, decoder_gru, s0, Y_in, H);
    record_first_word(trace, run, s0, H, model);
    record_decoder(trace, run, model, Q_plan);
    const Mat E = record_scores(trace, run, H, model);
    const Mat alpha = record_weights(trace, E, Q_plan);
    record_context(trace, alpha, H, run);
    record_many_to_one(trace, trace.input("K_pie", pie_keys()), trace.input("Q_pie", pie_queries()), score_scale);
}

}  // namespace
}  // namespace additive

Lesson additive_lesson() {
    using namespace additive;
    return make_lesson(2, "additive", "Additive attention: a context for every word", "Bahdanau et al. 2015",
                       {param::d, param::n, param::u}, limits, time_estimate, lesson_additive,
                       {"embeddings", "encoder", "decoder-start", "alignment-model", "first-word", "decoder",
                        "scores", "weights", "context", "many-to-one"});
}

}  // namespace attn
