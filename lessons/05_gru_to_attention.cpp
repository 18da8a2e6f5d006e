// Lesson 5: from a GRU to a self-attention layer, removing one dependency at a time
// (Cho et al. 2014; Vaswani et al. 2017).
// T = tokens, d = width of inputs, states and layer outputs, N = heads, d_h = d / N = width of
// one head, d_ff = hidden width of the feed-forward network, V = vocabulary size.
#include "registry.hpp"
#include "gru.hpp"
#include "support.hpp"

#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/positional.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/self_attention.hpp"
#include "nn/unroll.hpp"

#include <fmt/format.h>
#include <xtensor/xbuilder.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace attn {

namespace gru_to_attention {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d{"d", 4, 2, 256,
              "width of the inputs, the states and the layer outputs; even, for the sinusoidal positions"};
const Param heads{"heads", 2, 2, 64, "attention heads; at least 2, to split, and must divide d"};
const Param d_ff{"d_ff", 8, 1, 1024, "hidden width of the feed-forward network"};
}  // namespace param

std::string limits(const Config& c) {
    if (auto why = even(c, param::d); !why.empty()) return why;
    if (auto why = divisible(c, param::d, param::heads, 2); !why.empty()) return why;
    const double d = as_double(c.size(param::d));
    return memory_limit(40.0 * d * std::max(d, as_double(c.size(param::d_ff))), "lesson 5");
}

// Seconds per unit of d (d + d_ff / 4): d=256 took 0.46 to 0.75 s and d=256 with d_ff=1024 0.49 s on
// this project's 2-core machine at a load of 4.9 to 6.1 (1.1e-5 s per d^2); 2.5e-5 on the safe side,
// and half a second for the rest. No setting in range comes near the cap.
TimeEstimate time_estimate(const Config& c) {
    const double d = as_double(c.size(param::d)), d_ff = as_double(c.size(param::d_ff));
    return {0.5 + 2.5e-5 * d * (d + d_ff / 4.0), "lesson 5",
            fmt::format("d (d + d_ff / 4) = {:.3g}", d * (d + d_ff / 4.0)),
            {{&param::d, 2.0}, {&param::d_ff, 1.0}}};
}


const std::vector<std::string> vocabulary = {"the", "cat", "sat", "on", "mat"};
const std::vector<std::size_t> sentence_ids = {0, 1, 2, 3, 0, 4};  // "the cat sat on the mat"
constexpr std::size_t first_the = 0, second_the = 4;               // x_1 = x_5
constexpr double update_bias = 1.0;       // u near sigmoid(1) = 0.73: about three quarters kept per step
constexpr double reset_open_bias = 40.0;  // sigmoid(40) = 1 - 4e-18, which rounds to exactly 1
constexpr double nudge = 0.5;             // the dependency probe adds this to every entry of one x_j
constexpr double moved = 1e-12;           // an output that changes by more than this depends on the probe
// A difference far beyond rounding (which stays below 1e-15 here). How far beyond depends on the
// weights: at d = 2 splitting into 2 heads can move the output by less than 0.01, so a larger bound
// would claim what the seed decides, not what the stages do.
constexpr double clear_gap = 1e-9;

using Layer = std::function<Mat(const Mat&)>;

Vec as_vec(const std::vector<double>& values) {
    Vec out = xt::empty<double>({values.size()});
    std::copy(values.begin(), values.end(), out.begin());
    return out;
}

std::vector<std::string> token_labels(const std::vector<std::size_t>& order) {
    std::vector<std::string> out;
    for (const auto i : order) out.push_back("x_" + std::to_string(i + 1) + " " + vocabulary[sentence_ids[i]]);
    return out;
}

// "h_0", "h~_1" .. "h~_T": what the columns of the unrolled weights multiply.
std::vector<std::string> unrolled_columns(std::size_t T) {
    std::vector<std::string> out = {"h_0"};
    for (const auto& label : numbered("h~_", 1, T)) out.push_back(label);
    return out;
}

// Labels of a concatenation of heads: "1.k" is feature k of head 1.
std::vector<std::string> head_features(std::size_t heads, std::size_t d_h) {
    std::vector<std::string> out;
    for (std::size_t n = 1; n <= heads; ++n)
        for (std::size_t k = 1; k <= d_h; ++k) out.push_back(std::to_string(n) + "." + std::to_string(k));
    return out;
}

// The GRU's weights, stacked by gate as [W_u; W_r; W] (the update gate is u here, and the
// candidate's weights bare, as in the stages below), recorded and replaceable as W, U and b.
GruNames stacked_names() {
    GruNames names{"W", "U", "b"};
    names.subscripts = {"u", "r", ""};
    names.row_letters = {"u", "r", "h~"};
    names.state = "h_{t-1}";
    return names;
}

// The query, key and value maps, d x d each; head n of N uses rows n d_h .. (n + 1) d_h - 1.
struct Maps {
    Mat W_Q, W_K, W_V;
};

// Everything the lesson draws from the seed, in drawing order.
struct Parameters {
    Mat E;                  // V x d embedding table
    Vec h0;                 // d, the GRU's initial state
    StackedGru gru;         // 3d x d, 3d x d and 3d, stacked by gate [u; r; h~]
    Mat F;                  // d x d, f(x) = F x
    Maps maps;              // stages 4 to 8
    nn::FeedForward g;      // stage 8
};

// Variance 1/fan_in keeps every pre-activation near unit scale.
Parameters draw_parameters(Rng& rng, std::size_t d, std::size_t d_ff) {
    const double s = 1.0 / std::sqrt(as_double(d));
    Parameters p;
    p.E = rng.normal_mat(vocabulary.size(), d);
    p.h0 = rng.normal_vec(d, 0.5);
    p.gru = stacked(draw_gru(rng, d, d, fan_in_init(GruInit::Order::stacked, d, d, 0.5, update_bias)));
    p.F = rng.normal_mat(d, d, s);
    p.maps = {rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s)};
    p.g = {rng.normal_mat(d_ff, d, s), rng.normal_vec(d_ff, 0.1),
           rng.normal_mat(d, d_ff, 1.0 / std::sqrt(as_double(d_ff))), rng.normal_vec(d, 0.1)};
    return p;
}

// The drawn parameters, each replaceable by --input under the name it is recorded with.
Parameters supplied_parameters(Trace& trace, Parameters p) {
    p.E = trace.input("E", p.E);
    p.gru = supplied(trace, stacked_names(), p.gru);
    p.h0 = trace.input("h_0", p.h0);
    p.F = trace.input("F", p.F);
    p.maps.W_Q = trace.input("W_Q", p.maps.W_Q);
    p.maps.W_K = trace.input("W_K", p.maps.W_K);
    p.maps.W_V = trace.input("W_V", p.maps.W_V);
    p.g.W_1 = trace.input("W_1", p.g.W_1);
    p.g.b_1 = trace.input("b_1", p.g.b_1);
    p.g.W_2 = trace.input("W_2", p.g.W_2);
    p.g.b_2 = trace.input("b_2", p.g.b_2);
    return p;
}

nn::GruParams full_gru(const Parameters& p) { return unstacked(p.gru); }

// The same GRU with the reset gate saturated open: W_r = 0, U_r = 0, b_r = 40, so r_t = 1.
nn::GruParams reset_held_open(const Parameters& p) {
    nn::GruParams open = full_gru(p);
    open.W_r.fill(0.0);
    open.U_r.fill(0.0);
    open.b_r.fill(reset_open_bias);
    return open;
}

nn::UpdateOnlyGru update_only_gru(const Parameters& p) {
    const nn::GruParams g = full_gru(p);
    return {g.W_z, g.U_z, g.b_z, {g.W_h, g.U_h, g.b_h}};
}

// How far any feature of h_t lies outside the interval between h_{t-1} and h~_t (0 when none does).
double outside_interpolation(const Mat& states, const Mat& candidates, const Vec& h0) {
    double worst = 0.0;
    for (std::size_t t = 0; t < states.shape(0); ++t)
        for (std::size_t k = 0; k < states.shape(1); ++k) {
            const double previous = t == 0 ? h0(k) : states(t - 1, k);
            const double lo = std::min(previous, candidates(t, k)), hi = std::max(previous, candidates(t, k));
            worst = std::max({worst, lo - states(t, k), states(t, k) - hi});
        }
    return worst;
}

Mat feature_weights(const nn::Tensor3& a, std::size_t k) { return nn::slice_of(a, k); }

// Row t, column f: max over features of |h_t from closed form f - h_t from the recursion|.
Mat errors_per_step(const Mat& states, const std::vector<Mat>& closed_forms) {
    Mat out = xt::empty<double>({states.shape(0), closed_forms.size()});
    for (std::size_t f = 0; f < closed_forms.size(); ++f)
        nn::set_column(out, f, nn::row_max_abs_differences(closed_forms[f], states));
    return out;
}

// Row t, column f: sum_i a_{t,i} of feature 1 for each set of weights.
Mat first_feature_row_sums(const std::vector<nn::Tensor3>& weights) {
    Mat out = xt::empty<double>({weights.front().shape(1), weights.size()});
    for (std::size_t f = 0; f < weights.size(); ++f)
        nn::set_column(out, f, nn::row_sums(feature_weights(weights[f], 0)));
    return out;
}

// How far `value` falls short of `floor`: the error of a claim "value >= floor" (0 when it holds).
double shortfall(double value, double floor) { return std::max(0.0, floor - value); }

// Entry (t, j) is 1 when nudging every entry of x_j by 0.5 moves h_t by more than 1e-12, else 0.
Mat measured_dependency(const Layer& layer, const Mat& X) {
    const Mat base = layer(X);
    Mat dependency = nn::zeros(base.shape(0), X.shape(0));
    for (std::size_t j = 0; j < X.shape(0); ++j) {
        Mat probe = X;
        nn::set_row(probe, j, nn::row_of(probe, j) + nudge);
        const Vec largest = nn::row_max_abs_differences(layer(probe), base);
        for (std::size_t t = 0; t < base.shape(0); ++t) dependency(t, j) = largest(t) > moved ? 1.0 : 0.0;
    }
    return dependency;
}

// The largest entry above the diagonal of a dependency table: 0 when no h_t depends on a later x_j.
double reads_later_inputs(const Mat& dependency) {
    double worst = 0.0;
    for (std::size_t t = 0; t < dependency.shape(0); ++t)
        for (std::size_t j = t + 1; j < dependency.shape(1); ++j) worst = std::max(worst, dependency(t, j));
    return worst;
}

// The largest entry off the diagonal: 0 when output t depends on input row t alone.
double reads_other_rows(const Mat& dependency) {
    double worst = 0.0;
    for (std::size_t t = 0; t < dependency.shape(0); ++t)
        for (std::size_t j = 0; j < dependency.shape(1); ++j)
            if (j != t) worst = std::max(worst, dependency(t, j));
    return worst;
}

Mat full_pattern(std::size_t T) { return nn::ones(T, T); }

// max |layer(x_T .. x_1) - layer(x_1 .. x_T) read backwards|: 0 when reversing the input only
// reverses the output, i.e. when the layer cannot tell the order of its inputs.
double reversal_gap(const Layer& layer, const Mat& X) {
    const auto order = nn::descending_indices(X.shape(0));
    return max_abs_difference(layer(nn::gather_rows(X, order)), nn::gather_rows(layer(X), order));
}

// max_k |H(a, k) - H(b, k)|: how different the outputs at two positions are.
double row_gap(const Mat& H, std::size_t a, std::size_t b) {
    return max_abs_difference(nn::row_of(H, a), nn::row_of(H, b));
}

// Stage 2 after the fact: all T rows of weights from the recorded candidates in one masked
// softmax, alpha = softmax(X H~^T / sqrt(d) + M).
Mat weights_from_candidates(const Mat& X, const Mat& candidates) {
    const Mat scores = nn::matmul(X, nn::transposed(candidates), "X H~^T") / std::sqrt(as_double(X.shape(1)));
    return nn::masked_softmax(scores, nn::causal_mask(X.shape(0)));
}

// z_i = f(x_i) = F x_i, plus the sinusoidal p(i) when `positions`.
Mat attention_inputs(const Mat& F, const Mat& X, bool positions) {
    Mat Z = nn::matmul(X, nn::transposed(F), "X F^T");
    if (positions) Z += nn::sinusoidal_encoding(X.shape(0), X.shape(1));
    return Z;
}

struct Projections {
    Mat Q, K, V;
};

// q_i = W_Q z_i, k_i = W_K z_i, v_i = W_V z_i for every row z_i of Z.
Projections project(const Mat& Z, const Maps& m) {
    return {nn::matmul(Z, nn::transposed(m.W_Q), "Z W_Q^T"), nn::matmul(Z, nn::transposed(m.W_K), "Z W_K^T"),
            nn::matmul(Z, nn::transposed(m.W_V), "Z W_V^T")};
}

nn::AttentionResult attend(const Projections& p, nn::Span span) {
    return span == nn::Span::causal ? nn::scaled_dot_product_attention(p.Q, p.K, p.V, nn::causal_mask(p.Q.shape(0)))
                                    : nn::scaled_dot_product_attention(p.Q, p.K, p.V);
}

// Rows n d_h .. (n + 1) d_h - 1 of each map: head n's own maps.
Maps head_maps(const Maps& m, std::size_t n, std::size_t heads) {
    const std::size_t d_h = m.W_Q.shape(0) / heads;
    const std::size_t first = n * d_h, last = (n + 1) * d_h;
    return {nn::rows_of(m.W_Q, first, last), nn::rows_of(m.W_K, first, last), nn::rows_of(m.W_V, first, last)};
}

struct HeadsRun {
    Array weights;  // N x T x T, [n] is head n's alpha
    Mat H;          // T x d, [h^1 .. h^N]
};

// Matrix form: one scaled_dot_product_attention call per head, outputs side by side.
HeadsRun concatenated_heads(const Mat& Z, const Maps& m, std::size_t heads, nn::Span span) {
    const std::size_t T = Z.shape(0), d_h = m.W_V.shape(0) / heads;
    HeadsRun run{xt::empty<double>({heads, T, T}), xt::empty<double>({T, heads * d_h})};
    for (std::size_t n = 0; n < heads; ++n) {
        const nn::AttentionResult head = attend(project(Z, head_maps(m, n, heads)), span);
        nn::set_slice(run.weights, n, head.weights);
        nn::set_columns(run.H, n * d_h, head.output);
    }
    return run;
}

// Loop form, built another way: project with the whole maps, then give head n columns
// n d_h .. (n + 1) d_h - 1 of Q, K and V and attend position by position.
Mat concatenated_heads_by_positions(const Mat& Z, const Maps& m, std::size_t heads, nn::Span span) {
    const Projections all = project(Z, m);
    const std::size_t d_h = all.V.shape(1) / heads;
    Mat H = xt::empty<double>({Z.shape(0), all.V.shape(1)});
    for (std::size_t n = 0; n < heads; ++n) {
        const std::size_t first = n * d_h, last = (n + 1) * d_h;
        const Mat Q = nn::columns_of(all.Q, first, last), K = nn::columns_of(all.K, first, last);
        const Mat V = nn::columns_of(all.V, first, last);
        nn::set_columns(H, first, nn::attention_by_positions(Q, K, V, span));
    }
    return H;
}

// Each row on its own through g: a 1 x d matrix at a time.
Mat feed_forward_row_by_row(const nn::FeedForward& g, const Mat& H) {
    Mat out = xt::empty<double>({H.shape(0), g.W_2.shape(0)});
    for (std::size_t t = 0; t < H.shape(0); ++t) {
        const Mat row = nn::rows_of(H, t, t + 1);
        nn::set_row(out, t, nn::row_of(nn::position_wise_feed_forward(g, row), 0));
    }
    return out;
}

// The stages as functions of the inputs X, for the dependency and reversal probes.
Layer gru_layer(const nn::UpdateOnlyGru& gru, const Vec& h0) {
    return [gru, h0](const Mat& X) { return nn::update_only_gru_forward(gru, X, h0).states; };
}

Layer candidate_attention_layer(const nn::CandidateParams& candidate, const Vec& h0) {
    return [candidate, h0](const Mat& X) { return nn::candidate_attention_forward(candidate, X, h0).states; };
}

Layer tied_attention_layer(const Mat& F) {
    return [F](const Mat& X) {
        const Mat Z = attention_inputs(F, X, false);
        return attend({Z, Z, Z}, nn::Span::causal).output;
    };
}

Layer single_head_layer(const Mat& F, const Maps& m) {
    return [F, m](const Mat& X) { return attend(project(attention_inputs(F, X, false), m), nn::Span::causal).output; };
}

Layer heads_layer(const Mat& F, const Maps& m, std::size_t heads, nn::Span span, bool positions) {
    return [=](const Mat& X) { return concatenated_heads(attention_inputs(F, X, positions), m, heads, span).H; };
}

Layer full_layer(const Layer& attention, const nn::FeedForward& g) {
    return [attention, g](const Mat& X) { return nn::position_wise_feed_forward(g, attention(X)); };
}

// The probe of g alone: rows of its input are nudged directly.
Layer feed_forward_layer(const nn::FeedForward& g) {
    return [g](const Mat& H) { return nn::position_wise_feed_forward(g, H); };
}

// The stages' labels; stage 5's says how many heads it has ("5 two heads" by default).
std::vector<std::string> stage_names(std::size_t heads) {
    static const char* const words[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
    const std::string count = heads < 10 ? words[heads] : std::to_string(heads);
    return {"0 GRU", "2 softmax weights", "3 f(x) candidates", "4 Q, K, V", "5 " + count + " heads",
            "6 non-causal", "7 positions", "8 feed-forward"};
}

// One row per stage: sequential steps (T while a state is carried, then 1) and inputs h_1 reads.
Mat recap_counts(const std::vector<Mat>& dependencies, std::size_t T) {
    Mat out = xt::empty<double>({dependencies.size(), std::size_t{2}});
    for (std::size_t s = 0; s < dependencies.size(); ++s) {
        out(s, 0) = s < 2 ? as_double(T) : 1.0;
        out(s, 1) = nn::sum_of(nn::row_of(dependencies[s], 0));
    }
    return out;
}

// Row and column labels the stages share: "x_1 the" .. for tokens, h_t for outputs, x_j for inputs.
struct Labels {
    std::vector<std::string> tokens, states, inputs;
};

// What the recap reads of every stage, one entry per stage in order: which inputs each output
// reads, and how far reversing the input is from reversing the output.
struct StageProbes {
    std::vector<Mat> dependencies;
    std::vector<double> gaps;
};

// Measures `layer` as the next stage of the recap.
void probe_stage(StageProbes& probes, const Layer& layer, const Mat& X) {
    probes.dependencies.push_back(measured_dependency(layer, X));
    probes.gaps.push_back(reversal_gap(layer, X));
}

// Step [tokens]: X, the embeddings of the six tokens every stage reads.
Mat record_tokens(Trace& trace, const Parameters& p, const Labels& labels) {
    trace.step("tokens", "Six tokens", "x_i = E[w_i],  i = 1 .. T",
               "Every stage of this lesson reads the same six tokens, \"the cat sat on the mat\", each a row of an "
               "embedding table E drawn from the seed. Nothing is trained: the lesson is about which quantity depends "
               "on which, and every such claim is measured. The word \"the\" occurs twice, so x_1 = x_5; keep an eye "
               "on that pair, it will show when a layer has lost track of order.\n"
               "The notation follows a popular write-up that walks from a GRU to the Transformer one freed dependency "
               "at a time: u_t is the update gate, h~_t the candidate, h_t the state at position t.");
    trace.tensor("E", "embedding table, V x d, entries N(0, 1)", p.E, vocabulary);
    const Mat X = nn::gather_rows(p.E, sentence_ids);
    trace.tensor("X", "x_i = E[w_i], one row per token", X, labels.tokens);
    return X;
}

// Step [gru]: the full GRU, reset gate included, whose update stays between h_{t-1} and h~_t.
void record_full_gru(Trace& trace, const Parameters& p, const Mat& X, const Labels& labels) {
    const std::size_t T = X.shape(0);
    const nn::GruRun full = nn::gru_forward(full_gru(p), X, p.h0);
    trace.step("gru", "Stage 0 · The GRU's additive update",
               "h_t = u_t*h_{t-1} + (1-u_t)*h~_t,  h~_t = tanh(W x_t + U (r_t*h_{t-1}) + b)",
               "A GRU carries a state h_t and updates it feature by feature (Cho et al. 2014, eqs. 5-8). The update "
               "gate u_t = sigmoid(W_u x_t + U_u h_{t-1} + b_u) decides how much of each feature of the old state "
               "survives; the rest is filled from the candidate h~_t. The reset gate r_t, built the same way, decides "
               "how much of h_{t-1} the candidate may see. The update is additive: h_t always lies between h_{t-1} "
               "and h~_t, feature by feature, as the check confirms. It is also a shortcut: h_{t-1} reaches h_t through "
               "a product with u_t and nothing else, no matrix and no squashing, much like the identity connection "
               "of a residual network (He et al. 2016, ResNet), except that a gate weighs it; where u_t is near 1 a "
               "gradient passes back along it almost unchanged (lesson 8 follows one back to the first word; lesson 11's "
               "step [residual] measures the Transformer's ungated version of the same road).\n"
               "Cho et al. call the update gate z. PyTorch's nn.GRUCell writes h' = (1 - z) * n + z * h with n the "
               "candidate: the same convention, z = u and n = h~. (PyTorch applies r after the matrix product, n = "
               "tanh(W_in x + b_in + r * (W_hn h + b_hn)); the difference disappears once r is dropped.) The write-up "
               "also writes h_t = u_t * h~_t + (1 - u_t) * h_{t-1} in one place, which swaps the roles (its u is our "
               "1 - u), and feeds x_{t-1} to the gate; the gate reads x_t.\n"
               "The weights are stacked by gate, W = [W_u; W_r; W], likewise U and b. The update-gate biases are "
               "raised by 1, so the GRU keeps roughly three quarters of each feature per step. h_0 is not zero (think "
               "of a state left by an earlier sentence), so every formula below must account for it.");
    record(trace, stacked_names(), p.gru);
    trace.tensor("h_0", "the initial state, entries N(0, 0.25)", p.h0);
    trace.tensor("R", "r_t = sigmoid(W_r x_t + U_r h_{t-1} + b_r)", full.reset_gates, numbered("r_", 1, T));
    trace.tensor("H_gru", "h_t of the full GRU", full.states, labels.states);
    trace.check("every feature of h_t lies between those of h_{t-1} and h~_t",
                outside_interpolation(full.states, full.candidates, p.h0), 0.0);
}

// Step [no-reset]: stage 0, the GRU without its reset gate, and what each of its states reads.
nn::UpdateOnlyRun record_update_only_gru(Trace& trace, const Parameters& p, const nn::UpdateOnlyGru& gru, const Mat& X,
                                         const Labels& labels, StageProbes& probes) {
    const std::size_t T = X.shape(0);
    const nn::UpdateOnlyRun run = nn::update_only_gru_forward(gru, X, p.h0);
    probe_stage(probes, gru_layer(gru, p.h0), X);
    trace.step("no-reset", "Stage 0 · Dropping the reset gate",
               "h~_t = tanh(W x_t + U h_{t-1} + b):  r_t = 1, the rest as in step [gru]",
               "The derivation drops the reset gate to keep the algebra short: r_t = 1, so the candidate sees all of "
               "h_{t-1}. This is a simplification, not an identity: the states below differ from H_gru. What the "
               "argument needs survives: the additive update. The check runs the full GRU with its reset gate held "
               "open (W_r = 0, U_r = 0, b_r = 40; sigmoid(40) rounds to exactly 1) and gets the same states.\n"
               "The dependency table is measured, not asserted: add 0.5 to every entry of one input x_j, rerun, and "
               "mark 1 where h_t moved. h_t depends on x_1 .. x_t and on nothing later. It reaches x_1 only through "
               "h_1, h_2, ..., h_{t-1}: T steps that must run one after another.");
    trace.tensor("U_gates", "u_t, one row per step", run.update_gates, numbered("u_", 1, T));
    trace.tensor("H_cand", "h~_t = tanh(W x_t + U h_{t-1} + b)", run.candidates, numbered("h~_", 1, T));
    trace.tensor("H", "h_t = u_t * h_{t-1} + (1 - u_t) * h~_t", run.states, labels.states);
    trace.tensor("D_0", "1 where nudging x_j moves h_t", probes.dependencies.back(), labels.states, labels.inputs);
    trace.check("nn::gru_forward with the reset gate held open gives the same states",
                max_abs_difference(nn::gru_forward(reset_held_open(p), X, p.h0).states, run.states), 1e-12);
    trace.check("no h_t depends on a later input x_j, j > t", reads_later_inputs(probes.dependencies.back()), 0.0);
    return run;
}

// The unrolled weights A of stage 1 and the states they rebuild, for the wrong forms to be compared with.
struct Unrolled {
    nn::Tensor3 A;
    Mat H_closed;
};

// Step [unroll]: stage 1, h_t as a weighted sum of h_0 and the candidates.
Unrolled record_unrolled_weights(Trace& trace, const Parameters& p, const nn::UpdateOnlyRun& run,
                                 const Labels& labels) {
    const std::size_t T = run.states.shape(0);
    const nn::Tensor3 A = nn::unrolled_weights(run.update_gates);
    const Mat H_closed = nn::weighted_states(A, p.h0, run.candidates);
    trace.step("unroll", "Stage 1 · Unrolled into a weighted sum",
               "h_t = (prod_{j=1..t} u_j) h_0 + sum_{i<=t} (1-u_i)(prod_{j=i+1..t} u_j) h~_i",
               "Substitute h_{t-1} into h_t, then h_{t-2}, down to h_0. Every step multiplies everything already in "
               "the state by u_t and adds (1 - u_t) * h~_t. So h~_i enters once, with the factor 1 - u_i of the step "
               "that wrote it, and is then multiplied by the gate of every later step, u_{i+1} .. u_t; h_0 is "
               "multiplied by all t gates. For i = t the product is empty and equals 1.\n"
               "A_k holds these weights for feature k: row t, column h_0 or h~_i. It is lower triangular, and there "
               "is one such matrix per feature because the gates act feature by feature (features 1 and 2 are shown; "
               "the checks cover all d). The first check rebuilds every h_t from the weights and the candidates. The "
               "second shows each row sums to 1: the products telescope, (1 - u_t) + u_t (1 - u_{t-1}) + ... + u_t "
               "... u_1 = 1. So h_t is a weighted average of h_0 and the candidates so far, with non-negative weights "
               "that sum to 1, which is exactly what a softmax produces.");
    const auto columns = unrolled_columns(T);
    trace.tensor("A_1", "a_{t,i} of feature 1; row t, column h_0 or h~_i", feature_weights(A, 0), labels.states,
                 columns, View::heatmap).axes("step t", "h_0 or candidate h~_i");
    trace.tensor("A_2", "a_{t,i} of feature 2", feature_weights(A, 1), labels.states, columns);
    trace.check("for every t and feature, the closed form equals the recursion",
                max_abs_difference(H_closed, run.states), 1e-12);
    trace.check("for every t and feature, the weights sum to 1", row_sum_error(A), 1e-12);
    return {A, H_closed};
}

// Step [wrong-range]: the write-up's closed form and an off-by-one one, against the corrected form.
void record_wrong_closed_forms(Trace& trace, const Parameters& p, const nn::UpdateOnlyRun& run,
                               const Unrolled& unrolled, const Labels& labels) {
    const nn::Tensor3& A = unrolled.A;
    const Mat& H_closed = unrolled.H_closed;
    const auto columns = unrolled_columns(run.states.shape(0));
    const nn::Tensor3 A_wrong = nn::write_up_unrolled_weights(run.update_gates);
    const nn::Tensor3 A_early = nn::off_by_one_unrolled_weights(run.update_gates);
    const Mat errors = errors_per_step(run.states, {H_closed, nn::weighted_states(A_wrong, p.h0, run.candidates),
                                                    nn::weighted_states(A_early, p.h0, run.candidates)});
    const std::vector<std::string> forms = {"corrected", "write-up", "from j=i"};
    trace.step("wrong-range", "Stage 1 · A wrong closed form",
               "h_t ≠ sum_{i<=t} (prod_{j=1..t-i+1} u_j)(prod_{k=1..i-1} (1-u_k)) h~_i",
               "The write-up writes the unrolled state as above, with =. Its ranges are wrong in three ways. The "
               "u-product starts at the first step, j = 1, instead of the step after i, so it multiplies the gates of "
               "early steps, and one gate too many. It multiplies 1 - u_k of every step before i, which have nothing "
               "to do with h~_i. And h_0 is gone. Even with one gate value everywhere the two differ: with u = 0.8 "
               "the weight of h~_1 in h_3 is 0.2 * 0.8^2 = 0.128, while the write-up's form gives 0.8^3 = 0.512, the "
               "weight that belongs to h_0. The same happens below at every t: column h~_1 of A_wrong_1 is column h_0 "
               "of A_1. A subtler slip starts the product at j = i, counting the step's own gate twice, as u_i and as "
               "1 - u_i.\n"
               "errors gives, for every t, the largest difference between h_t from the recursion and from each closed "
               "form: the corrected form agrees to rounding, the other two do not come close. The row sums of feature "
               "1 tell the same story: only the corrected weights sum to 1. A check that two things differ by more "
               "than 1e-9, far beyond rounding, reports how far the difference falls short of 1e-9 (its shortfall) as "
               "its error, so 0 means "
               "the claim holds.");
    trace.tensor("A_wrong_1", "the write-up's a_{t,i}, feature 1", feature_weights(A_wrong, 0), labels.states, columns);
    trace.tensor("row_sums", "sum_i a_{t,i} of feature 1", first_feature_row_sums({A, A_wrong, A_early}), labels.states,
                 forms);
    trace.tensor("errors", "max over features |closed form - recursion|", errors, labels.states, forms);
    trace.check("the write-up's form misses h_t by > 1e-9 at every t (error: shortfall)",
                shortfall(nn::min_of(nn::column_of(errors, 1)), clear_gap), 0.0);
    trace.check("the product from j = i misses h_t by > 1e-9 (error: shortfall)",
                shortfall(nn::max_of(nn::column_of(errors, 2)), clear_gap), 0.0);
}

// Step [free-weights]: stage 2, softmax weights in place of the products of gates.
void record_free_weights(Trace& trace, const Parameters& p, const nn::UpdateOnlyGru& gru, const Mat& X,
                         const Labels& labels, StageProbes& probes) {
    const std::size_t T = X.shape(0);
    const nn::CandidateAttentionRun freed = nn::candidate_attention_forward(gru.candidate, X, p.h0);
    probe_stage(probes, candidate_attention_layer(gru.candidate, p.h0), X);
    trace.step("free-weights", "Stage 2 · Free the weights",
               "h_t = sum_{i<=t} alpha_{t,i} h~_i,  alpha_{t,i} ∝ exp(ATT(h~_i, x_t))",
               "The weights of stage 1 are products of gates, and every gate u_j was computed from h_{j-1}: the "
               "weights are tied to the chain of states. Replace them by weights computed directly from a score of "
               "each candidate against the current input, normalised by a softmax over the positions so far: the "
               "weighting Bahdanau et al. (2015, eq. 6) introduced for translation (lesson 2). For the score we take "
               "the scaled dot product ATT(h~_i, x_t) = h~_i . x_t / sqrt(d) (Vaswani et al. 2017, eq. 1), so inputs "
               "and states share the width d.\n"
               "What stays: the weights are positive and sum to 1 over i <= t. What changes: there is one weight per "
               "pair (t, i), shared by all features, where the gates gave every feature its own; h_0 enters only "
               "through h~_1. What does not change yet: the candidate still reads the previous state, h~_t = tanh(W "
               "x_t + U h_{t-1} + b) with stage 0's W, U and b, so the loop still runs T steps in order. Once it has "
               "run, the weights of all steps are one masked matrix computation over the recorded candidates (second "
               "check); but the candidates could not have been computed that way.");
    trace.tensor("alpha_2", "alpha_{t,i}; row t, column i; 0 for i > t", freed.weights, labels.states, labels.inputs,
                 View::heatmap).axes("step t", "input i");
    trace.tensor("H_cand_2", "h~_t = tanh(W x_t + U h_{t-1} + b), this stage's h_{t-1}", freed.candidates,
                 numbered("h~_", 1, T));
    trace.tensor("H_2", "h_t = sum_{i<=t} alpha_{t,i} h~_i", freed.states, labels.states);
    trace.tensor("D_2", "1 where nudging x_j moves h_t", probes.dependencies.back(), labels.states, labels.inputs);
    trace.check("every row of alpha sums to 1", row_sum_error(freed.weights), 1e-12);
    trace.check("softmax(X H~^T / sqrt(d) + causal mask) gives the step-by-step weights",
                max_abs_difference(weights_from_candidates(X, freed.candidates), freed.weights), 1e-12);
    trace.check("no h_t depends on a later input x_j, j > t", reads_later_inputs(probes.dependencies.back()), 0.0);
}

// Stage 3's inputs Z = f(X) and its attention, which stage 4 starts from.
struct TiedAttention {
    Mat Z;
    nn::AttentionResult result;
};

// Step [free-candidates]: stage 3, f(x_i) as query, key and value at once.
TiedAttention record_tied_attention(Trace& trace, const Parameters& p, const Mat& X, const Labels& labels,
                                    StageProbes& probes) {
    const std::size_t T = X.shape(0);
    const Mat Z = attention_inputs(p.F, X, false);
    const nn::AttentionResult tied = attend({Z, Z, Z}, nn::Span::causal);
    probe_stage(probes, tied_attention_layer(p.F), X);
    trace.step("free-candidates", "Stage 3 · Free the candidates",
               "h_t = sum_{i<=t} softmax_i(f(x_i) . f(x_t) / sqrt(d)) f(x_i),  f(x) = F x",
               "The candidate h~_i still reads h_{i-1}, and through it every earlier candidate. Replace it by f(x_i), "
               "a function of the input x_i alone: here a linear map F (for one-hot tokens, an embedding lookup is "
               "such a map). The score compares f(x_i) with f(x_t), so one vector f(x_i) plays every part: the key "
               "that is scored, the value that is summed, and at its own position the query.\n"
               "Now no h_t refers to a previous h. Each position can be computed on its own, and all of them at once "
               "by one masked matrix computation, H = softmax(Z Z^T / sqrt(d) + M) Z with Z = f(X) and M the causal "
               "mask: 0 on and below the diagonal, -inf above (Vaswani et al. 2017, section 3.2.3). The check "
               "compares it with the loop over t. The dependency table is the same as before: h_t still reads x_1 .. "
               "x_t, but directly instead of through a chain. The sequential steps drop from T to 1 "
               "(sequential_steps): the matrix form does the loop's arithmetic, but none of it waits for a previous "
               "position.");
    trace.tensor("F", "f(x) = F x, d x d, entries N(0, 1/d)", p.F);
    trace.tensor("Z", "z_i = f(x_i): key, value and query at once", Z, labels.tokens);
    trace.tensor("alpha_3", "softmax(Z Z^T / sqrt(d) + M), row t", tied.weights, labels.states, labels.inputs,
                 View::heatmap).axes("step t", "input i");
    trace.tensor("H_3", "h_t = sum_{i<=t} alpha_{t,i} f(x_i)", tied.output, labels.states);
    trace.tensor("D_3", "1 where nudging x_j moves h_t", probes.dependencies.back(), labels.states, labels.inputs);
    trace.tensor("sequential_steps", "steps that must wait for the previous one",
                 Vec{as_double(T), as_double(T), 1.0}, std::vector<std::string>{"GRU", "stage 2", "stage 3"});
    trace.check("the loop over t equals the masked matrix form",
                max_abs_difference(nn::attention_by_positions(Z, Z, Z, nn::Span::causal), tied.output), 1e-12);
    trace.check("no h_t depends on a later input x_j, j > t", reads_later_inputs(probes.dependencies.back()), 0.0);
    return {Z, tied};
}

// Step [qkv]: stage 4, one map each for the query, the key and the value.
nn::AttentionResult record_single_head(Trace& trace, const Parameters& p, const Mat& X, const TiedAttention& stage_3,
                                       const Labels& labels, StageProbes& probes) {
    const std::size_t d = X.shape(1);
    const Mat& Z = stage_3.Z;
    const nn::AttentionResult& tied = stage_3.result;
    const Projections qkv = project(Z, p.maps);
    const nn::AttentionResult single = attend(qkv, nn::Span::causal);
    probe_stage(probes, single_head_layer(p.F, p.maps), X);
    trace.step("qkv", "Stage 4 · Queries, keys and values",
               "H = softmax(Q K^T / sqrt(d) + M) V,  Q = Z W_Q^T,  K = Z W_K^T,  V = Z W_V^T",
               "In stage 3 a token's query, key and value were one vector. A token then scores itself |f(x_t)|^2 / "
               "sqrt(d), the most any key of the same length can score (q . k <= |q| |k|), so the diagonal of alpha_3 "
               "is heavy and only longer keys outbid it. Give each part its own linear map: what a position looks for "
               "(query), what it offers to be found by (key), and what it hands over when found (value). f stays the "
               "shared input map and the three maps are the attention layer's own weights: the Q, K and V of Vaswani "
               "et al. (2017, section 3.2). With all three maps equal to the identity this is stage 3 again, as the "
               "second check shows.");
    trace.parameter("W_Q", "query map, d x d, entries N(0, 1/d)", p.maps.W_Q);
    trace.parameter("W_K", "key map", p.maps.W_K);
    trace.parameter("W_V", "value map", p.maps.W_V);
    trace.tensor("Q", "q_t = W_Q f(x_t)", qkv.Q, labels.tokens);
    trace.tensor("K", "k_i = W_K f(x_i)", qkv.K, labels.tokens);
    trace.tensor("V", "v_i = W_V f(x_i)", qkv.V, labels.tokens);
    trace.tensor("alpha_4", "softmax(Q K^T / sqrt(d) + M), row t", single.weights, labels.states, labels.inputs,
                 View::heatmap).axes("step t", "input i");
    trace.tensor("H_4", "h_t = sum_{i<=t} alpha_{t,i} v_i", single.output, labels.states);
    trace.tensor("D_4", "1 where nudging x_j moves h_t", probes.dependencies.back(), labels.states, labels.inputs);
    const Mat I = nn::identity(d);
    trace.check("the loop over t equals the masked matrix form",
                max_abs_difference(nn::attention_by_positions(qkv.Q, qkv.K, qkv.V, nn::Span::causal), single.output),
                1e-12);
    trace.check("with W_Q = W_K = W_V = I, stage 4 gives stage 3",
                max_abs_difference(single_head_layer(p.F, {I, I, I})(X), tied.output), 1e-12);
    trace.check("no h_t depends on a later input x_j, j > t", reads_later_inputs(probes.dependencies.back()), 0.0);
    return single;
}

// Step [heads]: stage 5, the maps split into heads that normalise their scores separately.
void record_split_heads(Trace& trace, const Parameters& p, const Mat& X, const Mat& Z,
                        const nn::AttentionResult& single, std::size_t heads, const Labels& labels,
                        StageProbes& probes) {
    const std::size_t d_h = X.shape(1) / heads;
    const HeadsRun split = concatenated_heads(Z, p.maps, heads, nn::Span::causal);
    const Layer causal_heads = heads_layer(p.F, p.maps, heads, nn::Span::causal, false);
    probe_stage(probes, causal_heads, X);
    const Vec split_change = nn::row_max_abs_differences(split.H, single.output);
    trace.step("heads", "Stage 5 · Several heads, side by side",
               "H = [H^1 ... H^N],  H^n = softmax(Q^n (K^n)^T / sqrt(d_h) + M) V^n",
               "One softmax gives one weight per pair of positions, shared by every feature of the value; the GRU's "
               "gates gave each feature its own. N heads, each with its own maps W_Q^n, W_K^n, W_V^n of d_h = d / N "
               "rows (Q^n = Z (W_Q^n)^T, and so on), attend separately and their outputs are concatenated, so each "
               "slice of h_t can "
               "read different positions. Here N = " + std::to_string(heads) + " and head n takes its rows of "
               "stage 4's maps (head 1 the first d_h rows of each, head 2 the next d_h, and so on). A trained layer draws every "
               "head's maps independently and follows the concatenation with one more map, W_O (Vaswani et al. 2017, "
               "section 3.2.2; lesson 6).\n"
               "Splitting the same weights changes the outputs, because each head normalises its own scores (how much "
               "depends on the weights: at d = 2 it can be less than 0.01). Only h_1 "
               "cannot change: there every head reads nothing but v_1. The matrix form calls the single-head attention "
               "once per head; the loop form slices columns of Q, K and V instead of rows of the maps.");
    trace.tensor("alpha_5", "alpha^n_{t,i}, one T x T matrix per head; row t", split.weights,
                 numbered("head ", 1, heads), labels.states);
    trace.tensor("H_5", "[h_t^1; h_t^2]; column n.k is feature k of head n", split.H, labels.states,
                 head_features(heads, d_h));
    trace.tensor("split_change", "max_k |H_5 - H_4| for each t", split_change, labels.states);
    trace.tensor("D_5", "1 where nudging x_j moves h_t", probes.dependencies.back(), labels.states, labels.inputs);
    trace.check("the loop over t equals the matrix form, head by head",
                max_abs_difference(concatenated_heads_by_positions(Z, p.maps, heads, nn::Span::causal), split.H),
                1e-12);
    trace.check("with N = 1 the heads helper gives stage 4",
                max_abs_difference(concatenated_heads(Z, p.maps, 1, nn::Span::causal).H, single.output), 1e-12);
    trace.check("h_1 does not change when the maps are split", split_change(0), 1e-12);
    trace.check("splitting changes the output by > 1e-9 (error: shortfall)",
                shortfall(nn::max_of(split_change), clear_gap), 0.0);
    trace.check("no h_t depends on a later input x_j, j > t", reads_later_inputs(probes.dependencies.back()), 0.0);
}

// Step [non-causal]: stage 6, the heads without the mask, which no longer see the order.
void record_non_causal_heads(Trace& trace, const Parameters& p, const Mat& X, const Mat& Z, std::size_t heads,
                             const Labels& labels, StageProbes& probes) {
    const std::size_t T = X.shape(0), d_h = X.shape(1) / heads;
    const HeadsRun everywhere = concatenated_heads(Z, p.maps, heads, nn::Span::full);
    const Layer full_heads = heads_layer(p.F, p.maps, heads, nn::Span::full, false);
    probe_stage(probes, full_heads, X);
    const auto reversed = nn::descending_indices(T);
    trace.step("non-causal", "Stage 6 · Attend to all positions",
               "H^n = softmax(Q^n (K^n)^T / sqrt(d_h)) V^n:  no mask, i runs over 1 .. T",
               "With no recurrence left, nothing forces h_t to wait for the later positions. Drop the mask and let "
               "every position read all T inputs, as the Transformer's encoder does; only its decoder keeps the mask, "
               "so that it cannot see the words it is about to predict (Vaswani et al. 2017, section 3.2.3). The "
               "dependency table fills up.\n"
               "Something is lost. Each h_t is now a function of its own input and of the set of all inputs, and the "
               "order in which they come is never used. Read the sentence backwards and the outputs are the same "
               "rows, backwards (H_6_rev against H_6): reordering the input only reorders the output. The two tokens "
               "\"the\" get identical outputs, although one opens the sentence and the other sits before \"mat\". The "
               "causal layer of stage 5 did not have this problem: its mask told every position how many came before "
               "it, as the last check shows.");
    trace.tensor("alpha_6", "alpha^n_{t,i} over all i; row t", everywhere.weights, numbered("head ", 1, heads),
                 labels.states);
    trace.tensor("H_6", "[h_t^1; h_t^2], no mask", everywhere.H, token_labels(nn::ascending_indices(T)), head_features(heads, d_h));
    trace.tensor("H_6_rev", "the same layer on x_T .. x_1", full_heads(nn::gather_rows(X, reversed)),
                 token_labels(reversed), head_features(heads, d_h));
    trace.tensor("D_6", "1 where nudging x_j moves h_t", probes.dependencies.back(), labels.states, labels.inputs);
    trace.tensor("reversal_gap", "max |layer(reversed x) - reversed layer(x)|", Vec{probes.gaps[4], probes.gaps[5]},
                 std::vector<std::string>{"stage 5, causal", "stage 6, no mask"});
    trace.check("the loop over t equals the matrix form, head by head",
                max_abs_difference(concatenated_heads_by_positions(Z, p.maps, heads, nn::Span::full), everywhere.H),
                1e-12);
    trace.check("h_t depends on every x_j", max_abs_difference(probes.dependencies.back(), full_pattern(T)), 0.0);
    trace.check("reversing the input just reverses the output", probes.gaps[5], 1e-12);
    trace.check("the two \"the\" tokens get the same output", row_gap(everywhere.H, first_the, second_the), 1e-12);
    trace.check("stage 5, causal: reversal gap > 1e-9 (error: shortfall)",
                shortfall(probes.gaps[4], clear_gap), 0.0);
}

// Stage 7's layer and its outputs, which the feed-forward network of stage 8 reads.
struct PositionedHeads {
    Layer layer;
    Mat H;
};

// Step [positions]: stage 7, sinusoidal positions added to the inputs of stage 6.
PositionedHeads record_positional_heads(Trace& trace, const Parameters& p, const Mat& X, std::size_t heads,
                                        const Labels& labels, StageProbes& probes) {
    const std::size_t T = X.shape(0), d = X.shape(1), d_h = d / heads;
    const Mat Z_pos = attention_inputs(p.F, X, true);
    const HeadsRun positioned = concatenated_heads(Z_pos, p.maps, heads, nn::Span::full);
    const Layer positioned_heads = heads_layer(p.F, p.maps, heads, nn::Span::full, true);
    probe_stage(probes, positioned_heads, X);
    trace.step("positions", "Stage 7 · Positional encodings",
               "z_i = f(x_i) + p(i),  then the heads of stage 6 on Z",
               "Add to every input a vector p(i) that depends on its position alone. We use the sinusoids of Vaswani "
               "et al. (2017, section 3.5): feature pairs that turn at geometrically spaced frequencies, PE(pos, 2m) "
               "= sin(pos / 10000^(2m/d)) and PE(pos, 2m+1) = cos(pos / 10000^(2m/d)), positions counted from 0. "
               "Queries, keys and values all read z_i = f(x_i) + p(i); in particular the query at t carries its own "
               "position p(t). (The write-up writes Q(f(x_t) + p(i)), the key's position in the query, and in one "
               "version leaves p out of the key.) Learned position vectors would do the same job; sinusoids need no "
               "training and exist for any length.\n"
               "Now reversing the sentence changes which word sits at which position, so the outputs are no longer "
               "the old ones reversed, and the two tokens \"the\" differ.");
    trace.tensor("P", "p(i): PE(i - 1, .), sinusoids", nn::sinusoidal_encoding(T, d), numbered("p_", 1, T));
    trace.tensor("Z_7", "z_i = f(x_i) + p(i)", Z_pos, labels.tokens);
    trace.tensor("alpha_7", "alpha^n_{t,i} over all i; row t", positioned.weights, numbered("head ", 1, heads),
                 labels.states);
    trace.tensor("H_7", "[h_t^1; h_t^2], positions added", positioned.H, labels.tokens, head_features(heads, d_h));
    trace.tensor("D_7", "1 where nudging x_j moves h_t", probes.dependencies.back(), labels.states, labels.inputs);
    trace.check("the loop over t equals the matrix form, head by head",
                max_abs_difference(concatenated_heads_by_positions(Z_pos, p.maps, heads, nn::Span::full), positioned.H),
                1e-12);
    trace.check("reversal gap > 1e-9: the order matters again (error: shortfall)",
                shortfall(probes.gaps.back(), clear_gap), 0.0);
    trace.check("the two \"the\" tokens differ by > 1e-9 (error: shortfall)",
                shortfall(row_gap(positioned.H, first_the, second_the), clear_gap), 0.0);
    trace.check("h_t depends on every x_j", max_abs_difference(probes.dependencies.back(), full_pattern(T)), 0.0);
    return {positioned_heads, positioned.H};
}

// Step [feed-forward]: stage 8, the position-wise network g after the heads.
void record_feed_forward(Trace& trace, const Parameters& p, const Mat& X, const PositionedHeads& positioned,
                         std::size_t d_ff, const Labels& labels, StageProbes& probes) {
    const std::size_t T = X.shape(0);
    const Mat Y = nn::position_wise_feed_forward(p.g, positioned.H);
    const Layer layer = full_layer(positioned.layer, p.g);
    const Mat D_g = measured_dependency(feed_forward_layer(p.g), positioned.H);
    probe_stage(probes, layer, X);
    trace.step("feed-forward", "Stage 8 · A position-wise network",
               "y_t = g(h_t) = W_2 max(0, W_1 h_t + b_1) + b_2",
               "Each h_t is still a weighted average of linear maps of the inputs: the only non-linearity is in how "
               "the weights are chosen. Vaswani et al. (2017, section 3.3, eq. 2) follow attention with a small "
               "two-layer network g, the same at every position: W_1 widens to d_ff = " + std::to_string(d_ff) +
                   ", a ReLU, W_2 narrows back to d. Position-wise is checked twice: g of each row on its own equals "
               "g of the whole matrix, and nudging one input row of g moves no other output row (D_g; a 0 on its "
               "diagonal would mean every ReLU is off for that row, before and after the nudge). Attention mixes "
               "positions; g works within one.\n"
               "This is the self-attention layer the lesson set out to reach, with the simplifications said on the "
               "way. The Transformer's layer also maps the concatenated heads by W_O, adds a residual connection "
               "around each of the two sub-layers and normalises (Vaswani et al. 2017, sections 3.1 and 3.2.2); lesson "
               "11 (transformer-block) adds those and builds the whole block from this network and lesson 6's heads. The "
               "write-up also suggests applying g to each head separately; we apply it to the concatenation, as the "
               "Transformer does.");
    trace.parameter("W_1", "d_ff x d, entries N(0, 1/d)", p.g.W_1);
    trace.parameter("b_1", "d_ff, entries N(0, 0.01)", p.g.b_1);
    trace.parameter("W_2", "d x d_ff, entries N(0, 1/d_ff)", p.g.W_2);
    trace.parameter("b_2", "d, entries N(0, 0.01)", p.g.b_2);
    trace.tensor("Y", "y_t = g(h_t), the layer's output", Y, labels.tokens);
    trace.tensor("D_g", "1 where nudging row j of H_7 moves y_t", D_g, numbered("y_", 1, T), labels.states);
    trace.tensor("D_8", "1 where nudging x_j moves y_t", probes.dependencies.back(), numbered("y_", 1, T),
                 labels.inputs);
    trace.check("g applied row by row equals g applied to the whole matrix",
                max_abs_difference(feed_forward_row_by_row(p.g, positioned.H), Y), 1e-12);
    trace.check("g is position-wise: no y_t moves with another row of its input", reads_other_rows(D_g), 0.0);
}

// What the recap's counts say, in words: the inputs h_1 reads in the causal stages and in the
// others, from the measured counts (a small feed-forward can read fewer than the attention before it).
std::string recap_reading(const Mat& counts, const std::vector<std::string>& names, std::size_t T, std::size_t d_ff) {
    const auto listed = [&](std::size_t from, std::size_t to, double expected) {
        std::vector<std::string> off;
        for (std::size_t s = from; s < to; ++s)
            if (counts(s, 1) != expected) off.push_back(fmt::format("{} in stage {}", counts(s, 1), names[s]));
        return off;
    };
    const auto causal_off = listed(0, 5, 1.0), open_off = listed(5, counts.shape(0), as_double(T));
    std::string text = causal_off.empty()
                           ? "Inputs h_1 reads: 1 in every causal stage (0 to 5)"
                           : fmt::format("Inputs h_1 reads: 1 under the causal mask except {}", fmt::join(causal_off, ", "));
    if (open_off.empty())
        return text + fmt::format(", and all T = {} once the mask is gone (6 to 8).", T);
    return text + fmt::format(
                      "; without the mask all T = {} where attention alone decides, but {}: g's ReLU units at row 1 "
                      "are inactive for {} of the nudges here (d_ff = {}), and an inactive unit passes nothing on, so "
                      "y_1 does not move with everything h_1 read.",
                      T, fmt::join(open_off, ", "), counts(counts.shape(0) - 1, 1) == 0.0 ? "all" : "most", d_ff);
}

// The stages whose reversal gap is 0 (to rounding): those that cannot tell the order of the words.
std::string recap_order(const std::vector<double>& gaps, const std::vector<std::string>& names) {
    std::vector<std::string> blind;
    for (std::size_t s = 0; s < gaps.size(); ++s)
        if (gaps[s] < 1e-9) blind.push_back(names[s]);
    if (blind.empty()) return "No stage here has lost the order.";
    if (blind.size() == 1 && blind.front() == names[5])
        return "Only stage 6, non-causal without positions, has lost it.";
    return fmt::format("Stages that have lost it here: {}.", fmt::join(blind, ", "));
}

// Step [recap]: the sequential steps, the inputs h_1 reads and the reversal gap of every stage.
void record_recap(Trace& trace, const StageProbes& probes, std::size_t T, std::size_t heads, std::size_t d_ff) {
    const auto names = stage_names(heads);
    const Mat counts = recap_counts(probes.dependencies, T);
    trace.step("recap", "Recap: what each stage depends on",
               "h_t = u_t*h_{t-1} + (1-u_t)*h~_t  ->  y_t = g([sum_i alpha^n_{t,i} v^n_i]_n)",
               "One row per stage, each number measured above (stage 1 rewrote the GRU without changing it). "
               "Sequential steps: computations that must wait for the previous one, T while a state is carried and 1 "
               "once none is. " + recap_reading(counts, names, T, d_ff) + " The reversal gap: how far "
               "reading the sentence backwards is from just reversing the outputs; 0 means the layer cannot tell the "
               "order. " + recap_order(probes.gaps, names));
    trace.tensor("stages", "sequential steps; inputs that h_1 reads", counts, names,
                 std::vector<std::string>{"steps", "h_1 reads"});
    trace.tensor("order", "reversal gap of each stage", as_vec(probes.gaps), names, {}, View::bars);
}

void lesson_gru_to_attention(Trace& trace, const Config& config) {
    const std::size_t d = config.size(param::d), heads = config.size(param::heads), d_ff = config.size(param::d_ff);
    const std::size_t T = sentence_ids.size();
    Rng rng(config.seed);
    // attn run --input may replace any of the parameters with the user's own (same shapes)
    const Parameters p = supplied_parameters(trace, draw_parameters(rng, d, d_ff));
    const Labels labels{token_labels(nn::ascending_indices(T)), numbered("h_", 1, T), numbered("x_", 1, T)};
    StageProbes probes;

    const Mat X = record_tokens(trace, p, labels);
    record_full_gru(trace, p, X, labels);
    const nn::UpdateOnlyGru gru = update_only_gru(p);
    const nn::UpdateOnlyRun run = record_update_only_gru(trace, p, gru, X, labels, probes);
    const Unrolled unrolled = record_unrolled_weights(trace, p, run, labels);
    record_wrong_closed_forms(trace, p, run, unrolled, labels);
    record_free_weights(trace, p, gru, X, labels, probes);
    const TiedAttention stage_3 = record_tied_attention(trace, p, X, labels, probes);
    const nn::AttentionResult stage_4 = record_single_head(trace, p, X, stage_3, labels, probes);
    record_split_heads(trace, p, X, stage_3.Z, stage_4, heads, labels, probes);
    record_non_causal_heads(trace, p, X, stage_3.Z, heads, labels, probes);
    const PositionedHeads stage_7 = record_positional_heads(trace, p, X, heads, labels, probes);
    record_feed_forward(trace, p, X, stage_7, d_ff, labels, probes);
    record_recap(trace, probes, T, heads, d_ff);
}

}  // namespace
}  // namespace gru_to_attention

Lesson gru_to_attention_lesson() {
    using namespace gru_to_attention;
    return make_lesson(5, "gru-to-attention", "From a GRU to a self-attention layer",
                       "Cho et al. 2014; Bahdanau et al. 2015; Vaswani et al. 2017", {param::d, param::heads, param::d_ff},
                       limits, time_estimate, lesson_gru_to_attention,
                       {"tokens", "gru", "no-reset", "unroll", "wrong-range", "free-weights", "free-candidates",
                        "qkv", "heads", "non-causal", "positions", "feed-forward", "recap"});
}

}  // namespace attn
