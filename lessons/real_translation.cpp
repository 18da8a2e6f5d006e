#include "real_translation.hpp"

#include "nn/beam_search.hpp"
#include "nn/bleu.hpp"
#include "nn/optimizer.hpp"
#include "nn/reductions.hpp"
#include "text/bpe.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>

namespace attn::real_translation {

using translation::Pair;
using json = nlohmann::ordered_json;

namespace {

// `count` of `from`, evenly spaced: the k-th is from[floor(k n / count)]; all of them when count >= n.
std::vector<text::VersePair> evenly(const std::vector<text::VersePair>& from, std::size_t count) {
    if (count >= from.size()) return from;
    std::vector<text::VersePair> out;
    for (std::size_t k = 0; k < count; ++k) out.push_back(from[k * from.size() / count]);
    return out;
}

}  // namespace

const Lesson& lesson() {
    const Lesson* l = find_lesson("real-translation");
    if (l == nullptr) throw std::logic_error("lesson real-translation is not registered");
    return *l;
}

// ---------------------------------------------------------------- the verses

std::shared_ptr<const Verses> read_verses() {
    static std::mutex guard;
    static std::shared_ptr<const Verses> kept;
    const std::lock_guard<std::mutex> lock(guard);
    if (kept) return kept;
    auto v = std::make_shared<Verses>();
    const std::vector<text::Verse> en = text::read_module(text::english_module(), true);
    const std::vector<text::Verse> es = text::read_module(text::spanish_module(), false);
    v->pairs = text::align_by_reference(en, es, v->counts);
    v->split = text::split_by_books(v->pairs, text::book_split());
    v->near_duplicates = text::near_duplicates(v->split.test, v->split.train);
    v->alphabet = text::alphabet(v->split.train);
    kept = v;
    return kept;
}

std::size_t longer_side(const text::VersePair& p) { return std::max(text::word_count(p.en), text::word_count(p.es)); }

Chosen chosen_verses(const Verses& v, const Config& c) {
    const std::size_t most = c.size(param::max_words);
    std::vector<text::VersePair> short_train, short_validation;
    for (const text::VersePair& p : v.split.train)
        if (longer_side(p) <= most) short_train.push_back(p);
    for (const text::VersePair& p : v.split.validation)
        if (longer_side(p) <= most) short_validation.push_back(p);
    return {evenly(short_train, c.size(param::pairs)), evenly(short_validation, c.size(param::validation)),
            evenly(v.split.test, c.size(param::test)), short_train.size()};
}

// ---------------------------------------------------------------- translating and scoring

std::size_t most_pieces(std::size_t source_pieces) { return source_pieces + source_pieces / 2 + 5; }

std::vector<std::size_t> beam_translation(const nn::EncoderDecoder& m, const std::vector<std::size_t>& source,
                                          std::size_t width) {
    const Mat H = nn::encoder_output(m, source);
    std::vector<std::size_t> out =
        nn::beam_search(m, H, translation::sos, translation::eos, width, most_pieces(source.size()), 1.0).front().words;
    if (!out.empty() && out.back() == translation::eos) out.pop_back();
    return out;
}

std::vector<std::vector<std::size_t>> beam_all(const nn::EncoderDecoder& m, const std::vector<Pair>& pairs,
                                               std::size_t width) {
    std::vector<std::vector<std::size_t>> out(pairs.size());
    translation::for_each_independent(pairs.size(),
                                      [&](std::size_t k) { out[k] = beam_translation(m, pairs[k].src, width); });
    return out;
}

BleuWords bleu_words(const text::Tokenizer& t, const std::vector<text::VersePair>& verses,
                     const std::vector<std::vector<std::vector<std::size_t>>>& outputs) {
    std::map<std::string, std::size_t> ids;
    const auto of = [&](const std::string& sentence) {
        std::vector<std::size_t> out;
        for (const std::string& w : text::words_of(sentence)) out.push_back(ids.emplace(w, ids.size()).first->second);
        return out;
    };
    BleuWords w;
    for (const text::VersePair& v : verses) w.references.push_back(of(v.es));
    for (const std::vector<std::vector<std::size_t>>& output : outputs) {
        if (output.size() != verses.size()) throw std::logic_error("bleu_words: one translation a verse is needed");
        w.candidates.emplace_back();
        for (const std::vector<std::size_t>& pieces : output) w.candidates.back().push_back(of(decoded(t, pieces)));
    }
    return w;
}

// ---------------------------------------------------------------- pieces and ids

std::size_t model_id(int piece) {
    switch (piece) {
    case 0: return 2;  // <unk>
    case 1: return translation::sos;
    case 2: return translation::eos;
    default: return static_cast<std::size_t>(piece);
    }
}

int piece_id(std::size_t id) {
    switch (id) {
    case 2: return 0;
    case translation::sos: return 1;
    case translation::eos: return 2;
    default: return static_cast<int>(id);
    }
}

std::vector<std::size_t> model_ids(const text::Tokenizer& t, const std::string& text) {
    std::vector<std::size_t> ids;
    for (int p : t.encode(text)) ids.push_back(model_id(p));
    return ids;
}

std::string decoded(const text::Tokenizer& t, const std::vector<std::size_t>& ids) {
    std::vector<int> pieces;
    for (std::size_t id : ids) pieces.push_back(piece_id(id));
    return t.decode(pieces);
}

std::vector<std::string> piece_labels(const text::Tokenizer& t, const std::vector<std::size_t>& ids) {
    std::vector<std::string> out;
    for (std::size_t id : ids) {
        std::string piece = t.piece(piece_id(id));
        if (piece.rfind(text::word_start, 0) == 0) piece = "_" + piece.substr(text::word_start.size());
        out.push_back(piece);
    }
    return out;
}

std::vector<std::string> tokenizer_text(const Chosen& chosen, const Verses& v) {
    std::vector<std::string> lines;
    for (const text::VersePair& p : chosen.train) lines.push_back(p.en);
    for (const text::VersePair& p : chosen.train) lines.push_back(p.es);
    std::string letters;
    for (const std::string& ch : text::utf8_characters(v.alphabet)) letters += (letters.empty() ? "" : " ") + ch;
    lines.push_back(letters);
    return lines;
}

std::string trained_tokenizer(const Chosen& chosen, const Verses& v, const Config& c) {
    text::SentencePieceOptions options;
    options.vocab_size = c.size(param::vocab);
    options.hard_vocab_limit = false;
    return text::train_sentencepiece(tokenizer_text(chosen, v), options);
}

Tokenized tokenized(const text::Tokenizer& t, const Chosen& chosen) {
    const auto pairs = [&](const std::vector<text::VersePair>& verses) {
        std::vector<Pair> out;
        for (const text::VersePair& p : verses) out.push_back({model_ids(t, p.en), model_ids(t, p.es)});
        return out;
    };
    Tokenized out{pairs(chosen.train), pairs(chosen.validation), pairs(chosen.test), {}};
    for (int k = 0; k < t.size(); ++k) out.pieces.push_back(t.piece(piece_id(static_cast<std::size_t>(k))));
    return out;
}

// ---------------------------------------------------------------- the models

translation::TransformerSizes sizes_of(const Config& c) {
    return {c.size(param::d_model), c.size(param::heads), c.size(param::layers), c.size(param::d_ff)};
}

Models drawn_models(Rng& rng, const Config& c, std::size_t V) {
    const std::size_t u = c.size(param::width);
    Models m{translation::drawn_model(rng, false, V, V, u), translation::drawn_model(rng, true, V, V, u), {}};
    m.transformer = translation::drawn_transformer(rng, sizes_of(c), V, V);
    return m;
}

// ---------------------------------------------------------------- a training run

nn::AdamSettings transformer_adam(std::size_t step, const Config& c) {
    return {nn::warmup_learning_rate(step, c.size(param::d_model), c.size(param::warmup)), 0.9, 0.98, 1e-9};
}

namespace {

// Row `row` of the curves: the training losses given, the validation losses measured now.
void record_curves(Run& r, std::size_t row, const std::array<double, 3>& train) {
    const std::array<double, 6> v = {train[0], translation::mean_loss(r.without.model, r.data.validation),
                                     train[1], translation::mean_loss(r.with.model, r.data.validation),
                                     train[2], translation::mean_loss(r.transformer.model, r.data.validation)};
    for (std::size_t k = 0; k < 6; ++k) r.curves(row, k) = v[k];
}

}  // namespace

std::size_t total_epochs(const Run& r) { return r.config.size(param::epochs); }

void set_training(Run& r, const translation::Training& how) {
    r.without.how = how;
    r.with.how = how;
    r.transformer.how = how;
}

std::size_t lanes_of(const translation::Training& how) { return how.fast ? translation::gradient_lanes : 0; }

std::array<double, 3> validation_bleu(const Run& r, const Chosen& chosen) {
    const BleuWords w = bleu_words(text::Tokenizer(r.tokenizer_model), chosen.validation,
                                   {greedy_all(r.without.model, r.data.validation),
                                    greedy_all(r.with.model, r.data.validation),
                                    greedy_all(r.transformer.model, r.data.validation)});
    std::array<double, 3> out{};
    for (std::size_t m = 0; m < out.size(); ++m) out[m] = 100.0 * nn::bleu(w.candidates[m], w.references).bleu;
    return out;
}

Run start_run(const Verses& v, const Chosen& chosen, const Config& c) {
    Run r;
    r.config = c;
    r.tokenizer_model = trained_tokenizer(chosen, v, c);
    const text::Tokenizer t(r.tokenizer_model);
    r.data = tokenized(t, chosen);
    r.rng = Rng(c.seed);
    r.start = drawn_models(r.rng, c, r.data.pieces.size());
    r.without = translation::trainer(r.start.without);
    r.with = translation::trainer(r.start.with);
    r.transformer = translation::trainer(r.start.transformer);
    r.order.resize(r.data.train.size());
    for (std::size_t k = 0; k < r.order.size(); ++k) r.order[k] = k;
    r.first = nn::zeros(first_batches, 3);
    r.curves = nn::zeros(total_epochs(r) + 1, 6);
    record_curves(r, 0,
                  {translation::mean_loss(r.without.model, r.data.train), translation::mean_loss(r.with.model, r.data.train),
                   translation::mean_loss(r.transformer.model, r.data.train)});
    return r;
}

void train_epoch(Run& r, const Trace& progress) {
    if (r.epoch >= total_epochs(r)) throw std::logic_error("train_epoch: every epoch is done");
    const std::size_t epoch = ++r.epoch, epochs = total_epochs(r);
    translation::shuffle_epoch(r.rng, r.order);
    std::array<double, 3> loss{}, words{};
    using Clock = std::chrono::steady_clock;
    const std::vector<Pair>& train = r.data.train;
    for (std::size_t first = 0; first < r.order.size(); first += translation::batch, ++r.batches) {
        const std::size_t last = std::min(r.order.size(), first + translation::batch);
        std::array<double, 3> batch_loss{}, batch_words{};
        const auto timed = [&](std::size_t model, auto&& work) {
            const Clock::time_point begin = Clock::now();
            batch_loss[model] = work();
            r.seconds[model] += std::chrono::duration<double>(Clock::now() - begin).count();
        };
        timed(0, [&] {
            return translation::train_batch(r.without, train, r.order, first, last, batch_words[0], translation::adam);
        });
        timed(1, [&] {
            return translation::train_batch(r.with, train, r.order, first, last, batch_words[1], translation::adam);
        });
        const nn::AdamSettings scheduled = transformer_adam(static_cast<std::size_t>(r.transformer.steps) + 1, r.config);
        timed(2, [&] {
            return translation::train_batch(r.transformer, train, r.order, first, last, batch_words[2], scheduled);
        });
        for (std::size_t k = 0; k < 3; ++k) {
            if (r.batches < first_batches) r.first(r.batches, k) = batch_loss[k] / batch_words[k];
            loss[k] += batch_loss[k];
            words[k] += batch_words[k];
            r.trained_pieces[k] += batch_words[k];
        }
        if ((first / translation::batch) % 4 == 0)
            progress.progress(fmt::format("training, epoch {} of {}: {} of {} verses, loss {:.3f} {:.3f} {:.3f}", epoch,
                                          epochs, last, r.order.size(), loss[0] / words[0], loss[1] / words[1],
                                          loss[2] / words[2]));
    }
    record_curves(r, epoch, {loss[0] / words[0], loss[1] / words[1], loss[2] / words[2]});
}

// ---------------------------------------------------------------- checkpoints

namespace {

constexpr const char* checkpoint_format = "attn translator checkpoint";
constexpr int checkpoint_version = 1;
const std::array<const char*, 3> model_names = {"without", "with", "transformer"};

std::string hex64(std::uint64_t x) { return fmt::format("{:016x}", x); }
std::string hex_double(double d) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    return hex64(bits);
}

// A tensor of the models, by name, where its numbers live (in a model of the right shapes).
struct Slot {
    std::string name, role;
    double* data;
    std::vector<std::size_t> shape;
};

std::vector<Slot> model_slots(Models& m) {
    std::vector<Slot> out;
    const auto seq2seq = [&](const std::string& model, nn::Seq2Seq& s, const std::string& role) {
        const std::vector<std::pair<std::string, Array>> named = translation::named_weights(s);
        const std::vector<nn::Block> blocks = nn::blocks(s);
        for (std::size_t k = 0; k < named.size(); ++k)
            out.push_back({model + "." + named[k].first, role, blocks[k].data,
                           {named[k].second.shape().begin(), named[k].second.shape().end()}});
    };
    seq2seq("without", m.without, "lesson 9's GRU encoder-decoder without attention (nn::Seq2Seq)");
    seq2seq("with", m.with, "lesson 9's GRU encoder-decoder with additive attention (nn::Seq2Seq)");
    for (const nn::NamedEntries& e : nn::named_tensors(m.transformer))
        out.push_back({"transformer." + e.name, "lesson 12's Transformer (nn::EncoderDecoder)", e.data, e.shape});
    return out;
}

template <class T>
Vec as_vec(const std::vector<T>& v) {
    Vec out = nn::zeros(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) out(k) = static_cast<double>(v[k]);
    return out;
}

template <class Model>
std::vector<NpzMember> trainer_members(const std::string& model, const translation::Trainer<Model>& t) {
    return {{model + ".adam_m", Array(as_vec(t.m))},
            {model + ".adam_v", Array(as_vec(t.v))},
            {model + ".adam", Array(Vec{t.beta1_power, t.beta2_power, t.clipped, t.steps})}};
}


json config_json(const Config& c) {
    json settings = json::object();
    for (const auto& [key, value] : c.values) settings[key] = value;
    return {{"seed", std::to_string(c.seed)}, {"settings", settings}};
}

// The members by name; CheckpointError for a name given twice.
std::map<std::string, const NpzMember*> by_name(const std::vector<NpzMember>& members, const std::string& source) {
    std::map<std::string, const NpzMember*> out;
    for (const NpzMember& m : members)
        if (!out.emplace(m.name, &m).second)
            throw CheckpointError(fmt::format("{}: the member {} is there twice", source, m.name));
    return out;
}

const NpzMember& member(const std::map<std::string, const NpzMember*>& members, const std::string& name,
                        bool array, const std::string& source) {
    const auto it = members.find(name);
    if (it == members.end())
        throw CheckpointError(fmt::format("{}: no {} in the checkpoint (cut short, or not a checkpoint of attn train)",
                                          source, array ? name + ".npy" : name));
    if (it->second->is_array() != array)
        throw CheckpointError(fmt::format("{}: {} is {} where a checkpoint has {}", source, name,
                                          array ? "bytes" : "a tensor", array ? "a tensor" : "bytes"));
    return *it->second;
}

// The tensor `name`, of shape `shape`, copied to `to`.
void load(const std::map<std::string, const NpzMember*>& members, const std::string& name,
          const std::vector<std::size_t>& shape, double* to, const std::string& source) {
    const Array& a = member(members, name, true, source).array();
    const std::vector<std::size_t> got(a.shape().begin(), a.shape().end());
    if (got != shape)
        throw CheckpointError(fmt::format("{}: {} has shape [{}] where this configuration's model has [{}]", source,
                                          name, fmt::join(got, ", "), fmt::join(shape, ", ")));
    for (std::size_t k = 0; k < a.size(); ++k)
        if (!std::isfinite(a.data()[k]))
            throw CheckpointError(fmt::format("{}: {} holds {} at flat index {}", source, name, a.data()[k], k));
    std::copy(a.data(), a.data() + a.size(), to);
}

// The description and the configuration it names, checked; the members by name.
struct Opened {
    std::map<std::string, const NpzMember*> members;
    json description;
    Config config;
    std::size_t epochs_done = 0;
};

Opened opened(const std::vector<NpzMember>& members, const std::string& source) {
    Opened o;
    o.members = by_name(members, source);
    const std::string& text = member(o.members, "attn.json", false, source).bytes();
    try {
        o.description = json::parse(text);
        if (o.description.value("format", "") != checkpoint_format)
            throw CheckpointError(fmt::format("{}: not a checkpoint of attn train (its attn.json names the format "
                                              "\"{}\")",
                                              source, o.description.value("format", "")));
        const int version = o.description.at("format_version").get<int>();
        if (version != checkpoint_version)
            throw CheckpointError(fmt::format("{}: a checkpoint of format version {}, which this attn does not read "
                                              "(it reads version {}): train it again with this attn, or use the attn "
                                              "that wrote it",
                                              source, version, checkpoint_version));
        std::vector<Setting> settings;
        for (const auto& [key, value] : o.description.at("settings").items())
            settings.push_back({key, value.get<long long>()});
        const Lesson& l = lesson();
        o.config = apply_settings(l.params, parse_seed(o.description.at("seed").get<std::string>()), settings);
        if (const std::string why = l.limits(o.config); !why.empty())
            throw CheckpointError(fmt::format("{}: its configuration is not one attn trains: {}", source, why));
        o.epochs_done = o.description.at("epochs_done").get<std::size_t>();
        if (o.epochs_done > o.config.size(param::epochs))
            throw CheckpointError(fmt::format("{}: {} epochs done of {}", source, o.epochs_done,
                                              o.config.size(param::epochs)));
    } catch (const json::exception& e) {
        throw CheckpointError(fmt::format("{}: its attn.json is not what attn train writes: {}", source, e.what()));
    } catch (const SettingError& e) {
        throw CheckpointError(fmt::format("{}: its configuration is not one of this attn: {}", source, e.what()));
    }
    return o;
}

Models shaped_models(const Config& c, std::size_t V) {
    Rng rng(c.seed);
    return drawn_models(rng, c, V);  // the shapes; every number is then loaded
}

void load_models(const Opened& o, Models& m, const std::string& source) {
    for (Slot& s : model_slots(m)) load(o.members, s.name, s.shape, s.data, source);
}

// attn train's validation BLEU after each epoch in attn.json, null where it was not measured; and read back:
// NaN for every epoch done when a checkpoint of an attn that did not measure it has none.
json validation_bleu_json(const std::vector<std::array<double, 3>>& by_epoch) {
    json rows = json::array();
    for (const std::array<double, 3>& b : by_epoch) {
        json row = json::array();
        for (const double x : b) row.push_back(std::isnan(x) ? json(nullptr) : json(x));
        rows.push_back(row);
    }
    return {{"about", "corpus BLEU x 100 of the validation verses after each epoch, greedy (without, with, Transformer)"},
            {"by_epoch", rows}};
}

std::vector<std::array<double, 3>> validation_bleu_of(const json& description, std::size_t epochs) {
    std::vector<std::array<double, 3>> out(epochs, {std::nan(""), std::nan(""), std::nan("")});
    if (!description.contains("validation_bleu")) return out;
    const json& rows = description.at("validation_bleu").at("by_epoch");
    if (rows.size() != epochs)
        throw std::runtime_error(fmt::format("validation_bleu has {} epochs, not {}", rows.size(), epochs));
    for (std::size_t e = 0; e < epochs; ++e)
        for (std::size_t m = 0; m < 3; ++m) {
            const json& x = rows.at(e).at(m);
            out[e][m] = x.is_null() ? std::nan("") : x.get<double>();
        }
    return out;
}

// A worked example to check a reimplementation against (README's PyTorch script): the first test verse,
// teacher-forced, and each model's -log p(target | source), in nats, as this attn computes it.
json worked_example(const Run& r) {
    const Pair& p = r.data.test.front();
    return {{"source_ids", p.src},
            {"target_ids", p.tgt},
            {"about", "the first test verse (John 1:1) in the models' ids; the target without <sos> and <eos>, "
                      "whose -log p is included"},
            {"neg_log_prob", {{"without", translation::teacher_forced(r.without.model, p).loss},
                              {"with", translation::teacher_forced(r.with.model, p).loss},
                              {"transformer", translation::teacher_forced(r.transformer.model, p).loss}}}};
}

}  // namespace

std::vector<NpzMember> checkpoint_members(const Run& r) {
    Models trained{r.without.model, r.with.model, r.transformer.model};
    std::vector<Slot> slots = model_slots(trained);
    json tensors = json::array();
    std::vector<NpzMember> weights;
    for (const Slot& s : slots) {
        std::size_t size = 1;
        for (std::size_t n : s.shape) size *= n;
        Array a = xt::empty<double>(s.shape);
        std::copy(s.data, s.data + size, a.data());
        weights.push_back({s.name, std::move(a)});
        tensors.push_back({{"name", s.name + ".npy"}, {"shape", s.shape}, {"role", s.role}});
    }
    std::vector<NpzMember> state;
    for (auto& m : trainer_members("without", r.without)) state.push_back(std::move(m));
    for (auto& m : trainer_members("with", r.with)) state.push_back(std::move(m));
    for (auto& m : trainer_members("transformer", r.transformer)) state.push_back(std::move(m));
    state.push_back({"order", Array(as_vec(r.order))});
    state.push_back({"first_steps", Array(r.first)});
    state.push_back({"losses", Array(r.curves)});
    for (const NpzMember& m : state)
        tensors.push_back({{"name", m.name + ".npy"},
                           {"shape", std::vector<std::size_t>(m.array().shape().begin(), m.array().shape().end())},
                           {"role", "resuming the training: Adam's moments and step counts, the batch order, the "
                                    "losses so far"}});
    const Rng::State g = r.rng.state();
    json description = {
        {"format", checkpoint_format},
        {"format_version", checkpoint_version},
        {"lesson", "real-translation"},
        {"about", "Lesson 14's three translation models (English to Spanish), trained by attn train; numpy.load reads "
                  "every tensor, SentencePiece's own library the tokenizer (tokenizer.model). Ids: <sos> 0, <eos> 1, "
                  "<unk> 2, then SentencePiece's ids (its <unk> <s> </s> are 0, 1, 2)."},
    };
    const json configuration = config_json(r.config);  // a local: items() of a temporary would dangle
    for (const auto& [key, value] : configuration.items()) description[key] = value;
    description["training"] = translation::training_name(r.transformer.how);
    description["gradient_lanes"] = lanes_of(r.transformer.how);
    description["epochs_done"] = r.epoch;
    description["batches_done"] = r.batches;
    description["validation_bleu"] = validation_bleu_json(r.validation_bleu);
    description["vocabulary"] = r.data.pieces.size();
    description["generator"] = {{"state", {hex64(g.words[0]), hex64(g.words[1]), hex64(g.words[2]), hex64(g.words[3])}},
                                {"has_spare", g.has_spare},
                                {"spare_bits", hex_double(g.spare)}};
    description["tensors"] = tensors;
    if (!r.data.test.empty()) description["example"] = worked_example(r);
    std::vector<NpzMember> out = {{"attn.json", description.dump(1) + "\n"}, {"tokenizer.model", r.tokenizer_model}};
    for (auto& m : weights) out.push_back(std::move(m));
    for (auto& m : state) out.push_back(std::move(m));
    return out;
}

Translator translator_of(const std::vector<NpzMember>& members, const std::string& source) {
    const Opened o = opened(members, source);
    Translator t;
    t.config = o.config;
    t.epochs_done = o.epochs_done;
    t.tokenizer_model = member(o.members, "tokenizer.model", false, source).bytes();
    std::size_t V = 0;
    try {
        V = static_cast<std::size_t>(text::Tokenizer(t.tokenizer_model).size());
    } catch (const text::TokenizerError& e) {
        throw CheckpointError(fmt::format("{}: its tokenizer.model does not load: {}", source, e.what()));
    }
    t.models = shaped_models(o.config, V);
    load_models(o, t.models, source);
    return t;
}

Run resumed_run(const Verses& v, const std::vector<NpzMember>& members, const std::string& source) {
    const Opened o = opened(members, source);
    const Chosen chosen = chosen_verses(v, o.config);
    Run r = start_run(v, chosen, o.config);
    if (member(o.members, "tokenizer.model", false, source).bytes() != r.tokenizer_model)
        throw CheckpointError(fmt::format("{}: its tokenizer is not the one these verses give at its configuration "
                                          "(another SentencePiece release, or other modules): it cannot be resumed "
                                          "here",
                                          source));
    Models m{r.without.model, r.with.model, r.transformer.model};
    load_models(o, m, source);
    r.without.model = m.without;
    r.with.model = m.with;
    r.transformer.model = m.transformer;
    const auto trainer_state = [&](const std::string& model, auto& t) {
        load(o.members, model + ".adam_m", {t.m.size()}, t.m.data(), source);
        load(o.members, model + ".adam_v", {t.v.size()}, t.v.data(), source);
        std::array<double, 4> s{};
        load(o.members, model + ".adam", {4}, s.data(), source);
        t.beta1_power = s[0];
        t.beta2_power = s[1];
        t.clipped = s[2];
        t.steps = s[3];
    };
    trainer_state("without", r.without);
    trainer_state("with", r.with);
    trainer_state("transformer", r.transformer);
    std::vector<double> order(r.order.size());
    load(o.members, "order", {order.size()}, order.data(), source);
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (order[k] < 0.0 || order[k] >= static_cast<double>(order.size()) || order[k] != std::floor(order[k]))
            throw CheckpointError(fmt::format("{}: order.npy holds {} at {}, not a verse's index", source, order[k], k));
        r.order[k] = static_cast<std::size_t>(order[k]);
    }
    load(o.members, "first_steps", {first_batches, 3}, r.first.data(), source);
    load(o.members, "losses", {r.curves.shape(0), r.curves.shape(1)}, r.curves.data(), source);
    try {
        const json& g = o.description.at("generator");
        Rng::State s;
        for (std::size_t k = 0; k < 4; ++k) s.words[k] = std::stoull(g.at("state").at(k).get<std::string>(), nullptr, 16);
        s.has_spare = g.at("has_spare").get<bool>();
        const std::uint64_t bits = std::stoull(g.at("spare_bits").get<std::string>(), nullptr, 16);
        std::memcpy(&s.spare, &bits, sizeof bits);
        r.rng = Rng::from_state(s);
        r.epoch = o.epochs_done;
        r.batches = o.description.at("batches_done").get<std::size_t>();
        r.validation_bleu = validation_bleu_of(o.description, r.epoch);
        // a checkpoint written before attn train had lanes was trained the lessons' way
        r.saved_training = o.description.value("training", translation::training_name({}));
    } catch (const std::exception& e) {
        throw CheckpointError(fmt::format("{}: its generator state or counts are not what attn train writes: {}",
                                          source, e.what()));
    }
    return r;
}

}  // namespace attn::real_translation
