// Lesson 1: an encoder-decoder that passes one fixed vector between its halves
// (Sutskever et al. 2014; Cho et al. 2014), and the measured cost of doing so.
// n = source tokens, m = target tokens, d = embedding and hidden width, V = vocabulary size.
#include "registry.hpp"
#include "gru.hpp"
#include "support.hpp"

#include "core/rng.hpp"
#include "nn/linalg.hpp"
#include "nn/reductions.hpp"
#include "nn/rnn.hpp"
#include "nn/softmax.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

namespace attn {

namespace bottleneck {  // this lesson's own names (the lessons compile as unity files: meson.build)
namespace {

// ---------------------------------------------------------------- parameters (--set)

namespace param {
const Param d{"d", 6, 1, 256, "width of the word embeddings and of the encoder and decoder states"};
const Param trials{"trials", 8, 1, 1000, "random sentences per length in the measured bottleneck demo"};
}  // namespace param

// Seconds per sentence of the demo, which encodes `trials` sentences at each of five lengths (4 to
// 64 tokens, 124 in all) with d-wide states: a d^2 part (the GRU's products) and a part per token
// that does not grow with d^2. Measured on this project's 2-core machine: with d=256, 220 trials
// took 11.3 s at a load of 4.2 (0.051 s a sentence) and 500 and 540 trials 52 to 53 s at a load of 7
// (0.104 s a sentence, 1.6e-6 s per d^2); with d=128 1000 trials took 18.8 s; with d=45 3.3 s (0.0033
// s a sentence, 0.0017 s of it beyond the d^2 part), with d=6 0.6 s. Twice the worst of each on the
// safe side, and a second for the rest of the lesson.
constexpr double seconds_per_sentence = 0.0035, seconds_per_sentence_d2 = 3.2e-6;

TimeEstimate time_estimate(const Config& c) {
    const double d = as_double(c.size(param::d)), trials = as_double(c.size(param::trials));
    return {1.0 + trials * (seconds_per_sentence + seconds_per_sentence_d2 * d * d), "the measured demo",
            fmt::format("{} trials x ({:g} s + {:g} s x d^2) a sentence", c.size(param::trials), seconds_per_sentence,
                        seconds_per_sentence_d2),
            {{&param::trials, 1.0}, {&param::d, 2.0}}};
}

std::string limits(const Config& c) {
    // trials d sets the memory of the demo's sentences and states
    const double d = as_double(c.size(param::d)), trials = as_double(c.size(param::trials));
    return memory_limit(trials * 64.0 * d * 4.0 + 40.0 * d * d, "lesson 1");
}

const std::vector<std::string> source_sentence = {"turn", "off", "the", "lights"};
const std::vector<std::string> target_sentence = {"लाइट", "बंद", "करो"};
const std::vector<std::string> target_vocab = {"<sos>", "लाइट", "बंद", "करो", "<eos>"};
const std::vector<std::size_t> demo_lengths = {4, 8, 16, 32, 64};
constexpr std::size_t filler_words = 28;  // the measured demo draws sentences from a larger vocabulary

std::vector<std::string> source_vocab() {
    std::vector<std::string> vocab = source_sentence;
    for (std::size_t i = 0; i < filler_words; ++i) vocab.push_back("w" + std::to_string(vocab.size()));
    return vocab;
}

std::vector<std::string> length_labels() {
    std::vector<std::string> out;
    for (auto n : demo_lengths) out.push_back("n=" + std::to_string(n));
    return out;
}

// Weights with variance 1/fan_in keep pre-activations near unit scale; the update-gate bias of 2
// starts the GRU leaning towards keeping its state, as trained encoders learn to. No other biases.
GruInit gru_init(std::size_t d_in, std::size_t d) { return fan_in_init(GruInit::Order::by_gate, d_in, d, 0.0, 2.0); }

Vec final_state(const nn::GruParams& encoder, const Mat& X) {
    const Mat H = nn::gru_forward(encoder, X, nn::zeros(encoder.hidden_width())).states;
    return nn::row_of(H, H.shape(0) - 1);
}

// h_t = h~_t + z_t * (h_{t-1} - h~_t): the same interpolation written as a correction of the
// candidate. Computed from the recorded gates, it must reproduce the recorded states.
double interpolation_form_error(const nn::GruRun& run) {
    const std::size_t T = run.states.shape(0);
    Mat previous = nn::zeros(T, run.states.shape(1));
    for (std::size_t t = 1; t < T; ++t) nn::set_row(previous, t, nn::row_of(run.states, t - 1));
    const Mat rewritten = run.candidates + run.update_gates * (previous - run.candidates);
    return max_abs_difference(rewritten, run.states);
}

// Decoder inputs with teacher forcing: row i is [y_{i-1}; c], the previous *reference* token
// and the one context vector.
Mat decoder_inputs(const Mat& previous_tokens, const Vec& context) {
    const std::size_t m = previous_tokens.shape(0), d = previous_tokens.shape(1);
    Mat out = xt::empty<double>({m, d + context.size()});
    for (std::size_t i = 0; i < m; ++i) nn::set_row(out, i, nn::concatenated(nn::row_of(previous_tokens, i), context));
    return out;
}

// Largest difference between the context part of any decoder input row and c itself.
double context_spread(const Mat& inputs, const Vec& context) {
    const std::size_t d = inputs.shape(1) - context.size();
    double worst = 0.0;
    for (std::size_t i = 0; i < inputs.shape(0); ++i) {
        const Vec part = nn::entries_of(nn::row_of(inputs, i), d, inputs.shape(1));
        worst = std::max(worst, max_abs_difference(part, context));
    }
    return worst;
}

// The sentences of the measured demo, as token ids stored as numbers.
struct DemoSentences {
    Mat sentences;    // trials x 64 token ids
    Mat substitutes;  // trials x 2: replacement for the first and for the last token
};

std::size_t different_token(Rng& rng, std::size_t vocab, std::size_t avoid) {
    std::size_t id = rng.below(vocab);
    while (id == avoid) id = rng.below(vocab);
    return id;
}

// `trials` random sentences of 64 tokens, each with a replacement for its first token (never
// that token) and one for its last.
DemoSentences draw_sentences(Rng& rng, std::size_t vocab, std::size_t trials) {
    const std::size_t longest = demo_lengths.back();
    DemoSentences drawn{xt::empty<double>({trials, longest}), xt::empty<double>({trials, std::size_t{2}})};
    for (std::size_t k = 0; k < trials; ++k)
        for (std::size_t j = 0; j < longest; ++j) drawn.sentences(k, j) = static_cast<double>(rng.below(vocab));
    for (std::size_t k = 0; k < trials; ++k) {
        const auto first = static_cast<std::size_t>(drawn.sentences(k, 0));
        drawn.substitutes(k, 0) = static_cast<double>(different_token(rng, vocab, first));
        // w_n differs per length, so one substitute cannot avoid them all: where it equals w_n,
        // that sentence moves c by 0, which only lowers Δ_last a little
        drawn.substitutes(k, 1) = static_cast<double>(rng.below(vocab));
    }
    return drawn;
}

// The ids of a table of token ids; a table supplied with --input must hold whole numbers below `vocab`.
std::vector<std::vector<std::size_t>> token_ids(const Mat& table, std::size_t vocab, const std::string& name) {
    std::vector<std::vector<std::size_t>> ids(table.shape(0), std::vector<std::size_t>(table.shape(1)));
    for (std::size_t k = 0; k < table.shape(0); ++k)
        for (std::size_t j = 0; j < table.shape(1); ++j) {
            const double id = table(k, j);
            if (!(id >= 0.0 && id < static_cast<double>(vocab) && id == std::floor(id)))
                throw InputError(fmt::format("--input: tensor '{}' holds {} at ({}, {}); token ids must be whole "
                                             "numbers from 0 to {}",
                                             name, id, k, j, vocab - 1));
            ids[k][j] = static_cast<std::size_t>(id);
        }
    return ids;
}

// For each length n, encode the first n tokens of every sentence, then the same with its
// first (or last) token replaced, and average how far the context vector moves. One row per
// length: mean |c|, mean |c - c_first|, mean |c - c_last|.
Mat measure_bottleneck(const nn::GruParams& encoder, const Mat& E_src, const DemoSentences& demo) {
    const std::size_t vocab = E_src.shape(0), trials = demo.sentences.shape(0);
    const auto ids = token_ids(demo.sentences, vocab, "sentences");
    const auto substitutes = token_ids(demo.substitutes, vocab, "substitutes");
    Mat table = nn::zeros(demo_lengths.size(), 3);
    for (std::size_t li = 0; li < demo_lengths.size(); ++li) {
        const std::size_t n = demo_lengths[li];
        for (std::size_t k = 0; k < trials; ++k) {
            std::vector<std::size_t> sentence(ids[k].begin(), ids[k].begin() + static_cast<std::ptrdiff_t>(n));
            const auto context_of = [&](const std::vector<std::size_t>& words) {
                return final_state(encoder, nn::gather_rows(E_src, words));
            };
            const Vec c = context_of(sentence);
            auto first_changed = sentence, last_changed = sentence;
            first_changed.front() = substitutes[k][0];
            last_changed.back() = substitutes[k][1];
            const auto count = static_cast<double>(trials);
            table(li, 0) += nn::norm_of(c) / count;
            table(li, 1) += nn::norm_of(c - context_of(first_changed)) / count;
            table(li, 2) += nn::norm_of(c - context_of(last_changed)) / count;
        }
    }
    return table;
}

// How much the first-token change ever grows from one length to the next (0 when it only shrinks).
double largest_increase(const Vec& values) {
    double worst = 0.0;
    for (std::size_t i = 1; i < values.size(); ++i) worst = std::max(worst, values(i) - values(i - 1));
    return worst;
}

// What Δ_first(n) did in this run, in words: the fall is what the mean over many sentences shows,
// not an identity, so the lesson reports it rather than checks it.
std::string fading_note(const Vec& first_change, std::size_t trials) {
    const auto lengths = length_labels();
    if (largest_increase(first_change) <= 0.0)
        return fmt::format("\nHere Δ_first falls at every doubling of n, from {:.3g} at {} to {:.3g} at {}, over {} "
                           "sentences per length. That is a tendency of the mean, not an identity: with only a few "
                           "sentences per length (trials), or a very narrow d, it can rise from one length to the next.",
                           first_change(0), lengths.front(), first_change(first_change.size() - 1), lengths.back(),
                           trials);
    std::size_t at = 1;
    for (std::size_t i = 1; i < first_change.size(); ++i)
        if (first_change(i) - first_change(i - 1) > first_change(at) - first_change(at - 1)) at = i;
    return fmt::format("\nHere Δ_first rises from {} to {} (by {:.3g}), over {} sentences per length: the fall is a "
                       "tendency of the mean over many sentences, which so few need not show.",
                       lengths[at - 1], lengths[at], first_change(at) - first_change(at - 1), trials);
}

// Step [embeddings]: the two embedding tables and X, the source sentence looked up in E_src.
Mat record_embeddings(Trace& trace, const std::vector<std::string>& vocab, const Mat& E_src, const Mat& E_tgt) {
    trace.step("embeddings", "Tokens become vectors", "x_j = E_src[w_j],  y_i = E_tgt[w'_i]",
               "We translate \"turn off the lights\" into Hindi, \"लाइट बंद करो\". Each token is looked up "
               "in an embedding table: one row of d numbers per word. The tables here are drawn from the seed, "
               "not trained, so the translation will be wrong; what matters is the shape of the computation. "
               "The source table has filler words too, for the measured demo in step [bottleneck].");
    trace.parameter("E_src", "source embedding table, V_src x d", E_src, vocab);
    trace.parameter("E_tgt", "target embedding table, V_tgt x d", E_tgt, target_vocab);
    const Mat X = nn::gather_rows(E_src, {0, 1, 2, 3});
    trace.tensor("X", "x_j = E_src[w_j], one row per source token", X, source_sentence);
    return X;
}

// Steps [encoder-params] and [encoder]: the encoder GRU's weights and its run over X from h_0 = 0.
nn::GruRun record_encoder(Trace& trace, const nn::GruParams& encoder, const Mat& X) {
    trace.step("encoder-params", "The encoder's weights", "GRU(x_t, h_{t-1}) with W: d x d, U: d x d, b: d",
               "The encoder is a gated recurrent unit (Cho et al. 2014). It owns three weight sets: the update "
               "gate z decides how much of the old state to keep, the reset gate r how much of it the candidate "
               "may see, and the candidate h~ is the new content. The update-gate bias starts at +2, so the "
               "encoder keeps about 88% of each state feature per step: it is built to remember.");
    record_by_gate(trace, encoder, "x_t");

    trace.step("encoder", "Reading the source, one token at a time",
               "h_t = z_t * h_{t-1} + (1 - z_t) * h~_t,  h~_t = tanh(W_h x_t + U_h (r_t * h_{t-1}) + b_h)",
               "Each state h_t mixes the previous state and a candidate, feature by feature, with the update "
               "gate as the mixing weight (Cho et al. 2014, eq. 7; PyTorch's nn.GRUCell writes "
               "h' = (1 - z) * n + z * h, the same convention for the update, but applies the reset gate after "
               "the matrix product, n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), where Cho et al. reset the "
               "state before it, U_h (r * h); lesson 5 shows the difference). The states must be computed in "
               "order: h_3 "
               "needs h_2, which needs h_1. The same update can be read as the candidate corrected towards the "
               "old state, h_t = h~_t + z_t * (h_{t-1} - h~_t); the check recomputes every state that way.");
    const nn::GruRun enc = nn::gru_forward(encoder, X, nn::zeros(encoder.hidden_width()));
    trace.tensor("Z", "z_t = sigmoid(W_z x_t + U_z h_{t-1} + b_z)", enc.update_gates, prefixed("z_", source_sentence));
    trace.tensor("R", "r_t = sigmoid(W_r x_t + U_r h_{t-1} + b_r)", enc.reset_gates, prefixed("r_", source_sentence));
    trace.tensor("H_cand", "h~_t = tanh(W_h x_t + U_h (r_t * h_{t-1}) + b_h)", enc.candidates,
                 prefixed("h~_", source_sentence));
    trace.tensor("H", "h_t = z_t * h_{t-1} + (1 - z_t) * h~_t,  h_0 = 0", enc.states, prefixed("h_", source_sentence));
    trace.check("h_t = h~_t + z_t * (h_{t-1} - h~_t) reproduces every encoder state", interpolation_form_error(enc),
                1e-12);
    return enc;
}

// Step [context]: c = h_n, the only thing the decoder is told about the source.
Vec record_context(Trace& trace, const nn::GruRun& enc) {
    trace.step("context", "The whole sentence in one vector", "c = s_0 = h_n",
               "Sutskever et al. (2014) hand the decoder nothing but the encoder's last state. Whatever the "
               "decoder will ever know about \"turn off the lights\" must fit in these d numbers. Cho et al. "
               "(2014) also feed the same c into every decoder step; we do both.");
    const Vec c = nn::row_of(enc.states, enc.states.shape(0) - 1);
    trace.tensor("c", "c = h_n (the last row of H)", c);
    return c;
}

// Steps [decoder-params] and [decoder]: the decoder's weights and its teacher-forced run from s_0 = c.
void record_decoder(Trace& trace, const nn::GruParams& decoder, const Mat& W_o, const Mat& E_tgt, const Vec& c) {
    trace.step("decoder-params", "The decoder's weights", "GRU([y_{i-1}; c], s_{i-1}),  logits_i = W_o s_i",
               "The decoder is a second GRU. Its input is the previous target token's embedding concatenated "
               "with the context, so its input weights are d x 2d. W_o turns a state into one score per "
               "target word.");
    record_by_gate(trace, decoder, "[y_{i-1}; c]");
    trace.parameter("W_o", "output projection, V_tgt x d", W_o, target_vocab);

    trace.step("decoder", "Teacher-forced decoding, one c for every step",
               "s_i = GRU([y_{i-1}; c], s_{i-1}),  p(y_i | y_<i, x) = softmax(W_o s_i)",
               "During training the decoder is fed the reference previous token, not its own guess (teacher "
               "forcing): <sos>, then लाइट, then बंद. Look at the right half of each input row: it is the "
               "same vector c at every step. The decoder can change what it asks, but not what it is told; "
               "there is no way to look back at \"lights\" when producing लाइट.");
    const Mat previous_tokens = nn::gather_rows(E_tgt, {0, 1, 2});
    const Mat inputs = decoder_inputs(previous_tokens, c);
    trace.tensor("D_in", "row i = [y_{i-1}; c]", inputs, std::vector<std::string>{"<sos> ; c", "लाइट ; c", "बंद ; c"});
    const nn::GruRun dec = nn::gru_forward(decoder, inputs, c);
    trace.tensor("S", "s_i = GRU([y_{i-1}; c], s_{i-1}),  s_0 = c", dec.states, prefixed("s_", target_sentence));
    const Mat logits = nn::matmul(dec.states, nn::transposed(W_o), "S W_o^T");
    const Mat probabilities = nn::softmax_rows(logits);
    trace.tensor("P", "P_i = softmax(W_o s_i); rows: positions, columns: words", probabilities,
                 target_sentence, target_vocab, View::heatmap).axes("target position", "target word");
    trace.check("every decoder input carries exactly the same context c", context_spread(inputs, c), 0.0);
    trace.check("each row of P sums to 1", row_sum_error(probabilities), 1e-12);
}

// Step [bottleneck]: draws the demo sentences (replaceable by --input) and measures how far
// replacing their first or last token moves c.
void record_bottleneck(Trace& trace, Rng& rng, const nn::GruParams& encoder, const Mat& E_src, std::size_t trials) {
    trace.step("bottleneck", "Measured: the first word fades from c",
               "Δ_first(n) = mean_k |c(w_1..w_n) - c(w'_1, w_2..w_n)|,  Δ_last(n) likewise for w_n",
               "Take random sentences of n tokens, encode them, then replace only the first token and encode "
               "again: how far does the context vector move? And if we replace the last token instead? The "
               "encoder keeps 88% of each feature per step, yet the first word's trace shrinks roughly like "
               "0.88^n, while the last word always moves c a lot. That 88% is built in: this GRU is untrained, "
               "and its update-gate bias b_z = 2 (sigmoid(2) = 0.88) makes it keep that much. So this shows "
               "how one fixed-size vector can lose the start of a sentence, not that a trained encoder does. "
               "Cho et al. (2014b, \"On the Properties of Neural Machine Translation: Encoder-Decoder "
               "Approaches\") measured that translations degrade as sentences grow, and Sutskever et al. "
               "(2014) reversed the source to bring its first words close to the decoder. Lesson 9 "
               "(learning-to-align, step [length]) trains this model and one with attention and measures their "
               "accuracy against sentence length.");
    DemoSentences demo = draw_sentences(rng, E_src.shape(0), trials);
    demo.sentences = trace.input("sentences", demo.sentences);
    demo.substitutes = trace.input("substitutes", demo.substitutes);
    const Mat table = measure_bottleneck(encoder, E_src, demo);
    trace.tensor("sentences", "token ids; length n uses the first n of each row", demo.sentences);
    trace.tensor("substitutes", "replacement token ids: column 0 for w_1, column 1 for w_n", demo.substitutes);
    trace.tensor("context_change", "mean over sentences", table, length_labels(), {"|c|", "Δ_first", "Δ_last"});
    const Vec first_change = nn::column_of(table, 1);
    trace.tensor("first_token_influence", "Δ_first(n)", first_change, length_labels(), {}, View::bars);
    // Not an identity, so not a check: the fall is a tendency of the mean over many sentences, and a
    // few sentences (trials=2, say) may break it. The text says what this run measured.
    trace.steps().back().explanation += fading_note(first_change, trials);
}

// One row per demo length n: n, the n x d numbers read, the d passed on, and their ratio n.
Mat numbers_carried(std::size_t d) {
    Mat counts = xt::empty<double>({demo_lengths.size(), std::size_t{4}});
    for (std::size_t i = 0; i < demo_lengths.size(); ++i) {
        const auto n = static_cast<double>(demo_lengths[i]);
        counts(i, 0) = n;
        counts(i, 1) = n * static_cast<double>(d);
        counts(i, 2) = static_cast<double>(d);
        counts(i, 3) = n;
    }
    return counts;
}

// Step [capacity]: how many numbers go in and how many come out of the encoder, per length.
void record_capacity(Trace& trace, std::size_t d) {
    trace.step("capacity", "What the one vector must carry", "n x d numbers in, d numbers out",
               "The encoder reads n vectors of d numbers and must pass on d. Here that is 4 x 6 = 24 numbers "
               "squeezed into 6, and the squeeze grows with every token. The next lesson removes the squeeze: "
               "the decoder keeps all the encoder states and, at every step, decides which ones to look at "
               "(Bahdanau et al. 2015).");
    trace.tensor("numbers_carried", "n, n x d in, d out, compression n x d / d = n", numbers_carried(d),
                 length_labels(), {"n", "in", "out", "ratio"});
}

void lesson_bottleneck(Trace& trace, const Config& config) {
    const std::size_t d = config.size(param::d), trials = config.size(param::trials);
    Rng rng(config.seed);
    const auto vocab = source_vocab();
    // attn run --input may replace any of these with the user's own (same shapes)
    const Mat E_src = trace.input("E_src", rng.normal_mat(vocab.size(), d));
    const Mat E_tgt = trace.input("E_tgt", rng.normal_mat(target_vocab.size(), d));
    const nn::GruParams encoder = supplied_by_gate(trace, "encoder-params", draw_gru(rng, d, d, gru_init(d, d)));
    const nn::GruParams decoder =
        supplied_by_gate(trace, "decoder-params", draw_gru(rng, 2 * d, d, gru_init(2 * d, d)));
    const Mat W_o =
        trace.input("W_o", rng.normal_mat(target_vocab.size(), d, 1.0 / std::sqrt(static_cast<double>(d))));

    const Mat X = record_embeddings(trace, vocab, E_src, E_tgt);
    const nn::GruRun enc = record_encoder(trace, encoder, X);
    const Vec c = record_context(trace, enc);
    record_decoder(trace, decoder, W_o, E_tgt, c);
    record_bottleneck(trace, rng, encoder, E_src, trials);
    record_capacity(trace, d);
}

}  // namespace
}  // namespace bottleneck

Lesson bottleneck_lesson() {
    using namespace bottleneck;
    return make_lesson(1, "bottleneck", "The fixed-context bottleneck of seq2seq", "Sutskever et al. 2014; Cho et al. 2014",
                       {param::d, param::trials}, limits, time_estimate, lesson_bottleneck,
                       {"embeddings", "encoder-params", "encoder", "context", "decoder-params", "decoder",
                        "bottleneck", "capacity"});
}

}  // namespace attn
