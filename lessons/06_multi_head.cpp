// Lesson 6: multi-head attention (Vaswani et al. 2017, section 3.2.2): h narrow attentions side
// by side, their results concatenated and mixed by W^O; then its cost and its causal variant.
// T = tokens, d_model = model width, h = heads, d_k = d_v = d_model / h = width of one head.
#include "registry.hpp"
#include "support.hpp"

#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/multi_head.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"

#include <fmt/format.h>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace attn {

namespace multi_head {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d_model{"d_model", 6, 1, 2048, "width of the model: of every token vector and of W^Q, W^K, W^V, W^O"};
const Param heads{"heads", 2, 1, 256, "attention heads h; must divide d_model (each head is d_model / h wide)"};
}  // namespace param

std::string limits(const Config& c) {
    if (auto why = divisible(c, param::d_model, param::heads, 1); !why.empty()) return why;
    const double d_model = as_double(c.size(param::d_model));
    return memory_limit(12.0 * d_model * d_model, "lesson 6");
}

// Seconds per d_model^2 (the projections W^Q, W^K, W^V, W^O drawn and applied): d_model=2048 took
// 4.4 to 9.7 s on this project's 2-core machine at loads of 4.9 to 6.0 (2.3e-6 s a unit), d_model
// = 1024 2.9 s and 512 0.8 s (the work grows a little slower than d_model^2 there); 5e-6 on the
// safe side: 21 s at the largest setting, under the cap.
TimeEstimate time_estimate(const Config& c) {
    const double d_model = as_double(c.size(param::d_model));
    return {0.5 + 5e-6 * d_model * d_model, "lesson 6", fmt::format("d_model^2 = {:.3g}", d_model * d_model),
            {{&param::d_model, 2.0}}};
}


const std::vector<std::string> sentence = {"turn", "off", "the", "lights", "in", "the", "kitchen"};

// "h2:3" names feature 3 of head 2: the label of a column of W^Q, Q or Concat, and of a row of W^O.
std::vector<std::string> head_features(std::size_t d_model, std::size_t h) {
    const std::size_t d_k = nn::head_width(d_model, h);
    std::vector<std::string> out;
    for (std::size_t i = 1; i <= h; ++i)
        for (std::size_t a = 1; a <= d_k; ++a) out.push_back("h" + std::to_string(i) + ":" + std::to_string(a));
    return out;
}

std::vector<std::string> head_names(std::size_t h) {
    std::vector<std::string> out;
    for (std::size_t i = 1; i <= h; ++i) out.push_back("head " + std::to_string(i));
    return out;
}

// Entries N(0, 1/d_model): a projected feature sums d_model products, so it stays near unit scale.
nn::MultiHeadParams draw_params(Rng& rng, std::size_t d_model) {
    const double s = 1.0 / std::sqrt(as_double(d_model));
    nn::MultiHeadParams p;
    p.W_Q = rng.normal_mat(d_model, d_model, s);
    p.W_K = rng.normal_mat(d_model, d_model, s);
    p.W_V = rng.normal_mat(d_model, d_model, s);
    p.W_O = rng.normal_mat(d_model, d_model, s);
    return p;
}

// W_i^Q = columns [i d_k, (i+1) d_k) of W^Q (i counted from 0 here, from 1 in the text).
Mat head_columns(const Mat& W, std::size_t i, std::size_t d_k) {
    return nn::columns_of(W, i * d_k, (i + 1) * d_k);
}

// W_i^O = rows [i d_v, (i+1) d_v) of W^O: the part of W^O that reads head i.
Mat head_rows(const Mat& W, std::size_t i, std::size_t d_v) {
    return nn::rows_of(W, i * d_v, (i + 1) * d_v);
}

// Multi-head attention as the paper writes it: every head projects X with its own blocks of
// columns, attends, and the head outputs are placed side by side.
struct LoopForm {
    std::vector<Mat> Q, K, V;                // per head, T x d_k
    std::vector<nn::AttentionResult> heads;  // per head: scores, weights, head_i (T x d_v)
    Mat concat;                              // T x d_model, head i in columns [i d_v, (i+1) d_v)
    Mat output;                              // T x d_model
};

LoopForm heads_one_by_one(const Mat& X, const nn::MultiHeadParams& p, std::size_t h) {
    const std::size_t T = X.shape(0), d_model = X.shape(1), d_k = nn::head_width(d_model, h);
    LoopForm f;
    f.concat = xt::empty<double>({T, d_model});
    for (std::size_t i = 0; i < h; ++i) {
        f.Q.push_back(nn::matmul(X, head_columns(p.W_Q, i, d_k), "X W_i^Q"));
        f.K.push_back(nn::matmul(X, head_columns(p.W_K, i, d_k), "X W_i^K"));
        f.V.push_back(nn::matmul(X, head_columns(p.W_V, i, d_k), "X W_i^V"));
        f.heads.push_back(nn::scaled_dot_product_attention(f.Q[i], f.K[i], f.V[i]));
        nn::set_columns(f.concat, i * d_k, f.heads[i].output);
    }
    f.output = nn::matmul(f.concat, p.W_O, "Concat(heads) W^O");
    return f;
}

// The form libraries use: one product per projection for all heads, split into heads, attention
// on each slice, the results merged back side by side.
struct BatchedForm {
    nn::Heads Q, K, V;                       // h x T x d_k
    std::vector<nn::AttentionResult> heads;  // per head
    Mat concat;                              // merge_heads of the head outputs
    Mat output;
};

BatchedForm heads_batched(const Mat& X, const nn::MultiHeadParams& p, std::size_t h) {
    BatchedForm f{nn::split_heads(nn::matmul(X, p.W_Q, "X W^Q"), h), nn::split_heads(nn::matmul(X, p.W_K, "X W^K"), h),
                  nn::split_heads(nn::matmul(X, p.W_V, "X W^V"), h), {}, {}, {}};
    nn::Heads outputs = xt::empty<double>({h, X.shape(0), f.V.shape(2)});
    for (std::size_t i = 0; i < h; ++i) {
        f.heads.push_back(
            nn::scaled_dot_product_attention(nn::slice_of(f.Q, i), nn::slice_of(f.K, i), nn::slice_of(f.V, i)));
        xt::view(outputs, i, xt::all(), xt::all()) = f.heads[i].output;
    }
    f.concat = nn::merge_heads(outputs);
    f.output = nn::matmul(f.concat, p.W_O, "Concat(heads) W^O");
    return f;
}

// Largest difference between the slices of a split projection and the loop's per-head projections.
double slices_error(const nn::Heads& split, const std::vector<Mat>& per_head) {
    double worst = 0.0;
    for (std::size_t i = 0; i < per_head.size(); ++i)
        worst = std::max(worst, max_abs_difference(nn::slice_of(split, i), per_head[i]));
    return worst;
}

// Largest difference between the per-head weights of two forms.
double weights_error(const std::vector<nn::AttentionResult>& a, const std::vector<nn::AttentionResult>& b) {
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, max_abs_difference(a[i].weights, b[i].weights));
    return worst;
}

// sum_i head_i W_i^O: each head's own contribution to the output, added up.
Mat sum_of_head_contributions(const LoopForm& f, const Mat& W_O) {
    const std::size_t d_v = f.heads.front().output.shape(1);
    Mat total = nn::zeros(f.output.shape(0), f.output.shape(1));
    for (std::size_t i = 0; i < f.heads.size(); ++i)
        total += nn::matmul(f.heads[i].output, head_rows(W_O, i, d_v), "head_i W_i^O");
    return total;
}

// The smallest head count that does not divide d_model: the example of a refused request.
std::size_t smallest_non_divisor(std::size_t n) {
    std::size_t k = 2;
    while (n % k == 0) ++k;
    return k;
}

std::vector<std::size_t> divisors_of(std::size_t n) {
    std::vector<std::size_t> out;
    for (std::size_t k = 1; k <= n; ++k)
        if (n % k == 0) out.push_back(k);
    return out;
}

std::vector<std::string> head_count_labels(const std::vector<std::size_t>& counts) {
    std::vector<std::string> out;
    for (auto h : counts) out.push_back("h=" + std::to_string(h));
    return out;
}

// One row per head count h: d_k, parameters, multiply-adds, softmax entries, each summed head by
// head from the sizes of that head's own matrices and products.
Mat cost_by_head_count(std::size_t T, std::size_t d_model, const std::vector<std::size_t>& head_counts) {
    Mat table = nn::zeros(head_counts.size(), 4);
    for (std::size_t r = 0; r < head_counts.size(); ++r) {
        const std::size_t h = head_counts[r], d_k = nn::head_width(d_model, h), d_v = d_k;
        table(r, 0) = as_double(d_k);
        for (std::size_t i = 0; i < h; ++i) {
            table(r, 1) += as_double(3 * d_model * d_k + d_v * d_model);  // W_i^Q, W_i^K, W_i^V and W_i^O
            table(r, 2) += as_double(T * d_model * (3 * d_k + d_v));       // X W_i^Q, X W_i^K, X W_i^V, head_i W_i^O
            table(r, 2) += as_double(T * T * (d_k + d_v));                 // Q_i K_i^T and A_i V_i
            table(r, 3) += as_double(T * T);                               // one softmax entry per score
        }
    }
    return table;
}

// Largest difference between a column of the table and that column's value for one full-width head.
double column_spread(const Mat& table, std::size_t column, double full_width_value) {
    return nn::max_abs_of(Vec(nn::column_of(table, column) - full_width_value));
}

// Largest weight any head gives to a later token (j > t).
double weight_above_diagonal(const nn::Heads& weights) {
    double worst = 0.0;
    for (std::size_t i = 0; i < weights.shape(0); ++i)
        for (std::size_t t = 0; t < weights.shape(1); ++t)
            for (std::size_t j = t + 1; j < weights.shape(2); ++j) worst = std::max(worst, std::abs(weights(i, t, j)));
    return worst;
}

// Replaces the last token's vector and reruns the causal layer: how far does any earlier output move?
double earlier_outputs_moved(Rng& rng, const Mat& X, const nn::MultiHeadParams& p, std::size_t h, const Mat& mask,
                             const Mat& output) {
    const std::size_t T = X.shape(0);
    Mat changed = X;
    nn::set_row(changed, T - 1, rng.normal_vec(X.shape(1)));
    const Mat moved = nn::multi_head_attention(changed, changed, p, h, &mask).output;
    return max_abs_difference(nn::rows_of(moved, 0, T - 1), nn::rows_of(output, 0, T - 1));
}

// Step [inputs]: the tokens X and the sizes T, d_model, h and d_k = d_model / h.
// nn::multi_head_attention's result, asked to keep the weights (HeadWeights::keep, the default):
// an exercise's version that leaves them unfilled stops here, saying so, rather than later in a
// tensor of the wrong shape.
nn::MultiHeadResult with_weights(nn::MultiHeadResult r, std::size_t h, std::size_t T_q, std::size_t T_k) {
    const Shape want{h, T_q, T_k};
    if (shape_of(r.weights) != want)
        throw ShapeError(fmt::format("nn::multi_head_attention, asked to keep the weights (HeadWeights::keep), "
                                     "returned weights of shape {}: they must be h x T_q x T_k = {}, every head's "
                                     "softmax(Q_i K_i^T / sqrt(d_k) + M)",
                                     shape_string(shape_of(r.weights)), shape_string(want)));
    return r;
}

void record_inputs(Trace& trace, const Mat& X, std::size_t h) {
    const std::size_t T = X.shape(0), d_model = X.shape(1), d_k = nn::head_width(d_model, h);
    trace.step("inputs", "The tokens, the model width, the heads", "X: T x d_model,  d_k = d_v = d_model / h",
               fmt::format(
                   "A multi-head attention layer takes a sequence of vectors and returns a sequence of the same "
                   "shape, which is what lets a Transformer stack such layers (lesson 11, transformer-block, stacks them "
                   "with lesson 5's position-wise network, residual connections and layer norms). Our sequence is "
                   "\"turn off the "
                   "lights in the kitchen\": T = {0} tokens, each a row of d_model = {1} numbers. In a Transformer "
                   "the rows come from the layer below (word plus position, so the two rows of \"the\" differ); "
                   "here they are drawn from the seed. The layer has h = {2} heads, and each head works in "
                   "d_k = d_v = {1} / {2} = {3} dimensions: its queries, keys and values have {3} features, and "
                   "the outputs of all heads side by side are {1} wide again. (The paper's base model has d_model = "
                   "512 and h = 8 heads of 64.) So h must divide d_model: asked for h = {4} heads, "
                   "nn::multi_head_attention refuses with an error that names {1} and {4}.",
                   T, d_model, h, d_k, smallest_non_divisor(d_model)));
    trace.tensor("X", "one row per token", X, sentence);
    trace.tensor("sizes", "T, d_model, h, d_k", Vec{as_double(T), as_double(d_model), as_double(h), as_double(d_k)},
                 std::vector<std::string>{"T", "d_model", "h", "d_k"});
}

// Step [params]: W^Q, W^K, W^V and W^O, labelled by the head each column or row belongs to.
void record_params(Trace& trace, const nn::MultiHeadParams& p, std::size_t h) {
    const auto features = head_features(p.W_Q.shape(0), h);
    trace.step("params", "Four projections, one block per head",
               "W_i^Q = columns (i-1) d_k + 1 .. i d_k of W^Q;  likewise W_i^K, W_i^V",
               "Vaswani et al. (2017, section 3.2.2) give head i its own projections W_i^Q and W_i^K, d_model x "
               "d_k, and W_i^V, d_model x d_v. Placed side by side, the h blocks form one d_model x d_model "
               "matrix per projection; a column label says which head the column feeds (h2:1 is feature 1 of "
               "head 2). W^O, h d_v x d_model, maps the joined heads back to the model width; its rows are "
               "labelled by the head feature they read. As in the paper, vectors are rows and matrices act from "
               "the right, x W. The entries are N(0, 1/d_model), so projected features stay near unit size. "
               "There are no biases, as in the paper's equations (PyTorch's nn.MultiheadAttention adds 4 d_model "
               "of them).");
    trace.parameter("W_Q", "[W_1^Q ... W_h^Q], d_model x h d_k", p.W_Q, {}, features);
    trace.parameter("W_K", "[W_1^K ... W_h^K], d_model x h d_k", p.W_K, {}, features);
    trace.parameter("W_V", "[W_1^V ... W_h^V], d_model x h d_v", p.W_V, {}, features);
    trace.parameter("W_O", "[W_1^O; ...; W_h^O], h d_v x d_model", p.W_O, features);
}

// Steps [head-1] and [heads]: every head's attention, one head at a time as the paper writes it.
LoopForm record_heads(Trace& trace, const Mat& X, const nn::MultiHeadParams& p, std::size_t h) {
    const std::size_t d_k = nn::head_width(X.shape(1), h);
    const LoopForm loop = heads_one_by_one(X, p, h);
    const nn::AttentionResult& first = loop.heads.front();
    trace.step("head-1", "Head 1, written out",
               "head_1 = softmax(Q_1 K_1^T / sqrt(d_k)) V_1,  Q_1 = X W_1^Q (K_1, V_1 alike)",
               fmt::format(
                   "One head is the scaled dot-product attention of Vaswani et al. (2017, eq. 1), applied to its "
                   "own narrow view of the tokens. In self-attention, queries, keys and values are all projections "
                   "of the same X. Head 1 turns every token into a query, a key and a value of {0} numbers each "
                   "(V_1 = X W_1^V), scores each query against every key, divides by sqrt(d_k) = sqrt({0}) (the "
                   "width of the head, not d_model), and a softmax along each row turns the scores into weights. "
                   "head_1 is the weighted sum of the values. Read the heatmap by rows: the token on the left "
                   "collects from the tokens named above it.",
                   d_k));
    trace.tensor("Q_1", "X W_1^Q", loop.Q.front(), sentence);
    trace.tensor("K_1", "X W_1^K", loop.K.front(), sentence);
    trace.tensor("V_1", "X W_1^V", loop.V.front(), sentence);
    trace.tensor("S_1", "Q_1 K_1^T / sqrt(d_k); rows: queries, columns: keys", first.scores, sentence, sentence);
    trace.tensor("A_1", "softmax of each row of S_1", first.weights, sentence, sentence, View::heatmap).axes("query word", "key word");
    trace.tensor("head_1", "A_1 V_1", first.output, sentence);
    trace.check("every row of A_1 sums to 1", row_sum_error(first.weights), 1e-12);

    trace.step("heads", "The other heads: same recipe, own weights",
               "head_i = Attention(X W_i^Q, X W_i^K, X W_i^V),  i = 1 .. h",
               "Every other head repeats the recipe with its own block of columns of each projection. The heads "
               "share nothing but their input, so each can weigh the sentence in its own way: compare the "
               "heatmaps with A_1. The attention pictures of Vaswani et al. (2017, figures 3 to 5) show trained "
               "heads that specialise, two of them linking the pronoun \"its\" to the noun it stands for. Ours are "
               "random, so only the fact that they differ carries over. No head waits for another: all of them "
               "can run at the same time.");
    for (std::size_t i = 1; i < h; ++i) {
        const std::string n = std::to_string(i + 1);
        trace.tensor("A_" + n, "softmax(Q_" + n + " K_" + n + "^T / sqrt(d_k))", loop.heads[i].weights, sentence,
                     sentence, View::heatmap).axes("query word", "key word");
        trace.tensor("head_" + n, "A_" + n + " V_" + n, loop.heads[i].output, sentence);
    }
    return loop;
}

// The batched form and all heads' queries X W^Q before the split: step [concat] checks both.
struct Batched {
    BatchedForm form;
    Mat Q;  // T x d_model
};

// Step [batched]: the heads from one product per projection, split into slices.
Batched record_batched(Trace& trace, const Mat& X, const nn::MultiHeadParams& p, std::size_t h, const LoopForm& loop) {
    const auto features = head_features(X.shape(1), h);
    const BatchedForm batched = heads_batched(X, p, h);
    trace.step("batched", "One projection, then a reshape into heads",
               "Q = X W^Q,  split_heads(Q): T x d_model -> h x T x d_k,  slice i = X W_i^Q",
               "Libraries seldom run h narrow products. X W^Q computes the queries of all heads in one product, "
               "and its columns of head i are exactly X W_i^Q, because column c of a product X W needs only "
               "column c of W. split_heads cuts the blocks out and stacks them, h x T x d_k (PyTorch code "
               "reshapes to T x h x d_k and swaps the first two axes). Attention then runs on each slice as "
               "before. The checks compare this batched form with the head-by-head loop of the last two steps.");
    const Mat Q = nn::matmul(X, p.W_Q, "X W^Q");
    trace.tensor("Q", "X W^Q, all heads' queries side by side", Q, sentence, features);
    trace.tensor("Q_heads", "split_heads(Q); each slice is one head's T x d_k queries", batched.Q, head_names(h),
                 sentence);
    trace.check("slice i of split_heads(X W) equals X W_i, for W^Q, W^K and W^V",
                std::max({slices_error(batched.Q, loop.Q), slices_error(batched.K, loop.K),
                          slices_error(batched.V, loop.V)}),
                1e-12);
    trace.check("the batched form gives every head the weights of the loop", weights_error(batched.heads, loop.heads),
                1e-12);
    return {batched, Q};
}

// Step [concat]: the heads joined and mixed by W^O; returns nn::multi_head_attention's result.
nn::MultiHeadResult record_concat(Trace& trace, const Mat& X, const nn::MultiHeadParams& p, std::size_t h,
                                  const LoopForm& loop, const Batched& batched) {
    const std::size_t d_k = nn::head_width(X.shape(1), h);
    const auto features = head_features(X.shape(1), h);
    const nn::MultiHeadResult layer = nn::multi_head_attention(X, X, p, h);
    trace.step("concat", "Join the heads, then mix them with W^O",
               "MultiHead(X) = Concat(head_1, ..., head_h) W^O = sum_i head_i W_i^O",
               fmt::format(
                   "Each head returns T rows of d_v = {0} numbers. Concat sets them side by side, T x h d_v = "
                   "T x d_model; in the batched form that is merge_heads, the inverse of split_heads. Without W^O, "
                   "output features 1 to {0} could only ever come from head 1; W^O lets every output feature read "
                   "every head. Cut W^O into blocks of rows, W_i^O (for head 1 the rows labelled h1:1 to h1:{0} in "
                   "step [params]), and the product becomes a sum: each head adds its own contribution to every output "
                   "feature. nn::multi_head_attention goes head by head like the loop, which keeps only one head's "
                   "matrices in memory at a time; the last check compares it with the loop.",
                   d_k));
    trace.tensor("Concat", "[head_1 ... head_h], T x h d_v", batched.form.concat, sentence, features);
    trace.tensor("Y", "Concat W^O, T x d_model", batched.form.output, sentence);
    trace.check("merge_heads(split_heads(Q)) gives Q back",
                max_abs_difference(nn::merge_heads(nn::split_heads(batched.Q, h)), batched.Q), 0.0);
    trace.check("merge_heads in the batched form equals the loop's side-by-side placement",
                max_abs_difference(batched.form.concat, loop.concat), 1e-12);
    trace.check("Concat W^O equals sum_i head_i W_i^O",
                max_abs_difference(sum_of_head_contributions(loop, p.W_O), loop.output), 1e-12);
    trace.check("nn::multi_head_attention gives the output of the loop", max_abs_difference(layer.output, loop.output),
                1e-12);
    return layer;
}

// Step [one-head]: with h = 1 the layer is plain scaled dot-product attention followed by W^O.
void record_one_head(Trace& trace, const Mat& X, const nn::MultiHeadParams& p, std::size_t h) {
    const std::size_t d_model = X.shape(1), d_k = nn::head_width(d_model, h);
    const nn::MultiHeadResult single = with_weights(nn::multi_head_attention(X, X, p, 1), 1, X.shape(0), X.shape(0));
    const nn::AttentionResult plain = nn::scaled_dot_product_attention(
        nn::matmul(X, p.W_Q, "X W^Q"), nn::matmul(X, p.W_K, "X W^K"), nn::matmul(X, p.W_V, "X W^V"));
    trace.step("one-head", "One head of width d_model is plain attention",
               "h = 1:  MultiHead(X) = Attention(X W^Q, X W^K, X W^V) W^O",
               fmt::format(
                   "With h = 1 the only block of columns is the whole matrix and d_k = d_model, so multi-head "
                   "attention is the single scaled dot-product attention of lesson 4 followed by W^O. The same four "
                   "matrices now make a different layer: every token gets one weighting of the sentence, scaled "
                   "by 1/sqrt({0}), where {1} heads gave it {1} weightings over {2} features each. Splitting "
                   "changes what the layer can express, not its size, as the next step counts.",
                   d_model, h, d_k));
    trace.tensor("A", "softmax(X W^Q (X W^K)^T / sqrt(d_model))", nn::slice_of(single.weights, 0),
                 sentence, sentence, View::heatmap).axes("query word", "key word");
    trace.tensor("Y_1", "MultiHead(X) with h = 1", single.output, sentence);
    trace.check("multi-head attention with h = 1 equals Attention(X W^Q, X W^K, X W^V) W^O",
                max_abs_difference(single.output, nn::matmul(plain.output, p.W_O, "Attention W^O")), 1e-12);
}

// Step [cost]: parameters, multiply-adds and softmax entries for every head count that divides d_model.
void record_cost(Trace& trace, std::size_t T, std::size_t d_model) {
    const std::vector<std::size_t> head_counts = divisors_of(d_model);
    const Mat cost = cost_by_head_count(T, d_model, head_counts);
    const std::size_t full_params = 4 * d_model * d_model;
    const std::size_t full_mult_adds = 4 * T * d_model * d_model + 2 * T * T * d_model;
    trace.step("cost", "Same parameters, same multiply-adds",
               "any h:  4 d_model^2 weights,  4 T d_model^2 + 2 T^2 d_model multiply-adds",
               fmt::format(
                   "Vaswani et al. (2017, section 3.2.2) note that, the heads being narrower, the total cost is "
                   "similar to that of one head of full width. Count one head: its three projections hold "
                   "3 d_model d_k weights and its rows of W^O another d_v d_model; its products take "
                   "T d_model (3 d_k + d_v) multiply-adds for the projections and W^O, and T^2 (d_k + d_v) for "
                   "Q_i K_i^T and A_i V_i. Times h, with h d_k = h d_v = d_model, h drops out. The table sums the "
                   "counts head by head for every h that divides d_model = {0}; the row h=1 is the one full-width "
                   "head. What does grow is the softmax column: h T^2 scores to exponentiate and to store. That is "
                   "why the paper says similar, not equal.",
                   d_model));
    trace.tensor("cost", fmt::format("summed over the heads; T = {}, d_model = {}", T, d_model), cost,
                 head_count_labels(head_counts), {"d_k", "params", "mult-adds", "softmax"});
    trace.check(fmt::format("every h has the 4 d_model^2 = {} parameters of one full head", full_params),
                column_spread(cost, 1, as_double(full_params)), 0.0);
    trace.check(fmt::format("every h needs the {} multiply-adds of one full head", full_mult_adds),
                column_spread(cost, 2, as_double(full_mult_adds)), 0.0);
}

// Step [causal]: the layer under a causal mask; rng draws the replacement vector of the last token.
void record_causal(Trace& trace, Rng& rng, const Mat& X, const nn::MultiHeadParams& p, std::size_t h,
                   const nn::MultiHeadResult& layer) {
    const std::size_t T = X.shape(0);
    const Mat mask = nn::causal_mask(T);
    const nn::MultiHeadResult causal = with_weights(nn::multi_head_attention(X, X, p, h, &mask), h, T, T);
    trace.step("causal", "Causal multi-head attention: no peeking ahead",
               "head_i = softmax(Q_i K_i^T / sqrt(d_k) + M) V_i,  M_tj = -inf if j > t",
               "A decoder that learns to predict the next token must not see it. Vaswani et al. (2017, section "
               "3.2.3) set the scores of every later position to -inf before the softmax: the mask M holds -inf "
               "above its diagonal and 0 elsewhere. exp(-inf) = 0, so a token's weights spread over itself and "
               "the tokens before it only, and still sum to 1. One mask serves every head. The first token, "
               "\"turn\", can only attend to itself, with weight 1 in every head; the last, \"kitchen\", sees the "
               "whole sentence, so its row is the same as without the mask. The last check changes the vector "
               "of \"kitchen\" and runs the layer again: no earlier output moves.");
    trace.tensor("M", "causal mask, added to every head's scores", mask, sentence, sentence);
    for (std::size_t i = 0; i < h; ++i) {
        const std::string n = std::to_string(i + 1);
        trace.tensor("A_" + n, "softmax(Q_" + n + " K_" + n + "^T / sqrt(d_k) + M)",
                     nn::slice_of(causal.weights, i), sentence, sentence, View::heatmap).axes("query word", "key word");
    }
    trace.tensor("Y", "Concat(head_1, ..., head_h) W^O, causal", causal.output, sentence);
    trace.check("every weight above the diagonal is 0, in every head", weight_above_diagonal(causal.weights), 0.0);
    trace.check("every row of every head's weights sums to 1", row_sum_error(causal.weights), 1e-12);
    trace.check("the output of \"kitchen\" is the same as without the mask",
                max_abs_difference(nn::row_of(causal.output, T - 1), nn::row_of(layer.output, T - 1)), 1e-12);
    trace.check("changing \"kitchen\" leaves the outputs of the earlier tokens unchanged",
                earlier_outputs_moved(rng, X, p, h, mask, causal.output), 1e-12);
}

void lesson_multi_head(Trace& trace, const Config& config) {
    const std::size_t d_model = config.size(param::d_model), h = config.size(param::heads), T = sentence.size();
    Rng rng(config.seed);
    // attn run --input may replace any of these with the user's own (same shapes)
    const Mat X = trace.input("X", rng.normal_mat(T, d_model));
    nn::MultiHeadParams p = draw_params(rng, d_model);
    p.W_Q = trace.input("W_Q", p.W_Q);
    p.W_K = trace.input("W_K", p.W_K);
    p.W_V = trace.input("W_V", p.W_V);
    p.W_O = trace.input("W_O", p.W_O);

    record_inputs(trace, X, h);
    record_params(trace, p, h);
    const LoopForm loop = record_heads(trace, X, p, h);
    const Batched batched = record_batched(trace, X, p, h, loop);
    const nn::MultiHeadResult layer = record_concat(trace, X, p, h, loop, batched);
    record_one_head(trace, X, p, h);
    record_cost(trace, T, d_model);
    record_causal(trace, rng, X, p, h, layer);
}

}  // namespace
}  // namespace multi_head

Lesson multi_head_lesson() {
    using namespace multi_head;
    return make_lesson(6, "multi-head", "Multi-head attention", "Vaswani et al. 2017", {param::d_model, param::heads},
                       limits, time_estimate, lesson_multi_head,
                       {"inputs", "params", "head-1", "heads", "batched", "concat", "one-head", "cost", "causal"});
}

}  // namespace attn
