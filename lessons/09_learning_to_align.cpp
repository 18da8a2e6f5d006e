// Lesson 9: learning to align. A small parallel corpus generated from a lexicon and word-order rules
// (verb-final, postpositions, one many-to-one phrase), then two translation models trained on it
// with the gradients of lesson 8, Adam and gradient clipping: lesson 2's (a bidirectional GRU
// encoder, additive attention, a GRU decoder) and lesson 1's (one context vector). What training
// shows: the loss curves, the alignment emerging in the attention weights, greedy decoding until
// <eos>, and accuracy against sentence length with and without attention.
// T_x / T_y = source / target words, u = width of every GRU state (and of the embeddings and of
// the additive score's tanh layer), V_src / V_tgt = vocabulary sizes.
#include "registry.hpp"
#include "support.hpp"
#include "translation.hpp"

#include "core/rng.hpp"
#include "nn/optimizer.hpp"
#include "nn/reductions.hpp"
#include "nn/seq2seq.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace attn {

namespace learning_to_align {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

using namespace translation;  // the corpus, the models, training and scoring (lessons/translation.hpp)

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param epochs{"epochs", 12, 1, 60, "passes over the training set"};
const Param width{"width", 16, 4, 64, "width u of every GRU state, of the word embeddings and of the additive score"};
const Param sentences{"sentences", 1200, 50, 20000, "sentence pairs in the training set"};
const Param test{"test", 200, 20, 2000, "sentence pairs in the held-out test set"};
const Param min_len{"min_len", 3, 3, 20, "fewest source words of a generated sentence"};
const Param max_len{"max_len", 20, 5, 23, "most source words of a generated sentence (the rules make at most 23)"};
}  // namespace param

// Microseconds of one sentence pass (forward and backward) of both models at width 16 and an
// average source length of 10, measured on this project's 2-core machine (the default, about 15,000
// passes at an average length of 11.5, took 8 s at a load of 1.3, on one core). The work of a pass grows
// with the source length times the target length (the attention's scores) and with width^2 (the
// GRUs); part of it grows only linearly, so the estimate overstates long or wide runs (by 1.6x at
// lengths 20-30, 1.5x at width 64, measured), on the safe side.
constexpr double microseconds_per_pass = 550.0;

double average_length(const Config& c) {
    return 0.5 * (as_double(c.size(param::min_len)) + as_double(c.size(param::max_len)));
}

// Seconds of the whole lesson: every epoch passes each training sentence forward and backward and
// each test sentence forward; the end decodes the test set greedily (a forward pass each).
double estimated_seconds(const Config& c) {
    const double length = average_length(c) / 10.0, width = as_double(c.size(param::width)) / 16.0;
    const double per_pass = microseconds_per_pass * 1e-6 * length * length * width * width;
    const double passes = as_double(c.size(param::epochs)) *
                              (as_double(c.size(param::sentences)) + 0.3 * as_double(c.size(param::test))) +
                          0.6 * as_double(c.size(param::test));
    return per_pass * passes;
}

TimeEstimate time_estimate(const Config& c) {
    return {estimated_seconds(c), "training",
            fmt::format("on one core: epochs x (sentences + test) passes of both models, {:.0f} us each at width 16 "
                        "and 10 source words, growing with width^2 and length^2",
                        microseconds_per_pass),
            {{&param::epochs, 1.0}, {&param::sentences, 1.0}, {&param::width, 2.0}, {&param::max_len, 2.0}}};
}

std::string limits(const Config& c) {
    if (c.size(param::min_len) > c.size(param::max_len))
        return fmt::format("min_len={} is above max_len={}: no sentence could be generated", c.size(param::min_len),
                           c.size(param::max_len));
    return "";
}

// ---------------------------------------------------------------- the corpus

struct Training {
    Mat curves;                  // (epochs + 1) x 4: train and test loss per word, without then with attention
    std::array<Mat, 3> lights;   // alpha for "turn off the lights": at initialisation, after epoch 1, at the end
    std::array<Mat, 3> pickup;   // the same for the many-to-one pair
    nn::Seq2Seq without, with;   // the trained models
    double clipped_without = 0.0, clipped_with = 0.0, steps = 0.0;
    Mat orders;                  // epochs x training pairs: row e - 1 is the order of epoch e's batches
};

Training train_both(Trace& trace, Rng& rng, Corpus& c, const nn::Seq2Seq& without, const nn::Seq2Seq& with,
                    std::size_t epochs) {
    Training out;
    auto a = trainer(without), b = trainer(with);
    const Pair lights = pair_of(c, lights_src, lights_tgt), pickup = pair_of(c, pickup_src, pickup_tgt);
    out.curves = nn::zeros(epochs + 1, 4);
    const auto record_losses = [&](std::size_t row, double train_a, double train_b) {
        out.curves(row, 0) = train_a;
        out.curves(row, 1) = mean_loss(a.model, c.test);
        out.curves(row, 2) = train_b;
        out.curves(row, 3) = mean_loss(b.model, c.test);
    };
    record_losses(0, mean_loss(a.model, c.train), mean_loss(b.model, c.train));
    out.lights[0] = teacher_forced_weights(b.model, lights);
    out.pickup[0] = teacher_forced_weights(b.model, pickup);
    std::vector<std::size_t> order(c.train.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    out.orders = xt::empty<double>({epochs, order.size()});
    for (std::size_t epoch = 1; epoch <= epochs; ++epoch) {
        shuffle_epoch(rng, order);
        for (std::size_t k = 0; k < order.size(); ++k) out.orders(epoch - 1, k) = as_double(order[k]);
        double loss_a = 0.0, loss_b = 0.0, words_a = 0.0, words_b = 0.0;
        for (std::size_t first = 0; first < order.size(); first += batch) {
            const std::size_t last = std::min(order.size(), first + batch);
            loss_a += train_batch(a, c.train, order, first, last, words_a, adam);
            loss_b += train_batch(b, c.train, order, first, last, words_b, adam);
            if ((first / batch) % 8 == 0)
                trace.progress(fmt::format("training, epoch {} of {}: {} of {} sentences", epoch, epochs, last,
                                           order.size()));
        }
        // the training loss of an epoch is the mean over its batches, as the weights moved
        record_losses(epoch, loss_a / words_a, loss_b / words_b);
        if (epoch == 1) {
            out.lights[1] = teacher_forced_weights(b.model, lights);
            out.pickup[1] = teacher_forced_weights(b.model, pickup);
        }
    }
    out.lights[2] = teacher_forced_weights(b.model, lights);
    out.pickup[2] = teacher_forced_weights(b.model, pickup);
    out.without = a.model;
    out.with = b.model;
    out.clipped_without = a.clipped;
    out.clipped_with = b.clipped;
    out.steps = a.steps;
    return out;
}

// ---------------------------------------------------------------- what the lesson records

// Step [corpus].
void record_corpus(Trace& trace, const Corpus& c, std::size_t min_len, std::size_t max_len) {
    std::vector<std::string> samples;
    for (std::size_t k = 0; k < 4; ++k) samples.push_back(pair_text(c, c.train[k]));
    trace.step("corpus", "A parallel corpus from a lexicon and word-order rules",
               "[please] V NP (P NP)* [adv]  ->  [kripya] [adv'] (NP' P')* in reverse, NP', V'",
               fmt::format(
                   "A translation model learns from sentence pairs. These are generated from the seed: a lexicon of "
                   "{} nouns, {} adjectives, {} prepositions, {} adverbs and {} verb phrases, and one rule. A source "
                   "sentence is [please] verb noun-phrase (preposition noun-phrase)* [adverb], a noun phrase is "
                   "'the' adjective* noun. Its translation puts kripya and the adverb first, then the prepositional "
                   "phrases in reverse order with each preposition after its noun (a postposition), then the "
                   "object, then the verb last; 'the' has no translation. So the words cross: \"turn off the "
                   "lights\" -> \"lait band karo\" (lights off do, in the spirit of Hindi's लाइट बंद करो), and "
                   "one phrase is many-to-one: \"pick up\" -> \"uthao\", as \"hit with a pie\" is the one word "
                   "\"entarté\" in French. 'turn' and 'switch' end in different verbs (karo, dabao) after the same "
                   "particle, so the last word of \"turn off\" must be read from the source. Sources have {} to {} "
                   "words. {} training pairs and {} held-out test pairs (no test sentence, and neither of the two "
                   "pairs shown below, is in the training set); {} source and {} target words including <sos> and "
                   "<eos>. The first training pairs: {}.",
                   nouns.size(), adjectives.size(), prepositions.size(), adverbs.size(), verbs.size(), min_len,
                   max_len, c.train.size(), c.test.size(), c.source.words.size(), c.target.words.size(),
                   fmt::join(samples, "; ")));
    Vec lengths = nn::zeros(max_len - min_len + 1);
    for (const Pair& p : c.train) lengths(p.src.size() - min_len) += 1.0;
    trace.tensor("source_lengths", "training pairs per source length", lengths,
                 numbered("T_x = ", min_len, lengths.size()), {}, View::bars);
    Mat first = nn::zeros(2, max_len);
    for (std::size_t j = 0; j < c.train[0].src.size(); ++j) first(0, j) = as_double(c.train[0].src[j]);
    for (std::size_t j = 0; j < c.train[0].tgt.size(); ++j) first(1, j) = as_double(c.train[0].tgt[j]);
    trace.tensor("first_pair", "word ids of the first training pair (0 after its end)", first, {"source", "target"});
    export_corpus(trace, c);
}

// The names of nn::blocks(m), in its order, as the digests label them: the encoder of the model
// without attention is "enc".
std::vector<std::string> block_names(const nn::Seq2Seq& m) {
    std::vector<std::string> names;
    for (const auto& [name, weight] : named_weights(m))
        names.push_back(!m.attention && name.rfind("enc_fwd.", 0) == 0 ? "enc" + name.substr(7) : name);
    return names;
}

// Step [models].
void record_models(Trace& trace, const nn::Seq2Seq& without, const nn::Seq2Seq& with, std::size_t epochs) {
    const std::size_t u = with.dec.hidden_width();
    trace.step("models", "Two models, one width, one training",
               "p(y_i | y_<i, x) = softmax(W_o s_i + b_o),  s_i = GRU(s_{i-1}, [y_{i-1}; c_i])",
               fmt::format(
                   "Both models embed words in {0} numbers, and both decoders are GRUs of width {0} that read the "
                   "previous target word y_{{i-1}} and a context c_i, then score every target word by W_o s_i + b_o "
                   "and a softmax. Without attention (lesson 1; Cho et al. 2014, Sutskever et al. 2014) the encoder "
                   "is one GRU and c_i = h_T for every word, s_0 = h_T. With attention (lesson 2; Bahdanau et al. "
                   "2015) the encoder is bidirectional, h_j = [h→_j; h←_j], c_i = sum_j alpha_ij h_j with "
                   "alpha_i = softmax(v_a^T tanh(W_a s_{{i-1}} + U_a h_j)), and s_0 = h←_1. The loss is the "
                   "cross-entropy of each target word and of <eos> given the true previous words (teacher "
                   "forcing), averaged over the words of a batch of {1} pairs. Its gradient clipped to norm {2} "
                   "(Pascanu et al. 2013: a rare exploding gradient moves the weights no further than that), "
                   "then one Adam step (Kingma & Ba 2015) with the settings below, for {3} epochs; both models "
                   "see the same batches in the same order. The model with attention has {4} weights, the one "
                   "without {5}.",
                   u, batch, clip_threshold, epochs, parameter_count(with), parameter_count(without)));
    Vec h{as_double(u), as_double(batch), adam.learning_rate, adam.beta1, adam.beta2, adam.epsilon, clip_threshold,
          as_double(epochs), as_double(parameter_count(without)), as_double(parameter_count(with))};
    trace.tensor("hyperparameters", "", h,
                 {"width u", "batch", "learning rate", "beta1", "beta2", "epsilon", "clip norm", "epochs",
                  "weights without", "weights with"});
    // Export-only data: every initial weight of both models, "without.<field>" and "with.<field>"
    // after the fields of nn::Seq2Seq, in the order of nn::blocks
    export_weights(trace, "without", without);
    export_weights(trace, "with", with);
}

// Step [adam]: three Adam steps on four weights, by hand, before Adam moves thousands. The
// exercise adam-step is checked here: training amplifies a last-bit difference into another
// trajectory, three steps do not.
void record_adam(Trace& trace) {
    // gradients five orders of magnitude apart, one always 0, one that changes sign at step 3
    const Mat gradients = {{1e-3, -4.0, 250.0, 0.0}, {1e-3, 2.0, 250.0, 0.0}, {-1e-3, 2.0, -250.0, 0.0}};
    const std::size_t steps = gradients.shape(0), n = gradients.shape(1);
    Vec theta = {0.5, -0.3, 2.0, 1.0};
    Vec m = nn::zeros(n), v = nn::zeros(n);
    Mat weights = xt::empty<double>({steps + 1, n}), means = xt::empty<double>({steps, n});
    Mat squares = xt::empty<double>({steps, n});
    nn::set_row(weights, 0, theta);
    double beta1_power = 1.0, beta2_power = 1.0;
    for (std::size_t t = 0; t < steps; ++t) {
        beta1_power *= adam.beta1;
        beta2_power *= adam.beta2;
        const Vec g = nn::row_of(gradients, t);
        nn::adam_step(theta.data(), g.data(), m.data(), v.data(), n, adam, beta1_power, beta2_power);
        nn::set_row(weights, t + 1, theta);
        nn::set_row(means, t, m);
        nn::set_row(squares, t, v);
    }
    // step 1: m_hat = g and v_hat = g^2, so a weight moves by lr |g| / (|g| + eps), lr to within
    // lr eps / |g| <= 1e-7 here; without the bias correction it would move (1 - beta1) / sqrt(1 - beta2) = 3.2 lr
    double first_step_error = 0.0;
    for (std::size_t k = 0; k + 1 < n; ++k)
        first_step_error = std::max(first_step_error,
                                    std::abs(std::abs(weights(1, k) - weights(0, k)) - adam.learning_rate));
    const double still = std::abs(weights(steps, n - 1) - weights(0, n - 1));
    trace.step("adam", "Adam, three steps by hand",
               "m <- b1 m + (1-b1) g,  v <- b2 v + (1-b2) g^2,  w <- w - lr m_hat / (sqrt(v_hat) + eps)",
               fmt::format(
                   "Training moves every weight by one Adam step per batch (Kingma & Ba 2015, Algorithm 1). "
                   "Adam keeps for each weight a running mean of its gradients, m, and of their squares, v, and "
                   "moves the weight by lr m_hat / (sqrt(v_hat) + eps), where m_hat = m / (1 - b1^t) and "
                   "v_hat = v / (1 - b2^t) undo the pull towards the zeros m and v start from. Dividing by the "
                   "root of the mean square makes the step about lr whatever the gradient's size: here four "
                   "weights with gradients 0.001, -4, 250 and 0 (learning rate {}). On the first step m_hat = g "
                   "and v_hat = g^2 exactly, so each weight with a gradient moves by lr |g| / (|g| + eps), lr to "
                   "within lr eps / |g| = 1e-7; without the bias correction (m = 0.1 g, v = 0.001 g^2) it would move 3.2 lr. The "
                   "weight with no gradient never moves. At step 3 two gradients change sign: their mean m "
                   "still points the old way, so those weights keep going, slower (momentum). Training "
                   "amplifies the last bit of every step, so two correct Adams whose operations are written in "
                   "another order end in different weights after a thousand steps; the exercise adam-step is "
                   "checked here, on three steps, where they agree.",
                   adam.learning_rate));
    trace.tensor("gradients", "g_t, one row per step", gradients, {"t = 1", "t = 2", "t = 3"},
                 {"w_1", "w_2", "w_3", "w_4"});
    trace.tensor("weights", "w after each step", weights, {"start", "t = 1", "t = 2", "t = 3"},
                 {"w_1", "w_2", "w_3", "w_4"});
    trace.tensor("m", "first moment after each step", means, {"t = 1", "t = 2", "t = 3"}, {"w_1", "w_2", "w_3", "w_4"});
    trace.tensor("v", "second moment after each step", squares, {"t = 1", "t = 2", "t = 3"},
                 {"w_1", "w_2", "w_3", "w_4"});
    trace.check("the first step moves each weight with a gradient by the learning rate (to within lr eps / |g|)",
                first_step_error, 2e-7);
    trace.check("the weight whose gradient is always 0 does not move", still, 0.0);
}

// The finite-difference step and tolerance of lesson 8 (step [finite-differences] there says why):
// |analytic - numeric| / max(1, |numeric|) <= 100 eps max(1, |L|) / h.
constexpr double fd_step = 1e-6;

// For one entry of every block of m: dL/dw by the backward pass, by central differences,
// and their error, on one sentence pair.
Mat gradient_table(nn::Seq2Seq m, const Pair& p, double& loss) {
    nn::Seq2Seq grads = nn::zeros_like(m);
    loss = nn::seq2seq_backward(m, p.src, decoder_inputs(p), decoder_outputs(p), grads).loss;
    const std::vector<nn::Block> w = nn::blocks(m), g = nn::blocks(grads);
    Mat table = xt::empty<double>({w.size(), std::size_t{3}});
    for (std::size_t b = 0; b < w.size(); ++b) {
        // the entry with the largest gradient: most embedding rows belong to words not in the sentence,
        // whose gradient is exactly 0 and would test nothing
        std::size_t k = 0;
        for (std::size_t i = 1; i < w[b].size; ++i)
            if (std::abs(g[b].data[i]) > std::abs(g[b].data[k])) k = i;
        double& x = w[b].data[k];
        const double saved = x, up = saved + fd_step, down = saved - fd_step;
        x = up;
        const double loss_up = nn::seq2seq_forward(m, p.src, decoder_inputs(p), decoder_outputs(p)).loss;
        x = down;
        const double loss_down = nn::seq2seq_forward(m, p.src, decoder_inputs(p), decoder_outputs(p)).loss;
        x = saved;
        table(b, 0) = g[b].data[k];
        table(b, 1) = (loss_up - loss_down) / (up - down);
        table(b, 2) = std::abs(table(b, 0) - table(b, 1)) / std::max(1.0, std::abs(table(b, 1)));
    }
    return table;
}

double worst(const Mat& table, std::size_t column) {
    double out = 0.0;
    for (std::size_t r = 0; r < table.shape(0); ++r) {
        if (std::isnan(table(r, column))) return table(r, column);
        out = std::max(out, table(r, column));
    }
    return out;
}

// Step [gradients].
void record_gradients(Trace& trace, Corpus& c, const nn::Seq2Seq& without, const nn::Seq2Seq& with) {
    // the step begins before its work: a run asked for the steps up to [adam] (Trace::stop_after)
    // ends here, before the gradients and the training it does not need
    Step& step = trace.step("gradients", "The gradients, checked before training",
                            "dL/dw ~ (L(w + h) - L(w - h)) / 2h,  h = 1e-6", "");
    const Pair p = pair_of(c, lights_src, lights_tgt);
    double loss_without = 0.0, loss_with = 0.0;
    const Mat a = gradient_table(without, p, loss_without), b = gradient_table(with, p, loss_with);
    const double tol_without = 100.0 * std::numeric_limits<double>::epsilon() * std::max(1.0, loss_without) / fd_step;
    const double tol_with = 100.0 * std::numeric_limits<double>::epsilon() * std::max(1.0, loss_with) / fd_step;
    step.explanation = fmt::format(
                   "Training trusts the gradients, so they are checked first, at initialisation, on \"turn off "
                   "the lights\" (loss {:.4f} without attention, {:.4f} with). The backward pass is lesson 8's, "
                   "assembled into whole models (nn/seq2seq.cpp): the output layer by hand (dz = p - onehot(y)), "
                   "each decoder step by gru_step_backward, the context through softmax_rows_backward and the "
                   "additive score's backward (lesson 8's, with the keys U_a h_j projected once per sentence rather "
                   "than once per word), the encoder by gru_backward, the embeddings row by row. One weight "
                   "of every tensor (the one with the largest gradient) is moved by +-h and the loss recomputed. "
                   "The tolerance is lesson 8's: 100 eps max(1, |L|) / h, a hundred times the rounding the two "
                   "losses leave in their difference ({:.2g} and {:.2g}); a wrong term is off by the size of the "
                   "gradient itself.",
                   loss_without, loss_with, tol_without, tol_with);
    trace.tensor("without", "analytic, numeric, error", a, block_names(without), {"analytic", "numeric", "error"})
        .foreign_tolerance(tol_without, tol_without, central_difference_noise());
    trace.tensor("with", "analytic, numeric, error", b, block_names(with), {"analytic", "numeric", "error"})
        .foreign_tolerance(tol_with, tol_with, central_difference_noise());
    trace.check("the backward pass of the model without attention matches central differences", worst(a, 2),
                tol_without);
    trace.check("the backward pass of the model with attention matches central differences", worst(b, 2), tol_with);
}

// sqrt(sum w^2) of every block: a digest of the trained weights that any change in training moves.
Vec block_norms(nn::Seq2Seq m) {
    const std::vector<nn::Block> w = nn::blocks(m);
    Vec out = xt::empty<double>({w.size()});
    for (std::size_t b = 0; b < w.size(); ++b) out(b) = nn::global_norm({w[b]});
    return out;
}

// Step [training].
void record_training(Trace& trace, const Training& t) {
    const std::size_t E = t.curves.shape(0) - 1;
    const double first_without = t.curves(0, 0), first_with = t.curves(0, 2);
    trace.step("training", "The loss curves",
               "L = -(1/N) sum_i log p(y_i | y_<i, x), per target word, train and test",
               fmt::format(
                   "Both models start near log {} ~ {:.2f} nats per word, a uniform guess over the target "
                   "words. After {} epochs the model without attention is at {:.3f} on the training set and "
                   "{:.3f} on the test set; the model with attention at {:.3f} and {:.3f}. After epoch 1 they "
                   "stood at {:.3f} and {:.3f} (test). "
                   "Row 0 is before training; later training losses are means over the epoch's batches while the "
                   "weights moved, test losses are measured at the epoch's end. Gradient clipping acted on {:.0f} "
                   "and {:.0f} of {:.0f} steps (without, with). Training took each model's training loss to {:.0f}% "
                   "and {:.0f}% of its starting value. That is what this training reached, not an identity, so it "
                   "is reported rather than checked: with a few epochs or sentences (epochs=1, sentences=50) a "
                   "model may not get below half. (No wall time is recorded, so "
                   "that two runs export the same bytes; `time attn run learning-to-align` measures it.)",
                   t.with.W_o.shape(0), first_with, E, t.curves(E, 0), t.curves(E, 1),
                   t.curves(E, 2), t.curves(E, 3), t.curves(1, 1), t.curves(1, 3), t.clipped_without,
                   t.clipped_with, t.steps, 100.0 * t.curves(E, 0) / first_without,
                   100.0 * t.curves(E, 2) / first_with));
    trace.tensor("losses", "nats per target word", t.curves, numbered("epoch ", 0, E + 1),
                 {"without, train", "without, test", "with, train", "with, test"}, View::plot)
        .foreign_shown(trained_here());
    trace.tensor("digest_without", "sqrt(sum w^2) of each trained tensor", block_norms(t.without),
                 block_names(t.without))
        .foreign_shown(trained_here());
    trace.tensor("digest_with", "sqrt(sum w^2) of each trained tensor", block_norms(t.with), block_names(t.with))
        .foreign_shown(trained_here());
    export_orders(trace, t.orders);
}

std::size_t row_argmax(const Mat& M, std::size_t i) {
    std::size_t best = 0;
    for (std::size_t j = 1; j < M.shape(1); ++j)
        if (M(i, j) > M(i, best)) best = j;
    return best;
}

// What the weights of uthao on 'pick' and 'up' show, in words.
std::string many_to_one(double pick, double up) {
    if (std::min(pick, up) >= 0.2) return "One target word reads both source words.";
    return fmt::format("The weight goes to one of the two, '{}': it is enough, because annotations are "
                       "bidirectional (h_j = [h→_j; h←_j]), so h_j of '{}' has read its neighbour '{}' too; the "
                       "alignment of a many-to-one pair need not be spread over the many.",
                       up > pick ? "up" : "pick", up > pick ? "up" : "pick", up > pick ? "pick" : "up");
}

// Step [alignment].
void record_alignment(Trace& trace, const Training& t) {
    const Mat& lights = t.lights[2];
    double misses = 0.0;
    std::vector<std::string> found;
    for (std::size_t i = 0; i < lights_partner.size(); ++i) {
        const std::size_t j = row_argmax(lights, i);
        if (j != lights_partner[i]) misses += 1.0;
        found.push_back(fmt::format("{} -> {} ({:.2f})", lights_tgt[i], lights_src[j], lights(i, j)));
    }
    const Mat& pickup = t.pickup[2];
    const double uthao_on_verb = pickup(2, 0) + pickup(2, 1), flat = 1.0 / as_double(lights_src.size());
    trace.step("alignment", "The alignment, learned",
               "alpha_ij = softmax_j(v_a^T tanh(W_a s_{i-1} + U_a h_j))",
               fmt::format(
                   "Nothing told the model which source word a target word comes from: it was trained only to "
                   "predict the next target word. Yet, as Chakraborty's lecture says of Bahdanau et al. 2015, \"we "
                   "never explicitly trained an alignment system; the network just learned alignment by itself\". Here "
                   "are the weights alpha_ij of the model with attention, teacher-forced on \"turn off the lights\" "
                   "(never in the training set), at initialisation, after epoch 1 and at the end. At "
                   "initialisation each row is near-flat (1/{} = {:.2f} each would be flat; the largest weight is "
                   "{:.2f}). At the end each target word's largest weight: {}: {:.0f} of the {} target words put it on "
                   "their source partner (lait <- lights, band <- off, karo <- turn). That is what this training "
                   "reached, not an identity, so it is reported rather than checked: after a few epochs or on a "
                   "few sentences (epochs=1, sentences=50) the alignment may not have formed yet. The <eos> row "
                   "has no partner. The many-to-one pair \"pick up the red box\" -> "
                   "\"lal dibba uthao\": at the end uthao gives {:.2f} of its weight to 'pick' and 'up' together "
                   "({:.2f} and {:.2f}). {} Lesson 2 built such a map by hand; this one came out of the gradients.",
                   lights_src.size(), flat, nn::max_of(t.lights[0]), fmt::join(found, ", "),
                   as_double(lights_partner.size()) - misses, lights_partner.size(), uthao_on_verb,
                   pickup(2, 0), pickup(2, 1), many_to_one(pickup(2, 0), pickup(2, 1))));
    const std::array<const char*, 3> when = {"init", "early", "final"};
    for (std::size_t k = 0; k < 3; ++k) {
        TensorRecord& lights = trace.tensor(fmt::format("lights_{}", when[k]), "alpha, teacher-forced", t.lights[k],
                                            with_eos(lights_tgt), lights_src, View::heatmap)
                                   .axes("target word", "source word");
        if (k > 0) lights.foreign_shown(trained_here());
    }
    for (std::size_t k = 0; k < 3; ++k) {
        TensorRecord& pickup = trace.tensor(fmt::format("pickup_{}", when[k]), "alpha, teacher-forced", t.pickup[k],
                                            with_eos(pickup_tgt), pickup_src, View::heatmap)
                                   .axes("target word", "source word");
        if (k > 0) pickup.foreign_shown(trained_here());
    }
}

// Step [decoding].
void record_decoding(Trace& trace, const Corpus& c, const Scores& without, const Scores& with) {
    std::vector<std::string> shown;
    for (std::size_t k = 0; k < 3; ++k)
        shown.push_back(fmt::format("{} | with attention: \"{}\" | without: \"{}\"", pair_text(c, c.test[k]),
                                    joined(c.target, with.outputs[k]), joined(c.target, without.outputs[k])));
    trace.step("decoding", "Translating: greedy decoding until <eos>",
               "y_i = argmax_w p(w | y_<i, x), fed back as the next input, until y_i = <eos>",
               fmt::format(
                   "Training fed the decoder the true previous word (teacher forcing). Translating, there is none: "
                   "the decoder feeds back its own most likely word and stops at <eos> (Sutskever et al. 2014, "
                   "section 3.1, with a beam of one), so one wrong word can derail the rest. First test pairs: {}. "
                   "Over the {} test pairs: teacher-forced word accuracy {:.3f} without attention and {:.3f} with; "
                   "free-running (position by position against the reference, <eos> included) {:.3f} and {:.3f}; "
                   "exact translations {:.3f} and {:.3f}. Feeding back its own words instead of the true ones costs "
                   "the model without attention {:.3f} of its word accuracy and the model with attention {:.3f}.",
                   fmt::join(shown, "; "), c.test.size(), without.teacher_forced, with.teacher_forced,
                   without.free_tokens, with.free_tokens, without.exact, with.exact,
                   without.teacher_forced - without.free_tokens, with.teacher_forced - with.free_tokens));
    const Mat table = {{without.teacher_forced, without.free_tokens, without.exact},
                       {with.teacher_forced, with.free_tokens, with.exact}};
    trace.tensor("accuracy", "share right on the test set", table, {"without attention", "with attention"},
                 {"teacher-forced words", "free-running words", "exact sentences"})
        .foreign_shown(trained_here());
}

// Step [length]: the test set by source length, in about five bins of equal width.
void record_length(Trace& trace, const Corpus& c, const Scores& without, const Scores& with, std::size_t min_len,
                   std::size_t max_len, std::size_t u) {
    const std::size_t width = std::max<std::size_t>(1, (max_len - min_len + 1) / 5);
    const std::size_t bins = (max_len - min_len) / width + 1;
    Mat table = nn::zeros(bins, 4);
    Vec count = nn::zeros(bins), words = nn::zeros(bins);
    for (std::size_t k = 0; k < c.test.size(); ++k) {
        const std::size_t b = (c.test[k].src.size() - min_len) / width;
        count(b) += 1.0;
        words(b) += as_double(c.test[k].tgt.size() + 1);
        table(b, 0) += without.outputs[k] == c.test[k].tgt ? 1.0 : 0.0;
        table(b, 1) += with.outputs[k] == c.test[k].tgt ? 1.0 : 0.0;
        table(b, 2) += right_positions(without.outputs[k], c.test[k].tgt);
        table(b, 3) += right_positions(with.outputs[k], c.test[k].tgt);
    }
    std::vector<std::string> labels;
    for (std::size_t b = 0; b < bins; ++b) {
        const std::size_t first = min_len + width * b, last = std::min(max_len, first + width - 1);
        labels.push_back(first == last ? fmt::format("T_x {}", first) : fmt::format("T_x {}-{}", first, last));
        for (std::size_t col = 0; col < 4; ++col) table(b, col) /= std::max(1.0, col < 2 ? count(b) : words(b));
    }
    const std::size_t last = bins - 1;
    trace.step("length", "Accuracy against sentence length",
               "exact = share of sentences right; words = share of positions right (free-running)",
               fmt::format(
                   "Cho et al. (2014b, \"On the Properties of Neural Machine Translation: Encoder-Decoder "
                   "Approaches\") found a fixed-context model's translations degrade quickly as sentences grow; "
                   "Bahdanau et al. (2015, figure 2) found attention keeps them up. Measured here on the test set, "
                   "free-running: for the shortest sources ({}) exact translations are {:.2f} without attention "
                   "and {:.2f} with, word accuracy {:.2f} and {:.2f}; for the longest ({}, {:.0f} pairs) {:.2f} and "
                   "{:.2f} exact, {:.2f} and {:.2f} words. Each bin holds few test pairs (the counts are below), so "
                   "neighbouring bins differ by chance too. This is lesson 1's bottleneck measured after training: "
                   "one vector of width {} for the whole sentence, against a context chosen per word.",
                   labels.front(), table(0, 0), table(0, 1), table(0, 2), table(0, 3), labels.back(), count(last),
                   table(last, 0), table(last, 1), table(last, 2), table(last, 3), u));
    trace.tensor("by_length", "share right, test set", table, labels,
                 {"exact, without", "exact, with", "words, without", "words, with"}, View::plot)
        .foreign_shown(trained_here());
    trace.tensor("pairs", "test pairs per bin", count, labels, {}, View::bars);
}

void lesson_learning_to_align(Trace& trace, const Config& config) {
    const std::size_t min_len = config.size(param::min_len), max_len = config.size(param::max_len);
    Rng rng(config.seed);
    Corpus corpus = generate_corpus(rng, config.size(param::sentences), config.size(param::test), min_len, max_len);
    record_corpus(trace, corpus, min_len, max_len);
    const std::size_t u = config.size(param::width), V_src = corpus.source.words.size();
    const std::size_t V_tgt = corpus.target.words.size(), epochs = config.size(param::epochs);
    const nn::Seq2Seq without = drawn_model(rng, false, V_src, V_tgt, u);
    const nn::Seq2Seq with = drawn_model(rng, true, V_src, V_tgt, u);
    record_models(trace, without, with, epochs);
    record_adam(trace);
    record_gradients(trace, corpus, without, with);
    const Training t = train_both(trace, rng, corpus, without, with, epochs);
    record_training(trace, t);
    record_alignment(trace, t);
    const std::size_t max_words = 2 * max_len + 4;  // a decoder that never says <eos> is stopped here
    const Scores s_without = scores(t.without, corpus.test, max_words), s_with = scores(t.with, corpus.test, max_words);
    record_decoding(trace, corpus, s_without, s_with);
    record_length(trace, corpus, s_without, s_with, min_len, max_len, u);
}

}  // namespace
}  // namespace learning_to_align

Lesson learning_to_align_lesson() {
    using namespace learning_to_align;
    return make_lesson(9, "learning-to-align",
                       "Learning to align: training attention and watching the alignment emerge",
                       "Cho et al. 2014; Sutskever et al. 2014; Bahdanau et al. 2015; Kingma & Ba 2015; Pascanu et "
                       "al. 2013",
                       {param::epochs, param::width, param::sentences, param::test, param::min_len, param::max_len},
                       limits, time_estimate, lesson_learning_to_align,
                       {"corpus", "models", "adam", "gradients", "training", "alignment", "decoding", "length"},
                       {{"epochs", 1}, {"sentences", 50}, {"test", 20}});
}

}  // namespace attn
