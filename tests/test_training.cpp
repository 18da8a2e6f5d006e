// The training pieces of lesson 9: Adam and gradient clipping (nn/optimizer.hpp) against their
// equations worked by hand, and the whole-model backward of nn/seq2seq.hpp against central finite
// differences on every weight of a tiny model, with and without attention; and lesson 9's
// export-only data, from which its training is replayed to the bit.
// T_x / T_y = source / target words, u = width.
#include "core/golden.hpp"
#include "exercises/observations.hpp"
#include "core/rng.hpp"
#include "nn/optimizer.hpp"
#include "nn/seq2seq.hpp"
#include "run.hpp"
#include "transformer_race.hpp"
#include "translation.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_training {

using namespace attn;

namespace {

nn::GruParams tiny_gru(Rng& rng, std::size_t d_in, std::size_t u) {
    return {rng.normal_mat(u, d_in, 0.5), rng.normal_mat(u, u, 0.5), rng.normal_vec(u, 0.1),
            rng.normal_mat(u, d_in, 0.5), rng.normal_mat(u, u, 0.5), rng.normal_vec(u, 0.1),
            rng.normal_mat(u, d_in, 0.5), rng.normal_mat(u, u, 0.5), rng.normal_vec(u, 0.1)};
}

// A model of width 3 over 5 source and 6 target words (0 = <sos>, 1 = <eos>), biases not zero so
// that every gradient is exercised.
nn::Seq2Seq tiny_model(bool attention) {
    Rng rng(11);
    const std::size_t u = 3, context = attention ? 2 * u : u;
    nn::Seq2Seq m;
    m.attention = attention;
    m.E_src = rng.normal_mat(5, u);
    m.E_tgt = rng.normal_mat(6, u);
    m.enc_fwd = tiny_gru(rng, u, u);
    if (attention) m.enc_bwd = tiny_gru(rng, u, u);
    m.dec = tiny_gru(rng, u + context, u);
    if (attention) {
        m.W_a = rng.normal_mat(4, u, 0.5);
        m.U_a = rng.normal_mat(4, context, 0.5);
        m.v_a = rng.normal_vec(4);
    }
    m.W_o = rng.normal_mat(6, u);
    m.b_o = rng.normal_vec(6, 0.1);
    return m;
}

const std::vector<std::size_t> src = {2, 4, 3, 2}, dec_in = {0, 3, 5}, dec_out = {3, 5, 1};

}  // namespace

TEST_CASE("adam_step's first step moves every weight by the learning rate against its gradient", "[training]") {
    // at t = 1, m_hat = g and v_hat = g^2, so the step is alpha g / (|g| + eps) ~ alpha sign(g)
    const nn::AdamSettings s{0.1, 0.9, 0.999, 1e-8};
    std::vector<double> theta = {1.0, -2.0, 0.5}, g = {0.3, -4.0, 0.0}, m(3, 0.0), v(3, 0.0);
    nn::adam_step(theta.data(), g.data(), m.data(), v.data(), 3, s, s.beta1, s.beta2);
    CHECK_THAT(theta[0], Catch::WithinAbs(0.9, 1e-6));
    CHECK_THAT(theta[1], Catch::WithinAbs(-1.9, 1e-6));
    CHECK(theta[2] == 0.5);  // no gradient, no step
    CHECK_THAT(m[0], Catch::WithinRel(0.03, 1e-12));
    CHECK_THAT(v[1], Catch::WithinRel(0.016, 1e-12));
    // a second step with the same gradient: the moments' bias correction keeps the step at alpha
    nn::adam_step(theta.data(), g.data(), m.data(), v.data(), 3, s, s.beta1 * s.beta1, s.beta2 * s.beta2);
    CHECK_THAT(theta[0], Catch::WithinAbs(0.8, 1e-6));
}

TEST_CASE("clip_by_global_norm scales all blocks together, and only above the threshold", "[training]") {
    std::vector<double> a = {3.0, 0.0}, b = {4.0};
    const std::vector<nn::Block> blocks = {{a.data(), a.size()}, {b.data(), b.size()}};
    CHECK(nn::clip_by_global_norm(blocks, 10.0) == 5.0);
    CHECK(a[0] == 3.0);
    CHECK(nn::clip_by_global_norm(blocks, 1.0) == 5.0);
    CHECK_THAT(a[0], Catch::WithinRel(0.6, 1e-15));
    CHECK_THAT(b[0], Catch::WithinRel(0.8, 1e-15));
    CHECK_THAT(nn::global_norm(blocks), Catch::WithinRel(1.0, 1e-15));
}

TEST_CASE("the seq2seq backward matches central differences on every weight", "[training]") {
    for (const bool attention : {false, true}) {
        INFO((attention ? "with attention" : "without attention"));
        nn::Seq2Seq m = tiny_model(attention);
        nn::Seq2Seq grads = nn::zeros_like(m);
        const double loss = nn::seq2seq_backward(m, src, dec_in, dec_out, grads).loss;
        CHECK(loss == nn::seq2seq_forward(m, src, dec_in, dec_out).loss);
        const std::vector<nn::Block> w = nn::blocks(m), g = nn::blocks(grads);
        REQUIRE(w.size() == g.size());
        double worst = 0.0;
        for (std::size_t b = 0; b < w.size(); ++b)
            for (std::size_t k = 0; k < w[b].size; ++k) {
                const double saved = w[b].data[k], h = 1e-6;
                w[b].data[k] = saved + h;
                const double up = nn::seq2seq_forward(m, src, dec_in, dec_out).loss;
                w[b].data[k] = saved - h;
                const double down = nn::seq2seq_forward(m, src, dec_in, dec_out).loss;
                w[b].data[k] = saved;
                const double numeric = (up - down) / (2.0 * h);
                worst = std::max(worst, std::abs(g[b].data[k] - numeric) / std::max(1.0, std::abs(numeric)));
            }
        // the rounding of two losses of order 10 divided by 2h is about 1e-9; a wrong term is of order 0.1
        CHECK(worst < 1e-7);
    }
}

TEST_CASE("greedy decoding stops at <eos> or at the word limit", "[training]") {
    const nn::Seq2Seq m = tiny_model(true);
    Mat weights;
    const std::vector<std::size_t> out = nn::greedy_decode(m, src, 0, 1, 4, &weights);
    CHECK(out.size() <= 4);
    for (std::size_t y : out) CHECK(y != 1);
    CHECK(weights.shape(0) == out.size());
    CHECK(weights.shape(1) == src.size());
    CHECK(nn::greedy_decode(m, src, 0, 1, 0).empty());
}

namespace {

const TensorRecord& tensor_of(const Trace& t, const std::string& step, const std::string& name) {
    for (const auto& r : t.find_step(step)->tensors)
        if (r.name == name) return r;
    FAIL("no tensor " << step << "." << name);
    throw;
}

// The pairs of one set from the export alone (written in `step`): ids up to each length, -1 after it.
std::vector<translation::Pair> exported_pairs(const Trace& t, const std::string& step, const std::string& set,
                                              std::size_t V_src, std::size_t V_tgt) {
    const Array &src = tensor_of(t, step, set + "_src").value, &tgt = tensor_of(t, step, set + "_tgt").value;
    const Array& lengths = tensor_of(t, step, set + "_lengths").value;
    const auto ids_of = [&](const Array& ids, std::size_t k, double length, std::size_t V) {
        std::vector<std::size_t> out;
        for (std::size_t j = 0; j < ids.shape(1); ++j) {
            INFO(set << " pair " << k << ", position " << j);
            if (static_cast<double>(j) >= length) {
                CHECK(ids(k, j) == -1.0);
                continue;
            }
            REQUIRE((ids(k, j) >= 0 && ids(k, j) < static_cast<double>(V)));
            out.push_back(static_cast<std::size_t>(ids(k, j)));
        }
        return out;
    };
    std::vector<translation::Pair> pairs(lengths.shape(0));
    for (std::size_t k = 0; k < pairs.size(); ++k)
        pairs[k] = {ids_of(src, k, lengths(k, 0), V_src), ids_of(tgt, k, lengths(k, 1), V_tgt)};
    return pairs;
}

// One model from the export alone: its weights are the step's tensors "<which>.<field>", in the
// order of nn::blocks; `shaped` only lends the shapes.
template <class Model>
Model exported_model(const Trace& t, const std::string& which, Model shaped) {
    std::vector<const TensorRecord*> weights;
    for (const auto& r : t.find_step("models")->tensors)
        if (r.name.rfind(which + ".", 0) == 0) weights.push_back(&r);
    const std::vector<nn::Block> blocks = nn::blocks(shaped);
    REQUIRE(weights.size() == blocks.size());
    for (std::size_t b = 0; b < blocks.size(); ++b) {
        CHECK(weights[b]->export_only);
        REQUIRE(weights[b]->value.size() == blocks[b].size);
        std::copy(weights[b]->value.begin(), weights[b]->value.end(), blocks[b].data);
    }
    return shaped;
}

}  // namespace

TEST_CASE("lesson 9's export-only data replays its training to the bit", "[training][export]") {
    const Lesson& lesson = *find_lesson("learning-to-align");
    Config config = lesson.quick;  // 50 training and 20 test pairs
    for (auto& [key, value] : config.values)
        if (key == "epochs") value = 2;
    const Trace t = run_lesson(lesson, config);
    // the vocabularies: ids 0 .. V - 1, the words as row labels, <sos> and <eos> the first target words
    const TensorRecord &source = tensor_of(t, "corpus", "source_words"), &target = tensor_of(t, "corpus", "target_words");
    const std::size_t V_src = source.value.size(), V_tgt = target.value.size();
    CHECK(target.rows.at(translation::sos) == "<sos>");
    CHECK(target.rows.at(translation::eos) == "<eos>");
    CHECK(source.rows.at(0) == "please");
    for (const auto* v : {&source, &target}) {
        CHECK(v->export_only);
        REQUIRE(v->rows.size() == v->value.size());
        for (std::size_t k = 0; k < v->value.size(); ++k) CHECK(v->value(k) == static_cast<double>(k));
    }
    const std::vector<translation::Pair> train = exported_pairs(t, "corpus", "train", V_src, V_tgt);
    const std::vector<translation::Pair> test = exported_pairs(t, "corpus", "test", V_src, V_tgt);
    REQUIRE(train.size() == 50);
    REQUIRE(test.size() == 20);
    // the first training pair as the golden step shows it
    const Array& first = tensor_of(t, "corpus", "first_pair").value;
    for (std::size_t j = 0; j < train[0].src.size(); ++j) CHECK(first(0, j) == static_cast<double>(train[0].src[j]));
    // the models: every field of nn::Seq2Seq, named after it, in the order of nn::blocks
    std::vector<std::string> names;
    for (const auto& r : t.find_step("models")->tensors)
        if (r.export_only && r.name.rfind("with.", 0) == 0) names.push_back(r.name);
    std::vector<std::string> expected = {"with.E_src", "with.E_tgt"};
    for (const char* gru : {"enc_fwd", "enc_bwd", "dec"})
        for (const char* w : {"W_z", "U_z", "W_r", "U_r", "W_h", "U_h", "b_z", "b_r", "b_h"})
            expected.push_back(std::string("with.") + gru + "." + w);
    expected.insert(expected.end(), {"with.W_a", "with.U_a", "with.v_a", "with.W_o", "with.b_o"});
    CHECK(names == expected);
    const std::size_t u = static_cast<std::size_t>(config.get("width"));
    Rng shapes(1);
    const nn::Seq2Seq without = exported_model(t, "without", translation::drawn_model(shapes, false, V_src, V_tgt, u));
    const nn::Seq2Seq with = exported_model(t, "with", translation::drawn_model(shapes, true, V_src, V_tgt, u));
    // the losses before training are those of these weights: the initial ones, not the trained ones
    const Array& losses = tensor_of(t, "training", "losses").value;
    CHECK(translation::mean_loss(without, train) == losses(0, 0));
    CHECK(translation::mean_loss(with, test) == losses(0, 3));
    // the orders: each a shuffle of the training pairs; replayed with Adam, the same losses to the bit
    const TensorRecord& order = tensor_of(t, "training", "order");
    CHECK(order.export_only);
    REQUIRE(order.shape() == Shape{2, 50});
    auto a = translation::trainer(without), b = translation::trainer(with);
    for (std::size_t epoch = 1; epoch <= 2; ++epoch) {
        INFO("epoch " << epoch);
        std::vector<std::size_t> shuffle;
        for (std::size_t k = 0; k < 50; ++k) shuffle.push_back(static_cast<std::size_t>(order.value(epoch - 1, k)));
        std::vector<std::size_t> sorted = shuffle;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t k = 0; k < 50; ++k) REQUIRE(sorted[k] == k);
        double loss_a = 0.0, loss_b = 0.0, words_a = 0.0, words_b = 0.0;
        for (std::size_t first_pair = 0; first_pair < 50; first_pair += translation::batch) {
            const std::size_t last = std::min<std::size_t>(50, first_pair + translation::batch);
            loss_a += translation::train_batch(a, train, shuffle, first_pair, last, words_a, translation::adam);
            loss_b += translation::train_batch(b, train, shuffle, first_pair, last, words_b, translation::adam);
        }
        CHECK(loss_a / words_a == losses(epoch, 0));
        CHECK(translation::mean_loss(a.model, test) == losses(epoch, 1));
        CHECK(loss_b / words_b == losses(epoch, 2));
        CHECK(translation::mean_loss(b.model, test) == losses(epoch, 3));
    }
    // golden files never hold the data: what bless writes has none of it
    const std::string golden = to_golden_json(t.for_golden());
    for (const char* name : {"\"train_src\"", "\"with.E_src\"", "\"order\"", "export_only"})
        CHECK(golden.find(name) == std::string::npos);
    CHECK_THAT(to_golden_json(t), Catch::Contains("\"export_only\": true"));
    // nor does what a student's lesson run reports from the sandbox of attn grade --sources: only
    // what the comparison reads
    ExerciseObservations seen;
    seen.lessons["learning-to-align"] = LessonRun{t, "", "", ""};
    const ExerciseObservations back = parse_observations(observations_json(seen));
    const Trace& observed = back.lessons.at("learning-to-align").trace;
    CHECK(to_golden_json(observed) == golden);
}


TEST_CASE("lesson 12's export-only data replays the Transformer's first epoch to the bit", "[training][export]") {
    const Lesson& lesson = *find_lesson("transformer");
    const Config config = lesson.quick;  // 50 training and 20 test pairs, one epoch
    REQUIRE(config.get("epochs") == 1);
    const Trace t = run_lesson(lesson, config);
    const TensorRecord &source = tensor_of(t, "models", "source_words"), &target = tensor_of(t, "models", "target_words");
    const std::size_t V_src = source.value.size(), V_tgt = target.value.size();
    CHECK(target.rows.at(translation::eos) == "<eos>");
    const std::vector<translation::Pair> train = exported_pairs(t, "models", "train", V_src, V_tgt);
    const std::vector<translation::Pair> test = exported_pairs(t, "models", "test", V_src, V_tgt);
    REQUIRE(train.size() == 50);
    REQUIRE(test.size() == 20);
    // the Transformer's tensors, named and shaped as nn::named_tensors gives them; the values from
    // the export alone (the model lending its shapes is zeroed first)
    nn::EncoderDecoder shaped = nn::zeros_like(transformer::race_start(config).start.transformer);
    std::vector<std::string> names;
    for (const auto& r : t.find_step("models")->tensors)
        if (r.name.rfind("transformer.", 0) == 0) names.push_back(r.name);
    const std::vector<nn::NamedEntries> entries = nn::named_tensors(shaped);
    REQUIRE(names.size() == entries.size());
    for (std::size_t k = 0; k < entries.size(); ++k) {
        CHECK(names[k] == "transformer." + entries[k].name);
        const Shape shape = tensor_of(t, "models", names[k]).shape();
        CHECK(std::vector<std::size_t>(shape.begin(), shape.end()) == entries[k].shape);
    }
    CHECK(tensor_of(t, "models", "transformer.E_src").shape() == Shape{V_src, 32});
    CHECK(tensor_of(t, "models", "transformer.dec2.X_K").shape() == Shape{32, 32});
    const nn::EncoderDecoder model = exported_model(t, "transformer", shaped);
    const Array& losses = tensor_of(t, "race", "losses").value;
    CHECK(translation::mean_loss(model, train) == losses(0, 4));
    CHECK(translation::mean_loss(model, test) == losses(0, 5));
    // the first epoch replayed from the exported order, with the warmed-up Adam of the lesson
    const TensorRecord& order = tensor_of(t, "models", "order");
    REQUIRE(order.shape() == Shape{1, 50});
    std::vector<std::size_t> shuffle;
    for (std::size_t k = 0; k < 50; ++k) shuffle.push_back(static_cast<std::size_t>(order.value(0, k)));
    std::vector<std::size_t> sorted = shuffle;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t k = 0; k < 50; ++k) REQUIRE(sorted[k] == k);
    auto trainer = translation::trainer(model);
    double loss = 0.0, words = 0.0;
    for (std::size_t first_pair = 0; first_pair < 50; first_pair += translation::batch) {
        const nn::AdamSettings scheduled =
            transformer::transformer_adam(static_cast<std::size_t>(trainer.steps) + 1, config);
        const std::size_t last = std::min<std::size_t>(50, first_pair + translation::batch);
        loss += translation::train_batch(trainer, train, shuffle, first_pair, last, words, scheduled);
    }
    CHECK(loss / words == losses(1, 4));
    CHECK(translation::mean_loss(trainer.model, test) == losses(1, 5));
    // the recurrent models' weights are exported too, and none of it reaches the golden file
    CHECK(tensor_of(t, "models", "with.W_a").export_only);
    CHECK(tensor_of(t, "models", "without.dec.W_z").export_only);
    const std::string golden = to_golden_json(t.for_golden());
    for (const char* name : {"\"train_src\"", "\"transformer.E_src\"", "\"order\"", "export_only"})
        CHECK(golden.find(name) == std::string::npos);
}

}  // namespace test_training

namespace test_training {

namespace {

// Every entry of a model's gradient, in the order of nn::blocks.
template <class Model>
std::vector<double> entries_of(Model m) {
    std::vector<double> out;
    for (const nn::Block& b : nn::blocks(m)) out.insert(out.end(), b.data, b.data + b.size);
    return out;
}

double largest_gap(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double gap = 0.0;
    for (std::size_t k = 0; k < a.size(); ++k) gap = std::max(gap, std::abs(a[k] - b[k]));
    return gap;
}

double largest_magnitude(const std::vector<double>& a) {
    double m = 0.0;
    for (const double x : a) m = std::max(m, std::abs(x));
    return m;
}

// One batch of `pairs` (the first `count`) through batch_gradient in `how`'s way: the gradient's entries
// and the summed loss.
template <class Model>
std::pair<std::vector<double>, double> one_gradient(const Model& model, const std::vector<translation::Pair>& pairs,
                                                    std::size_t count, const translation::Training& how) {
    auto t = translation::trainer(model, how);
    std::vector<std::size_t> order(pairs.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    double loss = 0.0, words = 0.0;
    const Model grads = translation::batch_gradient(t, pairs, order, 0, count, loss, words);
    return {entries_of(grads), loss};
}

// The same step the fast way (the Transformer's batch stacked, the GRU's in lanes) on 1, 2 and 3 threads
// (the same bytes), and against the lessons' one sum in the portable arithmetic: within `tolerance` of the
// gradient's largest entry (a sentence left out is not).
template <class Model>
void check_fast(const Model& model, const std::vector<translation::Pair>& pairs) {
    const std::size_t n = translation::batch;
    REQUIRE(pairs.size() >= n);
    const auto one = one_gradient(model, pairs, n, translation::fast_training(1));
    const auto two = one_gradient(model, pairs, n, translation::fast_training(2));
    const auto three = one_gradient(model, pairs, n, translation::fast_training(3));
    CHECK(two.first == one.first);  // every entry the same double (and no NaN: NaN != NaN would fail here)
    CHECK(three.first == one.first);
    CHECK(two.second == one.second);
    CHECK(three.second == one.second);
    // The lanes add the sixteen sentences' gradients in another order (the stack adds all their tokens' terms
    // in one sum per entry), and their products round once per multiply-add (fused) where the lessons' round
    // twice. Each differs from the exact sum by a few units of
    // double's 1.1e-16 per term, relative to the sum of the terms' magnitudes; through a pass of some twenty
    // products and softmaxes, with cancellation, 1e-12 of the gradient's largest entry leaves room of about
    // a thousand (measured: 3e-16 of it for the Transformer, 6e-16 for the GRU). A sentence left out moves it
    // by about a sixteenth.
    constexpr double tolerance = 1e-12;
    const auto lessons = one_gradient(model, pairs, n, translation::Training{});
    const double scale = largest_magnitude(lessons.first);
    REQUIRE(scale > 0.0);
    const double gap = largest_gap(one.first, lessons.first);
    INFO("largest gap " << gap << " of the largest entry " << scale);
    CHECK(gap <= tolerance * scale);
    CHECK(std::abs(one.second - lessons.second) <= tolerance * lessons.second);
    const auto fewer = one_gradient(model, pairs, n - 1, translation::fast_training(2));
    CHECK(largest_gap(fewer.first, lessons.first) > 1e3 * tolerance * scale);
    // attn train --float32: the products in float32 (2^-24 = 6e-8 per rounding, some tens of roundings
    // deep through the pass): within 1e-4 of the largest entry, a margin of about a hundred; and not
    // float64's (more than 1e-10 of it away) where the model's products have 8 columns or more, as the
    // Transformer's do (the GRU's matrix-vector products stay float64)
    translation::Training single = translation::fast_training(2);
    single.arithmetic = nn::Arithmetic::single;
    const auto f32 = one_gradient(model, pairs, n, single);
    const double f32_gap = largest_gap(f32.first, lessons.first);
    INFO("float32 products: largest gap " << f32_gap << " of the largest entry " << scale);
    CHECK(f32_gap <= 1e-4 * scale);
    if constexpr (std::is_same_v<Model, nn::EncoderDecoder>) CHECK(f32_gap > 1e-10 * scale);
}

}  // namespace

TEST_CASE("fast training (stacked, in lanes) gives the same bytes on 1, 2 and 3 threads, and the lessons' "
          "gradient to 1e-12",
          "[training]") {
    const Lesson& lesson = *find_lesson("transformer");
    const transformer::RaceStart r = transformer::race_start(lesson.defaults);
    const std::vector<translation::Pair> pairs(r.corpus.train.begin(), r.corpus.train.begin() + translation::batch);
    SECTION("the Transformer, stacked") { check_fast(r.start.transformer, pairs); }
    SECTION("the GRU with attention, in lanes") { check_fast(r.start.with, pairs); }
}

}  // namespace test_training
