// Lesson 12: the Transformer, trained. Lesson 11's pre-LN blocks become an encoder-decoder: the
// decoder's blocks gain cross-attention (queries from the decoder, keys and values from the
// encoder), the learning rate warms up, and the model is trained on lesson 9's corpus beside lesson
// 9's two recurrent models, on the same batches in the same order. What it shows: the gradient
// check at initialisation, the race (loss curves, accuracy, accuracy by length, the sequential
// steps and multiply-adds of each model), the cross-attention maps of every head and layer and
// what each head reads over the test set, sentences longer than any seen in training (sinusoidal
// against learned positions), and how one unit in the last place changes a training run.
// T_x / T_y = source / target words, d_model = model width, h = heads, L = blocks of the encoder
// and of the decoder, d_ff = feed-forward width, u = width of lesson 9's GRUs, V = vocabulary.
#include "registry.hpp"
#include "support.hpp"
#include "transformer_race.hpp"
#include "translation.hpp"

#include "core/rng.hpp"
#include "nn/encoder_decoder.hpp"
#include "nn/finite_differences.hpp"
#include "nn/linalg.hpp"
#include "nn/optimizer.hpp"
#include "nn/reductions.hpp"
#include "nn/self_attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attn {

namespace transformer {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

using namespace translation;  // lesson 9's corpus, models, training and scoring (lessons/translation.hpp)

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param epochs{"epochs", 8, 1, 60, "passes over the training set"};
const Param sentences{"sentences", 800, 50, 20000, "sentence pairs in the training set"};
const Param test{"test", 200, 20, 2000, "sentence pairs in the held-out test set"};
const Param width{"width", 16, 4, 64, "width u of lesson 9's GRU models"};
const Param d_model{"d_model", 32, 4, 64,
                    "width of the Transformer (even: the sinusoidal positions; at 2 every layer norm gives +-1)"};
const Param heads{"heads", 4, 1, 8, "attention heads h; must divide d_model"};
const Param layers{"layers", 2, 1, 4, "blocks of the encoder, and of the decoder"};
const Param d_ff{"d_ff", 32, 1, 256, "hidden width of the position-wise feed-forward network"};
const Param warmup{"warmup", 100, 1, 100000, "warm-up steps of the learning rate"};
const Param min_len{"min_len", 3, 3, 20, "fewest source words of a generated sentence"};
const Param max_len{"max_len", 20, 5, 23, "most source words of a generated sentence (the rules make at most 23)"};
const Param long_test{"long_test", 100, 10, 1000, "pairs of the long test set (step [longer])"};
const Param long_len{"long_len", 40, 6, 40,
                     "most source words of the long test set; its fewest is max_len + 1 (its sentences have up to 7 "
                     "phrases)"};
}  // namespace param

std::string limits(const Config& c) {
    if (auto why = even(c, param::d_model); !why.empty()) return why;
    if (auto why = divisible(c, param::d_model, param::heads, 1); !why.empty()) return why;
    if (c.size(param::min_len) > c.size(param::max_len))
        return fmt::format("min_len={} is above max_len={}: no sentence could be generated", c.size(param::min_len),
                           c.size(param::max_len));
    if (c.size(param::long_len) <= c.size(param::max_len))
        return fmt::format("long_len={} must exceed max_len={}: the long test set is longer than any training sentence",
                           c.size(param::long_len), c.size(param::max_len));
    return "";
}

// Microseconds of one sentence pass (forward and backward) of the three models at their defaults
// and an average source length of 11.5, on this project's 2-core machine: the default run (8 epochs
// of 800 pairs and 200 test pairs, greedy decoding of the test set: about 7300 passes) took 8.2 s of
// user time at a load average of 5, 1.1 ms a pass; 1.5 ms on the safe side. Lesson 9's GRUs take
// about half of it (their epochs took 0.14 and 0.29 s, the Transformer's 0.46 s). Steps [longer]
// and [chaos] train the Transformer twice more, and step [longer] decodes the long test set with
// three models: 11 ms a pair of 21 to 40 words (400 pairs took 4.2 s more than 10 at a load of 5).
// The whole default run took 16.7 s of user time at a load of 1.5 to 5 (estimated 23 s).
constexpr double microseconds_per_pass = 1500.0;
constexpr double seconds_per_long_pair = 0.011;

// The work of a pass against the defaults: lesson 9's GRUs grow with width^2 and the lengths, the
// Transformer with layers, d_model (d_model + d_ff) and the lengths; length^2 on the safe side.
double estimated_seconds(const Config& c) {
    const double length = 0.5 * as_double(c.size(param::min_len) + c.size(param::max_len)) / 11.5;
    const double u = as_double(c.size(param::width)) / 16.0, d = as_double(c.size(param::d_model)) / 32.0;
    const double blocks = as_double(c.size(param::layers)) / 2.0;
    const double ff = (d + as_double(c.size(param::d_ff)) / 32.0) / 2.0;
    // lesson 9's two models and the Transformer trained three times (the race, [longer], [chaos])
    const double per_pass = microseconds_per_pass * 1e-6 * length * length * 0.5 * (u * u + 3.0 * blocks * d * ff);
    const double passes = as_double(c.size(param::epochs)) *
                              (as_double(c.size(param::sentences)) + 0.3 * as_double(c.size(param::test))) +
                          2.0 * as_double(c.size(param::test));
    const double long_length = as_double(c.size(param::long_len)) / 40.0;
    const double long_pairs = seconds_per_long_pair * as_double(c.size(param::long_test)) * long_length * long_length *
                              0.5 * (u * u + 2.0 * blocks * d * ff);
    return 0.3 + per_pass * passes + long_pairs;
}

TimeEstimate time_estimate(const Config& c) {
    return {estimated_seconds(c), "training",
            fmt::format("on one core: epochs x (sentences + test) passes of the models, {:.0f} us each at the "
                        "defaults, growing with width^2, layers d_model (d_model + d_ff) and length^2; then the "
                        "long test set, {:.0f} ms a pair",
                        microseconds_per_pass, 1000.0 * seconds_per_long_pair),
            {{&param::epochs, 1.0}, {&param::sentences, 1.0}, {&param::width, 2.0}, {&param::d_model, 2.0},
             {&param::layers, 1.0}, {&param::max_len, 2.0}, {&param::long_test, 1.0}}};
}

// ---------------------------------------------------------------- the Transformer, drawn

// The Transformer's sizes from this lesson's parameters (lessons/translation.hpp draws it).
TransformerSizes sizes_of(const Config& c) {
    return {c.size(param::d_model), c.size(param::heads), c.size(param::layers), c.size(param::d_ff)};
}

using Models = RaceModels;

// Step [models].
void record_models(Trace& trace, Models& m, const Config& c) {
    const std::size_t n_without = parameter_count(m.without), n_with = parameter_count(m.with);
    const std::size_t n_tf = parameter_count(m.transformer);
    trace.step("models", "Three models, one corpus",
               "p(y_i | y_<i, x) = softmax(W_o z_i + b_o),  z_i = Decoder(y_<i, Encoder(x))_i",
               fmt::format(
                   "Lesson 9's two models (a GRU encoder-decoder with one context, and Bahdanau's with additive "
                   "attention, GRUs of width {}) race a Transformer (Vaswani et al. 2017, figure 1) on lesson 9's "
                   "corpus. Its encoder: the source embeddings times sqrt(d_model) plus the sinusoidal positions, "
                   "then {} pre-LN blocks of lesson 11 (self-attention without a mask, the position-wise network; "
                   "Xiong et al. 2020) and a last layer norm. Its decoder: the target words so far, embedded the "
                   "same way, then {} decoder blocks, each with three sub-layers: causal self-attention, "
                   "cross-attention over the encoder's output, the network; a last norm and the output layer. "
                   "d_model = {}, h = {}, d_ff = {}. All three see the same batches of {} pairs in the same order, "
                   "minimise the same cross-entropy per word and clip their gradient to norm {}. Lesson 9's take "
                   "Adam's steps at a constant rate {}; the Transformer at the warmed-up rate of step [schedule], "
                   "with beta2 = 0.98 and eps = 1e-9 (section 5.3). Weights: {} without attention, {} with, {} "
                   "in the Transformer.",
                   c.size(param::width), c.size(param::layers), c.size(param::layers), c.size(param::d_model),
                   c.size(param::heads), c.size(param::d_ff), batch, clip_threshold, adam.learning_rate, n_without,
                   n_with, n_tf));
    const Vec h{as_double(c.size(param::d_model)), as_double(c.size(param::heads)), as_double(c.size(param::layers)),
                as_double(c.size(param::d_ff)),    as_double(c.size(param::warmup)), as_double(batch),
                as_double(n_without),              as_double(n_with),              as_double(n_tf)};
    trace.tensor("hyperparameters", "", h,
                 {"d_model", "heads", "layers", "d_ff", "warmup", "batch", "weights without", "weights with",
                  "weights Transformer"});
}

// Export-only data of step [models] (attn export; never in the golden file): lesson 9's corpus and
// batch orders, each model's weights as drawn, so that another program can train the same three
// models. The orders are the shuffles train_three draws from r.rng, drawn here from a copy.
void export_start(Trace& trace, const RaceStart& r, const Config& c) {
    export_corpus(trace, r.corpus);
    export_orders(trace, epoch_orders(r.rng, r.corpus.train.size(), c.size(param::epochs)));
    export_weights(trace, "without", r.start.without);
    export_weights(trace, "with", r.start.with);
    export_weights(trace, "transformer", r.start.transformer);
}

// ---------------------------------------------------------------- cross-attention

// Cross-attention recomputed head by head with lesson 4's scaled_dot_product_attention, the heads
// concatenated and mixed by W^O: the independent form of nn::cross_attention.
Mat cross_attention_by_heads(const Mat& Y, const Mat& H, const nn::MultiHeadParams& p, std::size_t heads) {
    const std::size_t d = Y.shape(1), d_k = d / heads;
    Mat concat = nn::zeros(Y.shape(0), d);
    for (std::size_t i = 0; i < heads; ++i) {
        const std::size_t first = i * d_k, last = first + d_k;
        const Mat Q = nn::matmul(Y, nn::columns_of(p.W_Q, first, last), "Y W_i^Q");
        const Mat K = nn::matmul(H, nn::columns_of(p.W_K, first, last), "H W_i^K");
        const Mat V = nn::matmul(H, nn::columns_of(p.W_V, first, last), "H W_i^V");
        nn::set_columns(concat, first, nn::scaled_dot_product_attention(Q, K, V).output);
    }
    return nn::matmul(concat, p.W_O, "Concat W^O");
}

// How many of t_y queries a causal mask over t_x keys hides the last key from: aligned to the top
// left (key j hidden from query i when j > i) and to the bottom right (j > i + t_x - t_y, as lesson
// 13's cache aligns it), for t_x >= t_y.
std::pair<std::size_t, std::size_t> hidden_last_key(std::size_t t_y, std::size_t t_x) {
    std::size_t top_left = 0, bottom_right = 0;
    for (std::size_t i = 0; i < t_y; ++i) {
        top_left += t_x - 1 > i ? 1 : 0;
        bottom_right += t_x - 1 > i + (t_x - t_y) ? 1 : 0;
    }
    return {top_left, bottom_right};
}

// Step [cross-attention]: the first decoder block of the untrained Transformer on "pick up the red
// box" -> "lal dibba uthao".
void record_cross_attention(Trace& trace, const nn::EncoderDecoder& m, const Pair& pickup) {
    const Mat X = nn::transformer_inputs(m.E_src, pickup.src);
    const Mat H = nn::transformer_stack(nn::BlockKind::pre_ln, X, m.encoder, m.encoder_norm, m.heads, nullptr).output;
    const std::vector<std::size_t> in = decoder_inputs(pickup);
    const nn::DecoderBlockForward f =
        nn::decoder_block(nn::transformer_inputs(m.E_tgt, in), H, m.decoder[0], m.heads, nn::causal_mask(in.size()));
    const Mat by_heads = cross_attention_by_heads(f.norm_2.output, H, m.decoder[0].cross_attention, m.heads);
    const auto hidden = hidden_last_key(in.size(), pickup.src.size());
    trace.step("cross-attention", "Cross-attention: the decoder asks, the encoder answers",
               "CrossAttention(Y, H) = Concat(head_1..head_h) W^O,  head_i = softmax((Y W_i^Q)(H W_i^K)^T / sqrt(d_k)) "
               "H W_i^V",
               fmt::format(
                   "Lesson 6's multi-head attention with its two inputs apart: the queries come from the decoder, "
                   "the keys and values from the encoder's output (Vaswani et al. 2017, section 3.2.3: \"This "
                   "allows every position in the decoder to attend over all positions in the input sequence\"). It "
                   "is Bahdanau et al. 2015's context c_i, computed for all target positions at once and with h "
                   "heads: the weights of head k form a T_y x T_x matrix, here {} x {}, not square. No mask: the "
                   "source is known whole; only the decoder's self-attention hides the future. Shown: the first "
                   "decoder block of the untrained Transformer, its queries LN_2 of the target stream of "
                   "\"<sos> lal dibba uthao\", its keys and values the encoder's output on \"pick up the red box\"; "
                   "head 1's weights are near-flat at initialisation. A causal mask here would hide source words "
                   "for no reason, and which ones depends on where it is aligned: aligned to the top left (key j "
                   "hidden from query i when j > i) it hides '{}', the last source word, from {} of the {} target "
                   "positions; aligned to the bottom right (j > i + T_x - T_y, as lesson 13's cache aligns it) "
                   "from {} of them.",
                   in.size(), pickup.src.size(), pickup_src.back(), hidden.first, in.size(), hidden.second));
    trace.tensor("H", "the encoder's output, keys and values come from it", H, pickup_src);
    trace.tensor("weights_head1", "softmax(Q_1 K_1^T / sqrt(d_k))", nn::slice_of(f.cross.weights, 0),
                 {"<sos>", "lal", "dibba", "uthao"}, pickup_src, View::heatmap)
        .axes("decoder position (query)", "source word (key)");
    trace.tensor("output", "CrossAttention(LN_2(R_1), H)", f.cross.output, {"<sos>", "lal", "dibba", "uthao"});
    trace.check("it equals the heads computed one by one by lesson 4's attention, concatenated, times W^O",
                nn::max_abs_of(Mat(f.cross.output - by_heads)), 1e-12);
    trace.check("every row of every head's weights sums to 1 over the source words", row_sum_error(f.cross.weights),
                1e-12);
    trace.check("no weight is 0, above the diagonal included: cross-attention has no mask",
                count_at_most(std::vector<double>(f.cross.weights.begin(), f.cross.weights.end()), 0.0), 0.0);
}

// ---------------------------------------------------------------- the schedule

// Step [schedule].
void record_schedule(Trace& trace, const Config& c, std::size_t total_steps) {
    const std::size_t d = c.size(param::d_model), w = c.size(param::warmup);
    std::vector<std::size_t> at = {1, 2, std::max<std::size_t>(1, w / 2), w, w + 1, 2 * w, 4 * w, total_steps};
    Vec lr = xt::empty<double>({at.size()});
    std::vector<std::string> labels;
    for (std::size_t k = 0; k < at.size(); ++k) {
        lr(k) = nn::warmup_learning_rate(at[k], d, w);
        labels.push_back(fmt::format("step {}", at[k]));
    }
    const double peak = 1.0 / std::sqrt(as_double(d) * as_double(w));
    const double first = 1.0 / (std::sqrt(as_double(d)) * as_double(w) * std::sqrt(as_double(w)));
    trace.step("schedule", "The learning rate warms up, then decays",
               "lr(s) = d_model^-0.5 min(s^-0.5, s warmup^-1.5),  s = 1, 2, ...",
               fmt::format(
                   "Vaswani et al. 2017 (section 5.3) raise the rate linearly for the first warmup = {} steps and "
                   "then lower it with the inverse square root of the step. Early on Adam's second moment v is an "
                   "average of a few squared gradients and divides by too little; large steps then can throw a "
                   "post-LN model off (Xiong et al. 2020 show pre-LN blocks need less warm-up). The steps count from "
                   "1: at s = 1 the rate is d^-0.5 w^-1.5 = {:.3g}, not 0 (a step counted from 0 wastes a batch and "
                   "shifts the peak). Both branches meet at s = warmup, the peak d^-0.5 w^-0.5 = {:.4g}. This run "
                   "takes {} steps.",
                   w, first, peak, total_steps));
    trace.tensor("learning_rate", "lr(s)", lr, labels, {}, View::bars);
    trace.check("the peak, at s = warmup, is d_model^-0.5 warmup^-0.5", std::abs(lr(3) - peak) / peak, 1e-15);
    trace.check("the first step's rate is d_model^-0.5 warmup^-1.5, not 0", std::abs(lr(0) - first) / first, 1e-15);
    trace.check("during the warm-up the rate grows linearly: lr(2) = 2 lr(1)",
                w >= 2 ? std::abs(lr(1) - 2.0 * lr(0)) / lr(1) : 0.0, 1e-15);
}

// ---------------------------------------------------------------- the gradients

// Step [gradients]: one entry of every trained tensor of the Transformer (transformer_gradient_check).
void record_gradients(Trace& trace, const nn::EncoderDecoder& m, const Pair& p) {
    const GradientCheck c = transformer_gradient_check(m, p);
    trace.step("gradients", "The Transformer's gradients, checked before training",
               "dL/dw ~ (L(w + h) - L(w - h)) / 2h,  h = 1e-6",
               fmt::format(
                   "Training trusts the gradients, so they are checked first, at initialisation, on \"turn off the "
                   "lights\" (loss {:.4f}). The backward pass is assembled from the parts' own "
                   "(nn/encoder_decoder.cpp): the output layer by hand (dz = p - onehot(y)), the last norm, each "
                   "decoder block in reverse (the network, LN_3, cross-attention's backward, whose keys and values "
                   "send their gradient to the encoder's output H, LN_2, the causal self-attention, LN_1), then the "
                   "encoder stack of lesson 11 from the sum of what every decoder block sent H, and the embeddings row "
                   "by row (times sqrt(d_model)). One weight of each of the {} tensors (the one with the largest "
                   "gradient) is moved by +-h and the loss recomputed. The tolerance is lesson 8's: 100 eps max(1, "
                   "|L|) / h = {:.2g}.",
                   c.loss, c.names.size(), c.tolerance));
    trace.tensor("gradients", "analytic, numeric, error", c.table, c.names, {"analytic", "numeric", "error"})
        .foreign_tolerance(c.tolerance, c.tolerance, central_difference_noise());
    trace.check("the Transformer's backward pass matches central differences on every tensor", c.worst, c.tolerance);
}

// ---------------------------------------------------------------- training: the race

// ", last epoch 0.14 s, 0.29 s, 0.46 s (without, with, Transformer)": wall time, for the progress line only.
std::string epoch_times(const Mat& seconds, std::size_t epoch) {
    if (epoch < 2) return "";
    return fmt::format(", last epoch {:.2f} s, {:.2f} s, {:.2f} s (without, with, Transformer)", seconds(epoch - 2, 0),
                       seconds(epoch - 2, 1), seconds(epoch - 2, 2));
}

Race train_three(Trace& trace, Rng& rng, const Corpus& c, const Models& start, const Config& config) {
    const std::size_t epochs = config.size(param::epochs);
    auto a = trainer(start.without), b = trainer(start.with);
    auto t = trainer(start.transformer);
    Race out;
    out.curves = nn::zeros(epochs + 1, 6);
    out.seconds = nn::zeros(epochs, 3);
    using Clock = std::chrono::steady_clock;
    const auto timed = [&](std::size_t epoch, std::size_t model, auto&& work) {
        const Clock::time_point start = Clock::now();
        const double loss = work();
        out.seconds(epoch - 1, model) += std::chrono::duration<double>(Clock::now() - start).count();
        return loss;
    };
    const auto record = [&](std::size_t row, double ta, double tb, double tt) {
        const std::array<double, 6> v = {ta, mean_loss(a.model, c.test), tb, mean_loss(b.model, c.test),
                                         tt, mean_loss(t.model, c.test)};
        for (std::size_t k = 0; k < 6; ++k) out.curves(row, k) = v[k];
    };
    record(0, mean_loss(a.model, c.train), mean_loss(b.model, c.train), mean_loss(t.model, c.train));
    std::vector<std::size_t> order(c.train.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
        shuffle_epoch(rng, order);
        std::array<double, 3> loss{}, words{};
        for (std::size_t first = 0; first < order.size(); first += batch) {
            const std::size_t last = std::min(order.size(), first + batch);
            loss[0] += timed(epoch, 0, [&] { return train_batch(a, c.train, order, first, last, words[0], adam); });
            loss[1] += timed(epoch, 1, [&] { return train_batch(b, c.train, order, first, last, words[1], adam); });
            const nn::AdamSettings scheduled = transformer_adam(static_cast<std::size_t>(t.steps) + 1, config);
            loss[2] += timed(epoch, 2, [&] { return train_batch(t, c.train, order, first, last, words[2], scheduled); });
            if ((first / batch) % 8 == 0)
                trace.progress(fmt::format("training, epoch {} of {}: {} of {} sentences{}", epoch, epochs, last,
                                           order.size(), epoch_times(out.seconds, epoch)));
        }
        record(epoch, loss[0] / words[0], loss[1] / words[1], loss[2] / words[2]);
    }
    out.trained = {a.model, b.model, t.model};
    out.steps = t.steps;
    out.clipped = {a.clipped, b.clipped, t.clipped};
    return out;
}

// Step [race].
void record_race(Trace& trace, const Race& r) {
    const std::size_t E = r.curves.shape(0) - 1;
    trace.step("race", "The race: loss curves",
               "L = -(1/N) sum_i log p(y_i | y_<i, x), per target word, train and test",
               fmt::format(
                   "All three start near a uniform guess over the target words. After {} epochs ({:.0f} steps) the "
                   "test loss is {:.3f} without attention, {:.3f} with (Bahdanau) and {:.3f} for the Transformer; "
                   "after epoch 1 it was {:.3f}, {:.3f} and {:.3f}. Lesson 9's models take steps of rate 0.01 from "
                   "the first batch; the Transformer's rate climbs to its peak over the warm-up. Row 0 is before "
                   "training; later "
                   "training losses are means over the epoch's batches while the weights moved, test losses are "
                   "measured at the epoch's end. Clipping acted on {:.0f}, {:.0f} and {:.0f} of the steps. Which "
                   "model ends lowest is what this training reached at this seed and size, not an identity, so it "
                   "is reported rather than checked. The wall time of each model's epoch is shown while it trains "
                   "(on a terminal) and never recorded, so that two runs export the same bytes.",
                   E, r.steps, r.curves(E, 1), r.curves(E, 3), r.curves(E, 5), r.curves(1, 1), r.curves(1, 3),
                   r.curves(1, 5), r.clipped[0], r.clipped[1], r.clipped[2]));
    trace.tensor("losses", "nats per target word", r.curves, numbered("epoch ", 0, E + 1),
                 {"without, train", "without, test", "with, train", "with, test", "Transformer, train",
                  "Transformer, test"},
                 View::plot)
        .foreign_trained(decoded_with_race());
    // the three models as trained (attn export only): what the later steps and lesson 13 compute from them
    export_weights(trace, "trained.without", r.trained.without, "trained weight");
    export_weights(trace, "trained.with", r.trained.with, "trained weight");
    export_weights(trace, "trained.transformer", r.trained.transformer, "trained weight");
}

// ---------------------------------------------------------------- the cost of a pair

// Step [cost].
void record_cost(Trace& trace, const Config& c, const Corpus& corpus, const Models& m) {
    double T_x = 0.0, T_y = 0.0;
    for (const Pair& p : corpus.train) {
        T_x += as_double(p.src.size());
        T_y += as_double(p.tgt.size() + 1);
    }
    T_x /= as_double(corpus.train.size());
    T_y /= as_double(corpus.train.size());
    const Mat cost = pass_costs(c.size(param::width), sizes_of(c),
                                {parameter_count(m.without), parameter_count(m.with), parameter_count(m.transformer)},
                                T_x, T_y, as_double(corpus.target.words.size()));
    trace.step("cost", "Sequential steps and multiply-adds of one sentence pair",
               "GRU step: 3u(n + u);  attention: 2 T_q T_k d;  projection: T d^2",
               fmt::format(
                   "Lesson 7 measured why attention replaced recurrence; here the three trained models are counted "
                   "on the training set's average pair ({:.1f} source words, {:.1f} target positions with <eos>), "
                   "teacher-forced as in training. A GRU must finish position t before t + 1: T_x + T_y = {:.1f} "
                   "steps one after the other (the two directions of Bahdanau's encoder run side by side). The "
                   "Transformer's positions are all computed at once within a block; only its {:.0f} blocks follow "
                   "each other, whatever the length (greedy decoding, which needs its own words, is sequential in "
                   "T_y for every model). Its multiply-adds: {:.3g}, against {:.3g} and {:.3g}; it buys its "
                   "parallelism with T^2 d terms and wider projections, which at these lengths and widths cost "
                   "little.",
                   T_x, T_y, T_x + T_y, cost(2, 0), cost(2, 1), cost(0, 1), cost(1, 1)));
    trace.tensor("cost", "per teacher-forced pair", cost, {"without attention", "with attention", "Transformer"},
                 {"sequential steps", "multiply-adds", "weights"});
}

// ---------------------------------------------------------------- accuracy

// Step [accuracy].
void record_accuracy(Trace& trace, const Corpus& c, const std::array<Scores, 3>& s) {
    std::vector<std::string> shown;
    for (std::size_t k = 0; k < 2; ++k)
        shown.push_back(fmt::format("{} | Transformer: \"{}\"", pair_text(c, c.test[k]), joined(c.target, s[2].outputs[k])));
    trace.step("accuracy", "Translating the test set: exact matches and word accuracy",
               "y_i = argmax_w p(w | y_<i, x), fed back, until <eos>",
               fmt::format(
                   "Greedy decoding as in lesson 9: each model feeds back its own most likely word until <eos>. The "
                   "Transformer's decoder reruns on <sos> and its words so far at every step (its causal mask makes "
                   "the earlier positions' outputs what they were). First test pairs: {}. Exact translations: {:.3f} "
                   "without attention, {:.3f} with, {:.3f} for the Transformer; free-running word accuracy {:.3f}, "
                   "{:.3f} and {:.3f}; teacher-forced {:.3f}, {:.3f} and {:.3f}. Reported, not checked: the ranking "
                   "is what this training reached.",
                   fmt::join(shown, "; "), s[0].exact, s[1].exact, s[2].exact, s[0].free_tokens, s[1].free_tokens,
                   s[2].free_tokens, s[0].teacher_forced, s[1].teacher_forced, s[2].teacher_forced));
    Mat table = xt::empty<double>({std::size_t{3}, std::size_t{3}});
    for (std::size_t k = 0; k < 3; ++k) nn::set_row(table, k, Vec{s[k].teacher_forced, s[k].free_tokens, s[k].exact});
    trace.tensor("accuracy", "share right on the test set", table,
                 {"without attention", "with attention", "Transformer"},
                 {"teacher-forced words", "free-running words", "exact sentences"})
        .foreign_trained(decoded_with_race());
}

// Step [length]: the test set by source length, in about five bins of equal width.
void record_length(Trace& trace, const Corpus& c, const std::array<Scores, 3>& s, std::size_t min_len,
                   std::size_t max_len) {
    const std::size_t width = std::max<std::size_t>(1, (max_len - min_len + 1) / 5);
    const std::size_t bins = (max_len - min_len) / width + 1;
    Mat table = nn::zeros(bins, 6);
    Vec count = nn::zeros(bins), words = nn::zeros(bins);
    for (std::size_t k = 0; k < c.test.size(); ++k) {
        const std::size_t b = (c.test[k].src.size() - min_len) / width;
        count(b) += 1.0;
        words(b) += as_double(c.test[k].tgt.size() + 1);
        for (std::size_t m = 0; m < 3; ++m) {
            table(b, m) += s[m].outputs[k] == c.test[k].tgt ? 1.0 : 0.0;
            table(b, 3 + m) += right_positions(s[m].outputs[k], c.test[k].tgt);
        }
    }
    std::vector<std::string> labels;
    for (std::size_t b = 0; b < bins; ++b) {
        const std::size_t first = min_len + width * b, last = std::min(max_len, first + width - 1);
        labels.push_back(first == last ? fmt::format("T_x {}", first) : fmt::format("T_x {}-{}", first, last));
        for (std::size_t col = 0; col < 6; ++col) table(b, col) /= std::max(1.0, col < 3 ? count(b) : words(b));
    }
    const std::size_t L = bins - 1;
    trace.step("length", "Accuracy against sentence length, three models",
               "exact = share of sentences right; words = share of positions right (free-running)",
               fmt::format(
                   "Lesson 9's measure with the Transformer added. For the longest sources ({}, {:.0f} pairs) exact "
                   "translations are {:.2f} without attention, {:.2f} with and {:.2f} for the Transformer; word "
                   "accuracy {:.2f}, {:.2f} and {:.2f}. Each bin holds few test pairs (the counts are below), so "
                   "neighbouring bins differ by chance too.",
                   labels.back(), count(L), table(L, 0), table(L, 1), table(L, 2), table(L, 3), table(L, 4),
                   table(L, 5)));
    trace.tensor("by_length", "share right, test set", table, labels,
                 {"exact, without", "exact, with", "exact, Transformer", "words, without", "words, with",
                  "words, Transformer"},
                 View::plot)
        .foreign_trained(decoded_with_race());
    trace.tensor("pairs", "test pairs per bin", count, labels, {}, View::bars);
}

// ---------------------------------------------------------------- cross-attention maps

// Of the target words of "turn off the lights" (not <eos>), the share whose largest weight lies
// on their source partner.
double alignment_score(const Mat& weights) {
    double hits = 0.0;
    for (std::size_t i = 0; i < lights_partner.size(); ++i) {
        std::size_t best = 0;
        for (std::size_t j = 1; j < weights.shape(1); ++j)
            if (weights(i, j) > weights(i, best)) best = j;
        hits += best == lights_partner[i] ? 1.0 : 0.0;
    }
    return hits / as_double(lights_partner.size());
}

// Step [maps].
void record_maps(Trace& trace, const Models& m, const Pair& lights, const Pair& pickup) {
    const nn::EncoderDecoderPass pass =
        nn::encoder_decoder_forward(m.transformer, lights.src, decoder_inputs(lights), decoder_outputs(lights));
    const std::size_t L = pass.cross_weights.size(), h = m.transformer.heads;
    Mat score = xt::empty<double>({L, h});
    double sums = 0.0;
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t k = 0; k < h; ++k) score(l, k) = alignment_score(nn::slice_of(pass.cross_weights[l], k));
    for (const auto& w : pass.cross_weights) sums = std::max(sums, row_sum_error(w));
    const double bahdanau = alignment_score(teacher_forced_weights(m.with, lights));
    trace.step("maps", "Cross-attention maps, per layer and head, after training",
               "A^(l,k) = softmax((LN_2(R_1^l) W_k^Q)(H W_k^K)^T / sqrt(d_k)),  T_y x T_x",
               fmt::format(
                   "Lesson 9's alignment of \"turn off the lights\" -> \"lait band karo\", now in every head of "
                   "every decoder block of the trained Transformer, teacher-forced. Each head's map is its own "
                   "T_y x T_x matrix. The alignment score of a head is the share of the three target words whose "
                   "largest weight lies on their source partner (lait <- lights, band <- off, karo <- turn): by "
                   "layer and head below; lesson 9's model with attention, trained in this run, scores {:.2f}. "
                   "Heads need not align: one head may read the verb for every word, another the positions. Which "
                   "head aligns is what this training reached, so the scores are reported, not checked; what is "
                   "checked holds at every seed. Then the many-to-one pair \"pick up the red box\" -> \"lal dibba "
                   "uthao\", whose uthao has two source partners.",
                   bahdanau));
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t k = 0; k < h; ++k)
            trace.tensor(fmt::format("lights_layer{}_head{}", l + 1, k + 1), "A^(l,k), teacher-forced",
                         nn::slice_of(pass.cross_weights[l], k), with_eos(lights_tgt), lights_src, View::heatmap)
                .axes("target word", "source word")
                .foreign_trained(decoded_with_race());
    const nn::EncoderDecoderPass many =
        nn::encoder_decoder_forward(m.transformer, pickup.src, decoder_inputs(pickup), decoder_outputs(pickup));
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t k = 0; k < h; ++k)
            trace.tensor(fmt::format("pickup_layer{}_head{}", l + 1, k + 1), "A^(l,k), teacher-forced",
                         nn::slice_of(many.cross_weights[l], k), with_eos(pickup_tgt), pickup_src, View::heatmap)
                .axes("target word", "source word")
                .foreign_trained(decoded_with_race());
    for (const auto& w : many.cross_weights) sums = std::max(sums, row_sum_error(w));
    trace.tensor("alignment", "share of target words on their partner", score, numbered("layer ", 1, L),
                 numbered("head ", 1, h))
        .foreign_trained(decoded_with_race());
    trace.check("every row of every head's map sums to 1 over the source words", sums, 1e-12);
}

// ---------------------------------------------------------------- chaos

// Every trained number moved up by one unit in the last place (0 becomes the smallest subnormal).
nn::EncoderDecoder moved_one_ulp(nn::EncoderDecoder m) {
    for (const nn::Block& b : nn::blocks(m))
        for (std::size_t k = 0; k < b.size; ++k)
            b.data[k] = std::nextafter(b.data[k], std::numeric_limits<double>::infinity());
    return m;
}

// |a - b| / |b| over all trained numbers together.
double relative_distance(nn::EncoderDecoder a, nn::EncoderDecoder b) {
    const std::vector<nn::Block> x = nn::blocks(a), y = nn::blocks(b);
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t k = 0; k < x[i].size; ++k) x[i].data[k] -= y[i].data[k];
    return nn::global_norm(x) / nn::global_norm(y);
}

// Step [chaos].
void record_chaos(Trace& trace, const Race& r, const Retrained& moved, const std::array<Scores, 2>& s) {
    const std::size_t E = moved.test_loss.size() - 1;
    Mat loss = xt::empty<double>({E + 1, std::size_t{3}});
    std::size_t apart = E + 1;  // the first epoch whose test losses differ by more than 1e-6
    for (std::size_t e = 0; e <= E; ++e) {
        loss(e, 0) = r.curves(e, 5);
        loss(e, 1) = moved.test_loss(e);
        loss(e, 2) = std::abs(loss(e, 0) - loss(e, 1));
        if (apart > E && loss(e, 2) > 1e-6) apart = e;
    }
    const double distance = relative_distance(moved.model, r.trained.transformer);
    trace.step("chaos", "Chaos, honestly: one unit in the last place",
               "w'_0 = nextafter(w_0, +inf) for every weight; same batches, same order, same arithmetic",
               fmt::format(
                   "Training is a long chain of roundings: each Adam step depends on every bit of the weights "
                   "before it, and a difference in the last bit grows from step to step. So the Transformer is "
                   "trained again from its initial weights each moved by one unit in the last place (a relative "
                   "change of about 1e-16), on the same batches in the same order. Before training the test losses "
                   "agree to {:.1e}. {} The trained weights end {:.2g} apart (relative, all weights together). Exact "
                   "translations: {:.3f} and {:.3f}; word accuracy {:.3f} and {:.3f}. What is reproducible bit for "
                   "bit is this program's arithmetic, on any machine (the Determinism section of the README); what "
                   "is robust is the outcome measured on the test set, within the spread of such runs. That is "
                   "also why a golden file of a training run can only be matched by the same operations in the "
                   "same order: another correct implementation (PyTorch, another order of a sum) is a perturbation "
                   "like this one.",
                   loss(0, 2),
                   apart <= E ? fmt::format("The test losses first differ by more than 1e-6 after epoch {}.", apart)
                              : std::string("After every epoch the test losses still agree to 1e-6."),
                   distance, s[0].exact, s[1].exact, s[0].free_tokens, s[1].free_tokens));
    trace.tensor("test_loss", "nats per target word", loss, numbered("epoch ", 0, E + 1),
                 {"as trained", "moved one ulp", "|difference|"})
        .foreign_shown(trained_here());
    trace.tensor("outcome", "test set, greedy", Mat{{s[0].exact, s[0].free_tokens}, {s[1].exact, s[1].free_tokens}},
                 {"as trained", "moved one ulp"}, {"exact sentences", "free-running words"})
        .foreign_shown(trained_here());
    // one ulp of every weight moves the loss by about eps sum_w |w dL/dw|, far below 1e-10 of it for
    // these models; a perturbation much larger than one ulp (1e-8) would fail this
    trace.check("before training, one ulp changes the test loss by less than 1e-10 of it", loss(0, 2) / loss(0, 0),
                1e-10);
}

// ---------------------------------------------------------------- every head over the test set

// The mean over the target words of a set (not <eos>) of the weight each puts on its source
// partners (summed when two), from teacher-forced maps T_y+1 x T_x given by `weights_of`.
template <class Maps>
double partner_weight(const std::vector<Pair>& pairs, const Maps& weights_of) {
    double total = 0.0, words = 0.0;
    for (std::size_t n = 0; n < pairs.size(); ++n) {
        const Mat A = weights_of(n);
        for (std::size_t i = 0; i < pairs[n].tgt.size(); ++i) {
            for (std::size_t j : pairs[n].partners[i]) total += A(i, j);
            words += 1.0;
        }
    }
    return total / words;
}

// Step [heads]: per layer and head of the trained Transformer, the weight on the partners over the
// whole test set; lesson 9's model with attention and a uniform map beside them.
void record_heads(Trace& trace, const Models& m, const Corpus& c) {
    const std::size_t L = m.transformer.decoder.size(), h = m.transformer.heads;
    std::vector<nn::EncoderDecoderPass> passes;
    for (const Pair& p : c.test) passes.push_back(nn::encoder_decoder_forward(m.transformer, p.src, decoder_inputs(p),
                                                                              decoder_outputs(p)));
    Mat score = xt::empty<double>({L, h});
    std::size_t best_l = 0, best_k = 0;
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t k = 0; k < h; ++k) {
            score(l, k) = partner_weight(c.test, [&](std::size_t n) { return nn::slice_of(passes[n].cross_weights[l], k); });
            if (score(l, k) > score(best_l, best_k)) best_l = l, best_k = k;
        }
    const double bahdanau = partner_weight(c.test, [&](std::size_t n) { return teacher_forced_weights(m.with, c.test[n]); });
    const double uniform = partner_weight(c.test, [&](std::size_t n) {
        const Pair& p = c.test[n];
        return Mat(xt::ones<double>({p.tgt.size() + 1, p.src.size()}) / as_double(p.src.size()));
    });
    std::size_t aligned = 0;  // heads with more than half of their weight on the partners
    for (double v : score) aligned += v > 0.5 ? 1 : 0;
    trace.step("heads", "What each head reads, over the whole test set",
               "a^(l,k) = (1/N) sum_pairs sum_i sum_{j in partners(i)} A^(l,k)_ij,  N = target words",
               fmt::format(
                   "One sentence is an anecdote. The corpus generator knows which source words each target word "
                   "translates (its partners: lait <- lights; band <- off and karo <- turn, crossed; uthao <- pick "
                   "and up), so every head can be measured on all {} test pairs: the mean weight a target word puts "
                   "on its partners, teacher-forced. A uniform map would put {:.3f} there (one over the source "
                   "length, on average); lesson 9's model with attention, whose one map must carry the whole "
                   "alignment, puts {:.3f}. The Transformer's heads put between {:.3f} and {:.3f}, the best being "
                   "layer {} head {}; {} of the {} put more than half. Seed 003 says that heads \"capture different "
                   "dependencies\": a head's output is only one of h slices mixed by W^O, and the residual stream "
                   "and the self-attention of the decoder also carry the source, so no single head has to align. "
                   "Which head does what is what this training reached, so the scores are reported; what is checked "
                   "is that the partners themselves are right, word by word against the lexicon.",
                   c.test.size(), uniform, bahdanau, xt::amin(score)(), score(best_l, best_k), best_l + 1, best_k + 1,
                   aligned, L * h));
    trace.tensor("partner_weight", "a^(l,k), test set", score, numbered("layer ", 1, L), numbered("head ", 1, h),
                 View::heatmap)
        .axes("decoder block", "head")
        .foreign_trained(decoded_with_race());
    trace.tensor("references", "the same measure", Vec{bahdanau, uniform},
                 {"lesson 9, with attention", "uniform map"}, {}, View::bars)
        .foreign_trained(decoded_with_race());
    trace.check("every test target word's partners are source words it translates (the lexicon, verbs crossed)",
                as_double(wrong_partners(c, c.test)), 0.0);
}

// ---------------------------------------------------------------- longer than anything seen

// The long test set and the Transformer with learned positions, from a second generator seeded by
// the seed: the race's draws stay what they were.
struct LongRun {
    std::vector<Pair> pairs;
    nn::EncoderDecoder start;    // the race's Transformer as drawn, plus learned position tables
    Retrained learned;           // it, trained on the race's batches
};

LongRun long_run(const Config& config, RaceStart& r, Trace& trace) {
    LongStart drawn = long_start(config, r);
    LongRun out{std::move(drawn.pairs), std::move(drawn.learned), {}};
    out.learned =
        retrain_transformer(r.rng, r.corpus, out.start, config, progress_on(trace, "the Transformer with learned positions"));
    return out;
}

// Step [longer]: accuracy by source length over the test set and the long one, for lesson 9's
// model with attention and the Transformer with sinusoidal and with learned positions.
void record_longer(Trace& trace, const Config& config, const Corpus& c, const LongRun& run, double sinusoidal_loss,
                   const std::array<Scores, 3>& test, const std::array<Scores, 3>& longer) {
    const LengthBins bins = race_length_bins(config);
    const std::size_t first_long = bins.first_long;
    const ByLength by = accuracy_by_length(bins, c.test, test, run.pairs, longer);
    Mat table = xt::empty<double>({bins.count(), std::size_t{6}});  // exact, then words, of the three
    for (std::size_t b = 0; b < bins.count(); ++b)
        for (std::size_t m = 0; m < 3; ++m) table(b, m) = by.exact(b, m), table(b, 3 + m) = by.words(b, m);
    const std::vector<std::string>& labels = bins.labels;
    const auto [train_src, train_in] = longest(c.train);
    const std::size_t long_src = longest(run.pairs).first, shortest_long = shortest_source(run.pairs);
    const std::size_t E = run.learned.test_loss.size() - 1;
    trace.step("longer", "Longer than anything seen in training",
               "PE(t, 2i) = sin(t / 10000^(2i/d)), PE(t, 2i+1) = cos(..)  against  P[t], learned",
               fmt::format(
                   "Vaswani et al. 2017 (section 3.5) chose sinusoids because they \"may allow the model to "
                   "extrapolate to sequence lengths longer than the ones encountered during training\", and found "
                   "learned positions (Gehring et al. 2017) as good on their test set; seed 001 speaks of recurrent "
                   "models failing on sentences of more than 30 words. So the Transformer is trained a second time "
                   "on the race's batches, from the same initial weights with a learned table P of positions in "
                   "place of the sinusoids, and the three models translate {} new pairs of {} to {} source words, "
                   "drawn with up to 7 phrases, every length as often, while no training sentence has more than {} (decoder inputs: {}). "
                   "The learned tables' rows beyond those lengths never receive a gradient: they stay as drawn, "
                   "noise the model never saw. In distribution, after {} epochs, the learned model's test loss is "
                   "{:.3f} (sinusoidal {:.3f}) and it translates {:.3f} of the test set exactly (sinusoidal {:.3f}). "
                   "On the long set, exact translations: GRU with attention {:.3f}, Transformer sinusoidal {:.3f}, "
                   "learned {:.3f}; word accuracy {:.3f}, {:.3f} and {:.3f}. From the longest training bin ({}) to "
                   "the first longer one ({}), word accuracy goes from {:.3f} to {:.3f} for the GRU with attention, "
                   "{:.3f} to {:.3f} with sinusoids and {:.3f} to {:.3f} with learned positions. This is one run "
                   "at one seed and one small model, reported rather than checked: it measures whether the "
                   "sinusoids' promise held here, not whether it can.",
                   run.pairs.size(), shortest_long, long_src, train_src, train_in, E, run.learned.test_loss(E),
                   sinusoidal_loss, test[2].exact, test[1].exact, longer[0].exact,
                   longer[1].exact, longer[2].exact, longer[0].free_tokens, longer[1].free_tokens,
                   longer[2].free_tokens, labels[first_long - 1], labels[first_long], table(first_long - 1, 3),
                   table(first_long, 3), table(first_long - 1, 4), table(first_long, 4), table(first_long - 1, 5),
                   table(first_long, 5)));
    trace.tensor("by_length", "share right; rows from " + labels[first_long] + " on are longer than any training source",
                 table, labels,
                 {"exact, GRU + attention", "exact, sinusoidal", "exact, learned", "words, GRU + attention",
                  "words, sinusoidal", "words, learned"},
                 View::plot)
        .foreign_shown(trained_here());
    trace.tensor("pairs", "test pairs per bin (test set, then the long set)", by.pairs, labels, {}, View::bars);
    trace.check("every long test source is longer than every training source",
                as_double(lengths_shared(c.train, run.pairs)), 0.0);
    trace.check("learned position rows past the training lengths are exactly as drawn (no gradient reaches them)",
                untrained_rows_moved(run.learned.model, run.start, c.train), 0.0);
    trace.check("the long pairs' partners are source words they translate", as_double(wrong_partners(c, run.pairs)),
                0.0);
}

// ---------------------------------------------------------------- the lesson

void lesson_transformer(Trace& trace, const Config& config) {
    const std::size_t min_len = config.size(param::min_len), max_len = config.size(param::max_len);
    RaceStart r = race_start(config);
    Corpus& corpus = r.corpus;
    const Pair lights = pair_of(corpus, lights_src, lights_tgt), pickup = pair_of(corpus, pickup_src, pickup_tgt);
    record_models(trace, r.start, config);
    export_start(trace, r, config);
    record_cross_attention(trace, r.start.transformer, pickup);
    const std::size_t steps = config.size(param::epochs) * ((corpus.train.size() + batch - 1) / batch);
    record_schedule(trace, config, steps);
    record_gradients(trace, r.start.transformer, lights);
    trace.need_next_step();  // a run asked for the steps so far (an exercise's check) ends before training
    const std::shared_ptr<const Race> trained = trained_race(config, trace);
    const Race& race = *trained;
    record_race(trace, race);
    record_cost(trace, config, corpus, race.trained);
    const std::size_t max_words = 2 * max_len + 4;  // a decoder that never says <eos> is stopped here
    const std::array<Scores, 3> s = {scores(race.trained.without, corpus.test, max_words),
                                     scores(race.trained.with, corpus.test, max_words),
                                     scores(race.trained.transformer, corpus.test, max_words)};
    record_accuracy(trace, corpus, s);
    record_length(trace, corpus, s, min_len, max_len);
    record_maps(trace, race.trained, lights, pickup);
    record_heads(trace, race.trained, corpus);
    const LongRun run = long_run(config, r, trace);
    const std::size_t long_words = 2 * config.size(param::long_len) + 4;
    record_longer(trace, config, corpus, run, race.curves(race.curves.shape(0) - 1, 5),
                  {s[1], s[2], scores(run.learned.model, corpus.test, max_words)},
                  {scores(race.trained.with, run.pairs, long_words), scores(race.trained.transformer, run.pairs, long_words),
                   scores(run.learned.model, run.pairs, long_words)});
    const Retrained moved =
        retrain_transformer(r.rng, corpus, moved_one_ulp(r.start.transformer), config,
                            progress_on(trace, "the Transformer moved one ulp"));
    record_chaos(trace, race, moved, {s[2], scores(moved.model, corpus.test, max_words)});
}

}  // namespace

// ---------------------------------------------------------------- the race, kept (transformer_race.hpp)

nn::AdamSettings transformer_adam(std::size_t step, const Config& c) {
    return {nn::warmup_learning_rate(step, c.size(param::d_model), c.size(param::warmup)), 0.9, 0.98, 1e-9};
}

// Lesson 13's and 15's configuration of this lesson: its defaults with their seed and training settings.
Config race_config(const Config& c) {
    const Lesson& race = *find_lesson("transformer");
    return apply_settings(race.params, c.seed,
                          {{"epochs", c.get("epochs")}, {"sentences", c.get("sentences")}, {"test", c.get("test")}});
}

TrainingProgress progress_on(const Trace& trace, std::string what) {
    return [&trace, what = std::move(what)](std::size_t epoch, std::size_t epochs, std::size_t done, std::size_t pairs) {
        trace.progress(fmt::format("training {}, epoch {} of {}: {} of {} sentences", what, epoch, epochs, done, pairs));
    };
}

Retrained retrain_transformer(Rng rng, const Corpus& c, const nn::EncoderDecoder& start, const Config& config,
                              const TrainingProgress& progress) {
    return trained_transformer(
        std::move(rng), c.train, c.test, start, config.size(param::epochs),
        [&](std::size_t step) { return transformer_adam(step, config); }, progress);
}

Retrained trained_transformer(Rng rng, const std::vector<Pair>& train, const std::vector<Pair>& test,
                              const nn::EncoderDecoder& start, std::size_t epochs, const AdamSchedule& schedule,
                              const TrainingProgress& progress) {
    auto t = trainer(start);
    Retrained out;
    out.test_loss = nn::zeros(epochs + 1);
    out.test_loss(0) = mean_loss(t.model, test);
    std::vector<std::size_t> order(train.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
        shuffle_epoch(rng, order);
        double words = 0.0;
        for (std::size_t first = 0; first < order.size(); first += batch) {
            const std::size_t last = std::min(order.size(), first + batch);
            train_batch(t, train, order, first, last, words, schedule(static_cast<std::size_t>(t.steps) + 1));
            if ((first / batch) % 8 == 0) progress(epoch, epochs, last, order.size());
        }
        out.test_loss(epoch) = mean_loss(t.model, test);
    }
    out.model = t.model;
    return out;
}

nn::EncoderDecoder with_learned_positions(nn::EncoderDecoder m, Rng& rng, std::size_t src_rows, std::size_t tgt_rows) {
    const std::size_t d = m.E_src.shape(1);
    m.P_src = rng.normal_mat(src_rows, d, std::sqrt(0.5));
    m.P_tgt = rng.normal_mat(tgt_rows, d, std::sqrt(0.5));
    return m;
}

LongStart long_start(const Config& config, RaceStart& r) {
    Rng rng(config.seed ^ 0x6c6f6e67u);  // "long"
    LongStart out;
    const std::size_t long_len = config.size(param::long_len);
    out.pairs = long_pairs(rng, r.corpus, config.size(param::long_test), config.size(param::max_len) + 1, long_len);
    out.learned = with_learned_positions(r.start.transformer, rng, long_len, 2 * long_len + 5);
    return out;
}

LengthBins race_length_bins(const Config& config) {
    const std::size_t min_len = config.size(param::min_len), max_len = config.size(param::max_len);
    const std::size_t long_len = config.size(param::long_len);
    const std::size_t w_in = (max_len - min_len + 4) / 4, w_out = (long_len - max_len + 3) / 4;
    LengthBins out;
    for (std::size_t first = min_len; first <= max_len; first += w_in)
        out.bins.push_back({first, std::min(max_len, first + w_in - 1)});
    out.first_long = out.bins.size();
    for (std::size_t first = max_len + 1; first <= long_len; first += w_out)
        out.bins.push_back({first, std::min(long_len, first + w_out - 1)});
    for (const auto& [first, last] : out.bins)
        out.labels.push_back(first == last ? fmt::format("T_x {}", first) : fmt::format("T_x {}-{}", first, last));
    return out;
}

std::size_t LengthBins::of(std::size_t length) const {
    std::size_t b = 0;
    while (b + 1 < bins.size() && length > bins[b].second) ++b;
    return b;
}

std::pair<std::size_t, std::size_t> longest(const std::vector<Pair>& pairs) {
    std::size_t src = 0, in = 0;
    for (const Pair& p : pairs) {
        src = std::max(src, p.src.size());
        in = std::max(in, p.tgt.size() + 1);
    }
    return {src, in};
}

std::size_t shortest_source(const std::vector<Pair>& pairs) {
    std::size_t out = std::numeric_limits<std::size_t>::max();
    for (const Pair& p : pairs) out = std::min(out, p.src.size());
    return out;
}

std::size_t lengths_shared(const std::vector<Pair>& train, const std::vector<Pair>& longer) {
    const std::size_t most = longest(train).first, least = shortest_source(longer);
    return most >= least ? most - least + 1 : 0;
}

double untrained_rows_moved(const nn::EncoderDecoder& trained, const nn::EncoderDecoder& drawn,
                            const std::vector<Pair>& train) {
    // largest |change| of the rows from `first` on of a trained table against its draw
    const auto moved = [](const Mat& after, const Mat& before, std::size_t first) {
        double worst = 0.0;
        for (std::size_t t = first; t < after.shape(0); ++t)
            for (std::size_t j = 0; j < after.shape(1); ++j) worst = std::max(worst, std::abs(after(t, j) - before(t, j)));
        return worst;
    };
    const auto [src, in] = longest(train);
    return std::max(moved(trained.P_src, drawn.P_src, src), moved(trained.P_tgt, drawn.P_tgt, in));
}

GradientCheck transformer_gradient_check(nn::EncoderDecoder m, const Pair& p) {
    GradientCheck c;
    nn::EncoderDecoder grads = nn::zeros_like(m);
    c.loss = backward_into(m, p, grads);
    const auto w = nn::named_tensors(m), g = nn::named_tensors(grads);
    c.table = xt::empty<double>({w.size(), std::size_t{3}});
    for (std::size_t b = 0; b < w.size(); ++b) {
        std::size_t k = 0;
        for (std::size_t i = 1; i < w[b].size; ++i)
            if (std::abs(g[b].data[i]) > std::abs(g[b].data[k])) k = i;
        c.table(b, 0) = g[b].data[k];
        c.table(b, 1) =
            nn::central_difference(w[b].data[k], [&] { return teacher_forced(m, p).loss; }, gradient_check_step);
        c.table(b, 2) = std::abs(c.table(b, 0) - c.table(b, 1)) / std::max(1.0, std::abs(c.table(b, 1)));
        c.names.push_back(w[b].name);
    }
    c.tolerance = 100.0 * std::numeric_limits<double>::epsilon() * std::max(1.0, c.loss) / gradient_check_step;
    for (std::size_t b = 0; b < w.size(); ++b)
        c.worst = std::isnan(c.table(b, 2)) ? c.table(b, 2) : std::max(c.worst, c.table(b, 2));
    return c;
}

// The corpus first, then the three models from the same generator, in a fixed order.
RaceStart race_start(const Config& config) {
    Rng rng(config.seed);
    Corpus corpus = generate_corpus(rng, config.size(param::sentences), config.size(param::test),
                                    config.size(param::min_len), config.size(param::max_len));
    const std::size_t V_src = corpus.source.words.size(), V_tgt = corpus.target.words.size();
    const std::size_t u = config.size(param::width);
    RaceModels start{drawn_model(rng, false, V_src, V_tgt, u), drawn_model(rng, true, V_src, V_tgt, u),
                     drawn_transformer(rng, sizes_of(config), V_src, V_tgt)};
    return {std::move(corpus), std::move(start), rng};
}

std::shared_ptr<const Race> trained_race(const Config& config, Trace& trace) {
    static std::mutex guard;
    static Config kept_config;
    static std::filesystem::path kept_from;  // the file it was loaded from, or empty when trained here
    static std::shared_ptr<const Race> kept;
    const std::filesystem::path file = config == kept_race_config() ? kept_race_file() : std::filesystem::path();
    {
        const std::lock_guard<std::mutex> lock(guard);
        if (kept && kept_config == config && kept_from == file) return kept;
    }
    std::shared_ptr<const Race> race;
    if (!file.empty()) {
        trace.progress("loading the reference's trained race");
        race = std::make_shared<const Race>(read_kept_race(file, config));
    } else {
        RaceStart r = race_start(config);
        race = std::make_shared<const Race>(train_three(trace, r.rng, r.corpus, r.start, config));
    }
    const std::lock_guard<std::mutex> lock(guard);
    kept_config = config;
    kept_from = file;
    kept = race;
    return race;
}

}  // namespace transformer

Lesson transformer_lesson() {
    using namespace transformer;
    return make_lesson(12, "transformer", "The Transformer, trained: cross-attention, warm-up and the race",
                       "Vaswani et al. 2017; Gehring et al. 2017; Bahdanau et al. 2015; Xiong et al. 2020; Kingma & Ba 2015",
                       {param::epochs, param::sentences, param::test, param::width, param::d_model, param::heads,
                        param::layers, param::d_ff, param::warmup, param::min_len, param::max_len,
                        param::long_test, param::long_len},
                       limits, time_estimate, lesson_transformer,
                       {"models", "cross-attention", "schedule", "gradients", "race", "cost", "accuracy", "length",
                        "maps", "heads", "longer", "chaos"},
                       {{"epochs", 1}, {"sentences", 50}, {"test", 20}, {"long_test", 10}, {"long_len", 24}});
}

}  // namespace attn
