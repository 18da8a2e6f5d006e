// Lesson 9's translation task, shared (see translation.hpp): the corpus, lesson 9's models, one
// pass of any model.
#include "translation.hpp"

#include "nn/kv_cache.hpp"
#include "nn/reductions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

namespace attn::translation {

std::size_t default_threads() {
    static const std::size_t threads = std::min<std::size_t>(gradient_lanes, std::max(1U, std::thread::hardware_concurrency()));
    return threads;
}

Training fast_training(std::size_t threads) { return {true, std::max<std::size_t>(1, threads), nn::Arithmetic::native}; }

std::string summation_name(const Training& how) {
    return how.fast ? fmt::format("stacked (Transformer) or in {} lanes (GRU)", gradient_lanes)
                    : "the lessons' way (one sum";
}

std::string training_name(const Training& how) {
    if (!how.fast) return summation_name(how) + ", portable products)";
    if (how.arithmetic == nn::Arithmetic::single)
        return fmt::format("{}, float32 products{}", summation_name(how), nn::native_is_fused() ? " (fused)" : "");
    const bool fused = how.arithmetic == nn::Arithmetic::native && nn::native_is_fused();
    return fmt::format("{}, {} products", summation_name(how), fused ? "fused" : "portable");
}

std::string training_text(const Training& how) {
    return fmt::format("{} on {} thread{}", training_name(how), how.threads, how.threads == 1 ? "" : "s");
}

void run_lanes(std::size_t lanes, std::size_t threads, nn::Arithmetic arithmetic,
               const std::function<void(std::size_t)>& work) {
    std::atomic<std::size_t> next{0};
    std::mutex failed;
    std::exception_ptr failure;
    const auto take_lanes = [&] {
        const nn::ScopedOneThread one;
        const nn::ScopedArithmetic products(arithmetic);
        for (std::size_t lane = next++; lane < lanes; lane = next++) try {
                work(lane);
            } catch (...) {
                const std::lock_guard<std::mutex> hold(failed);
                if (!failure) failure = std::current_exception();
            }
    };
    std::vector<std::thread> helpers;
    for (std::size_t k = 1; k < std::min(threads, lanes); ++k) try {
            helpers.emplace_back(take_lanes);
        } catch (const std::system_error&) {
            break;  // no more threads to be had: the ones started take every lane
        }
    take_lanes();
    for (std::thread& h : helpers) h.join();
    if (failure) std::rethrow_exception(failure);
}

void for_each_independent(std::size_t n, const std::function<void(std::size_t)>& work) {
    run_lanes(n, default_threads(), nn::Arithmetic::portable, work);
}

void for_each_piece(const std::vector<nn::Block>& blocks, std::size_t threads,
                    const std::function<void(std::size_t, std::size_t, std::size_t)>& work) {
    std::size_t total = 0;
    for (const nn::Block& b : blocks) total += b.size;
    constexpr std::size_t range = 1 << 14;
    const std::size_t ranges = (total + range - 1) / range;
    run_lanes(ranges, threads, nn::Arithmetic::portable, [&](std::size_t r) {
        const std::size_t begin = r * range, end = std::min(total, begin + range);
        std::size_t offset = 0;  // of block b's first entry in the flat order
        for (std::size_t b = 0; b < blocks.size() && offset < end; ++b) {
            const std::size_t from = std::max(begin, offset), to = std::min(end, offset + blocks[b].size);
            if (from < to) work(b, from - offset, to - offset);
            offset += blocks[b].size;
        }
    });
}

void add_lanes(const std::vector<std::vector<nn::Block>>& lanes, std::size_t threads) {
    if (lanes.empty()) return;
    // every entry's sum is its own: pieces of entries can go to any thread
    for_each_piece(lanes[0], threads, [&](std::size_t b, std::size_t from, std::size_t to) {
        for (std::size_t step = 1; step < lanes.size(); step *= 2)
            for (std::size_t j = 0; j + step < lanes.size(); j += 2 * step) {
                double* into = lanes[j][b].data;
                const double* added = lanes[j + step][b].data;
                for (std::size_t e = from; e < to; ++e) into[e] += added[e];
            }
    });
}

const std::vector<Entry> nouns = {{"lights", "lait"},  {"door", "darvaza"}, {"box", "dibba"},  {"table", "mez"},
                                  {"window", "khidki"}, {"car", "gaadi"},    {"cup", "pyala"},  {"chair", "kursi"},
                                  {"book", "kitab"},    {"lamp", "batti"},   {"floor", "farsh"}, {"bag", "thaila"}};
const std::vector<Entry> adjectives = {{"red", "lal"},   {"big", "bada"},   {"small", "chota"}, {"old", "purana"},
                                       {"new", "naya"},  {"green", "hara"}, {"blue", "neela"},  {"heavy", "bhari"}};
// Prepositions come before their noun phrase; their translations, postpositions, after it.
const std::vector<Entry> prepositions = {
    {"near", "paas"}, {"under", "neeche"}, {"behind", "peeche"}, {"beside", "bagal"}, {"in", "andar"}};
const std::vector<Entry> adverbs = {
    {"now", "abhi"}, {"slowly", "dheere"}, {"quickly", "jaldi"}, {"again", "phir"}};
const std::vector<VerbPhrase> verbs = {
    // "turn" and "switch" end in different verbs after the same particle: the last word of "turn off"
    // cannot be guessed from the word before it, only read from the source
    {{"turn", "off"}, {"band", "karo"}}, {{"turn", "on"}, {"chalu", "karo"}},
    {{"switch", "off"}, {"band", "dabao"}}, {{"switch", "on"}, {"chalu", "dabao"}}, {{"open"}, {"kholo"}},
    {{"clean"}, {"pocho"}},              {{"move"}, {"hatao"}},               {{"paint"}, {"rango"}},
    {{"find"}, {"dhundo"}},              {{"wash"}, {"dhoo"}},
    {{"pick", "up"}, {"uthao"}},  // two source words become one target word
};


std::size_t Vocabulary::id(const std::string& w) {
    const auto found = ids.find(w);
    if (found != ids.end()) return found->second;
    ids[w] = words.size();
    words.push_back(w);
    return words.size() - 1;
}

// One sentence: [please] verb NP (preposition NP)* [adverb], NP = the adjective* noun. The
// translation: [kripya] [adverb'] (NP' postposition)* in reverse order, NP' (the object), verb':
// the verb last, each postposition after its noun, "the" dropped. Every target word remembers the
// source positions it translates: a two-word verb crosses ("turn off" -> "band karo": band <- off,
// karo <- turn) unless it becomes one word ("pick up" -> "uthao": both).
Sentence sentence(Rng& rng, std::size_t fewest, std::size_t most) {
    Sentence out;
    std::vector<std::string>& src = out.src;
    using Words = std::vector<std::pair<std::string, std::vector<std::size_t>>>;  // a target word, its partners
    const auto noun_phrase = [&](Words& t) {
        src.push_back("the");
        const std::size_t count = rng.below(3);
        for (std::size_t k = 0; k < count; ++k) {
            const Entry& a = adjectives[rng.below(adjectives.size())];
            t.push_back({a.target, {src.size()}});
            src.push_back(a.source);
        }
        const Entry& n = nouns[rng.below(nouns.size())];
        t.push_back({n.target, {src.size()}});
        src.push_back(n.source);
    };
    const bool please = rng.below(4) == 0;
    const VerbPhrase& verb = verbs[rng.below(verbs.size())];
    Words object, verb_words, front;
    std::vector<Words> phrases;  // the target of each prepositional phrase
    if (please) {
        front.push_back({"kripya", {0}});
        src.push_back("please");
    }
    const std::size_t v = src.size();
    src.insert(src.end(), verb.source.begin(), verb.source.end());
    if (verb.source.size() == verb.target.size())
        for (std::size_t k = 0; k < verb.target.size(); ++k)
            verb_words.push_back({verb.target[k], {v + verb.source.size() - 1 - k}});
    else
        verb_words.push_back({verb.target[0], {v, v + 1}});
    noun_phrase(object);
    const std::size_t pps = fewest + rng.below(most - fewest + 1);
    for (std::size_t k = 0; k < pps; ++k) {
        const Entry& p = prepositions[rng.below(prepositions.size())];
        const std::size_t at = src.size();
        src.push_back(p.source);
        phrases.emplace_back();
        noun_phrase(phrases.back());
        phrases.back().push_back({p.target, {at}});
    }
    const bool adverb = rng.below(2) == 0;
    const Entry& a = adverbs[rng.below(adverbs.size())];
    if (adverb) {
        front.push_back({a.target, {src.size()}});
        src.push_back(a.source);
    }
    const auto append = [&](const Words& words) {
        for (const auto& [word, partners] : words) {
            out.tgt.push_back(word);
            out.partners.push_back(partners);
        }
    };
    append(front);
    for (std::size_t k = phrases.size(); k-- > 0;) append(phrases[k]);
    append(object);
    append(verb_words);
    return out;
}

const std::vector<std::string> lights_src = {"turn", "off", "the", "lights"};
const std::vector<std::string> lights_tgt = {"lait", "band", "karo"};
const std::vector<std::size_t> lights_partner = {3, 1, 0};  // lait <- lights, band <- off, karo <- turn
const std::vector<std::string> pickup_src = {"pick", "up", "the", "red", "box"};
const std::vector<std::string> pickup_tgt = {"lal", "dibba", "uthao"};

std::vector<std::size_t> ids_of(Vocabulary& v, const std::vector<std::string>& words) {
    std::vector<std::size_t> ids;
    for (const auto& w : words) ids.push_back(v.id(w));
    return ids;
}

std::string joined(const Vocabulary& v, const std::vector<std::size_t>& ids) {
    std::vector<std::string> words;
    for (std::size_t id : ids) words.push_back(v.words[id]);
    return fmt::format("{}", fmt::join(words, " "));
}

// Every word of the lexicon gets its id first, in lexicon order, so that the vocabularies do not
// depend on which sentences the seed draws.
Corpus generate_corpus(Rng& rng, std::size_t train, std::size_t test, std::size_t min_len, std::size_t max_len) {
    Corpus c;
    c.target.id("<sos>");
    c.target.id("<eos>");
    c.source.id("please");
    c.target.id("kripya");
    c.source.id("the");
    for (const auto* list : {&nouns, &adjectives, &prepositions, &adverbs})
        for (const Entry& e : *list) {
            c.source.id(e.source);
            c.target.id(e.target);
        }
    for (const VerbPhrase& v : verbs) {
        ids_of(c.source, v.source);
        ids_of(c.target, v.target);
    }
    // the test set first; the training set never repeats a test sentence, nor the two shown ones
    std::set<std::vector<std::string>> held_out = {lights_src, pickup_src};
    while (c.test.size() < test || c.train.size() < train) {
        const Sentence s = sentence(rng);
        if (s.src.size() < min_len || s.src.size() > max_len) continue;
        const bool for_test = c.test.size() < test;
        if (!for_test && held_out.count(s.src)) continue;
        if (for_test) held_out.insert(s.src);
        (for_test ? c.test : c.train).push_back({ids_of(c.source, s.src), ids_of(c.target, s.tgt), s.partners});
    }
    return c;
}

// The lengths taken in turn, min_len, min_len + 1, .., max_len, min_len, ..: every length as often.
// A sentence with p phrases has 3 + 3p to 8 + 5p source words, so a length of T is drawn with
// ceil((T - 8) / 5) to min(7, (T - 3) / 3) phrases (40 words: about a thousand draws).
std::vector<Pair> long_pairs(Rng& rng, Corpus& c, std::size_t count, std::size_t min_len, std::size_t max_len) {
    std::vector<Pair> out;
    while (out.size() < count) {
        const std::size_t length = min_len + out.size() % (max_len - min_len + 1);
        const std::size_t most = std::min<std::size_t>(7, (length - 3) / 3);
        const std::size_t fewest = std::min(most, length > 8 ? (length - 8 + 4) / 5 : 0);
        const Sentence s = sentence(rng, fewest, most);
        if (s.src.size() == length) out.push_back({ids_of(c.source, s.src), ids_of(c.target, s.tgt), s.partners});
    }
    return out;
}

std::size_t wrong_partners(const Corpus& c, const std::vector<Pair>& pairs) {
    // what each source word may become: its lexicon entry; a verb's words crossed word for word
    // (off -> band, turn -> karo), or both to the one word ("pick", "up" -> uthao)
    std::map<std::string, std::set<std::string>> becomes = {{"please", {"kripya"}}};
    for (const auto* list : {&nouns, &adjectives, &prepositions, &adverbs})
        for (const Entry& e : *list) becomes[e.source].insert(e.target);
    for (const VerbPhrase& v : verbs)
        for (std::size_t k = 0; k < v.source.size(); ++k)
            becomes[v.source[k]].insert(v.source.size() == v.target.size() ? v.target[v.source.size() - 1 - k]
                                                                            : v.target[0]);
    std::size_t wrong = 0;
    for (const Pair& p : pairs) {
        if (p.partners.size() != p.tgt.size()) {
            wrong += p.tgt.size();
            continue;
        }
        for (std::size_t i = 0; i < p.tgt.size(); ++i) {
            bool right = !p.partners[i].empty();
            for (std::size_t j : p.partners[i])
                right = right && j < p.src.size() && becomes[c.source.words[p.src[j]]].count(c.target.words[p.tgt[i]]) > 0;
            if (!right) ++wrong;
        }
    }
    return wrong;
}

std::vector<std::size_t> decoder_inputs(const Pair& p) {
    std::vector<std::size_t> in = {sos};
    in.insert(in.end(), p.tgt.begin(), p.tgt.end());
    return in;
}

std::vector<std::size_t> decoder_outputs(const Pair& p) {
    std::vector<std::size_t> out = p.tgt;
    out.push_back(eos);
    return out;
}

// Lesson 9's models draw from one generator: weights N(0, 1/fan_in), so that every pre-activation starts
// near unit scale, biases 0; the embeddings N(0, 1).
nn::GruParams drawn_gru(Rng& rng, std::size_t d_in, std::size_t u) {
    const double w = 1.0 / std::sqrt(as_double(d_in)), s = 1.0 / std::sqrt(as_double(u));
    nn::GruParams p;
    p.W_z = rng.normal_mat(u, d_in, w);
    p.U_z = rng.normal_mat(u, u, s);
    p.b_z = nn::zeros(u);
    p.W_r = rng.normal_mat(u, d_in, w);
    p.U_r = rng.normal_mat(u, u, s);
    p.b_r = nn::zeros(u);
    p.W_h = rng.normal_mat(u, d_in, w);
    p.U_h = rng.normal_mat(u, u, s);
    p.b_h = nn::zeros(u);
    return p;
}

nn::Seq2Seq drawn_model(Rng& rng, bool attention, std::size_t V_src, std::size_t V_tgt, std::size_t u) {
    nn::Seq2Seq m;
    m.attention = attention;
    const std::size_t context = attention ? 2 * u : u;
    m.E_src = rng.normal_mat(V_src, u);
    m.E_tgt = rng.normal_mat(V_tgt, u);
    m.enc_fwd = drawn_gru(rng, u, u);
    if (attention) m.enc_bwd = drawn_gru(rng, u, u);
    m.dec = drawn_gru(rng, u + context, u);
    if (attention) {
        m.W_a = rng.normal_mat(u, u, 1.0 / std::sqrt(as_double(u)));
        m.U_a = rng.normal_mat(u, context, 1.0 / std::sqrt(as_double(context)));
        m.v_a = rng.normal_vec(u, 1.0 / std::sqrt(as_double(u)));
    }
    m.W_o = rng.normal_mat(V_tgt, u, 1.0 / std::sqrt(as_double(u)));
    m.b_o = nn::zeros(V_tgt);
    return m;
}

// ---------------------------------------------------------------- lesson 12's Transformer

// Weights N(0, 1/fan_in), norms' gains 1 and biases 0, embeddings N(0, 1/d_model) (so that
// E sqrt(d_model) has unit entries, the scale of the positions), biases 0.
namespace {

nn::MultiHeadParams drawn_attention(Rng& rng, std::size_t d) {
    const double s = 1.0 / std::sqrt(as_double(d));
    return {rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s), rng.normal_mat(d, d, s)};
}

nn::FeedForward drawn_network(Rng& rng, std::size_t d, std::size_t d_ff) {
    return {rng.normal_mat(d_ff, d, 1.0 / std::sqrt(as_double(d))), nn::zeros(d_ff),
            rng.normal_mat(d, d_ff, 1.0 / std::sqrt(as_double(d_ff))), nn::zeros(d)};
}

nn::LayerNormParams fresh_norm(std::size_t d) { return {nn::ones(d), nn::zeros(d), 1e-5}; }

}  // namespace

nn::EncoderDecoder drawn_transformer(Rng& rng, const TransformerSizes& s, std::size_t V_src, std::size_t V_tgt) {
    const std::size_t d = s.d_model, d_ff = s.d_ff, L = s.layers;
    nn::EncoderDecoder m;
    m.heads = s.heads;
    m.E_src = rng.normal_mat(V_src, d, 1.0 / std::sqrt(as_double(d)));
    m.E_tgt = rng.normal_mat(V_tgt, d, 1.0 / std::sqrt(as_double(d)));
    for (std::size_t l = 0; l < L; ++l)
        m.encoder.push_back({fresh_norm(d), drawn_attention(rng, d), fresh_norm(d), drawn_network(rng, d, d_ff)});
    m.encoder_norm = fresh_norm(d);
    for (std::size_t l = 0; l < L; ++l) {
        nn::DecoderBlockParams b{fresh_norm(d), drawn_attention(rng, d), fresh_norm(d), {}, fresh_norm(d), {}};
        b.cross_attention = drawn_attention(rng, d);
        b.feed_forward = drawn_network(rng, d, d_ff);
        m.decoder.push_back(std::move(b));
    }
    m.decoder_norm = fresh_norm(d);
    m.W_o = rng.normal_mat(V_tgt, d, 1.0 / std::sqrt(as_double(d)));
    m.b_o = nn::zeros(V_tgt);
    return m;
}

// Sequential steps and multiply-adds of one teacher-forced forward pass at T_x source and T_y
// target positions (<eos> included), counted from the equations: a GRU step of input width n and
// state width u is 3u(n + u); an attention of T_q queries over T_k keys of width d is 2 T_q T_k d;
// a d x d projection of T rows T d^2.
Mat pass_costs(std::size_t width, const TransformerSizes& s, const std::array<std::size_t, 3>& weights, double T_x,
               double T_y, double V) {
    const double u = as_double(width), d = as_double(s.d_model);
    const double L = as_double(s.layers), ff = as_double(s.d_ff);
    const auto gru = [](double n, double w) { return 3.0 * w * (n + w); };
    // without: one encoder GRU over T_x, then T_y decoder steps reading [y; c] (2u), the output layer
    const double without = T_x * gru(u, u) + T_y * (gru(2.0 * u, u) + V * u);
    // with: two encoder GRUs (side by side in time), keys U_a h_j once, per step W_a s, the tanh
    // layer's v_a over T_x keys, the context over 2u, the decoder GRU reading [y; c] (3u), the output
    const double with = 2.0 * T_x * gru(u, u) + T_x * u * 2.0 * u +
                        T_y * (u * u + T_x * u + T_x * 2.0 * u + gru(3.0 * u, u) + V * u);
    // Transformer: encoder blocks (4 projections, scores and weighted sums, the network), decoder
    // blocks (the same, plus cross-attention: Q and O on T_y rows, K and V on T_x rows), the output
    const double encoder = L * (4.0 * T_x * d * d + 2.0 * T_x * T_x * d + 2.0 * T_x * d * ff);
    const double decoder = L * (4.0 * T_y * d * d + 2.0 * T_y * T_y * d + 2.0 * (T_y + T_x) * d * d +
                                2.0 * T_y * T_x * d + 2.0 * T_y * d * ff);
    return {{T_x + T_y, without, as_double(weights[0])},
            {T_x + T_y, with, as_double(weights[1])},
            {2.0 * L, encoder + decoder + T_y * V * d, as_double(weights[2])}};
}

Pair pair_of(Corpus& c, const std::vector<std::string>& src, const std::vector<std::string>& tgt) {
    return {ids_of(c.source, src), ids_of(c.target, tgt)};
}

// Every weight of m named after its field of nn::Seq2Seq ("enc_fwd.W_z"), in the order of nn::blocks(m).
std::vector<std::pair<std::string, Array>> named_weights(const nn::Seq2Seq& m) {
    std::vector<std::pair<std::string, Array>> out = {{"E_src", m.E_src}, {"E_tgt", m.E_tgt}};
    const auto gru = [&](const std::string& which, const nn::GruParams& p) {
        for (const auto& [name, w] : {std::pair<const char*, const Mat*>{"W_z", &p.W_z}, {"U_z", &p.U_z},
                                      {"W_r", &p.W_r}, {"U_r", &p.U_r}, {"W_h", &p.W_h}, {"U_h", &p.U_h}})
            out.emplace_back(which + "." + name, *w);
        for (const auto& [name, b] : {std::pair<const char*, const Vec*>{"b_z", &p.b_z}, {"b_r", &p.b_r},
                                      {"b_h", &p.b_h}})
            out.emplace_back(which + "." + name, *b);
    };
    gru("enc_fwd", m.enc_fwd);
    if (m.attention) gru("enc_bwd", m.enc_bwd);
    gru("dec", m.dec);
    if (m.attention) out.insert(out.end(), {{"W_a", m.W_a}, {"U_a", m.U_a}, {"v_a", m.v_a}});
    out.insert(out.end(), {{"W_o", m.W_o}, {"b_o", m.b_o}});
    return out;
}

Mat teacher_forced_weights(const nn::Seq2Seq& m, const Pair& p) {
    return nn::seq2seq_forward(m, p.src, decoder_inputs(p), decoder_outputs(p)).weights;
}

std::vector<std::string> with_eos(std::vector<std::string> words) {
    words.push_back("<eos>");
    return words;
}

std::string pair_text(const Corpus& c, const Pair& p) {
    return fmt::format("\"{}\" -> \"{}\"", joined(c.source, p.src), joined(c.target, p.tgt));
}

double right_positions(const std::vector<std::size_t>& out, const std::vector<std::size_t>& ref) {
    double right = 0.0;
    for (std::size_t i = 0; i <= ref.size(); ++i) {
        const std::size_t r = i < ref.size() ? ref[i] : eos, o = i < out.size() ? out[i] : i == out.size() ? eos : sos;
        if (r == o) right += 1.0;
    }
    return right;
}

Forward teacher_forced(const nn::Seq2Seq& m, const Pair& p) {
    nn::Seq2SeqPass pass = nn::seq2seq_forward(m, p.src, decoder_inputs(p), decoder_outputs(p));
    return {pass.loss, std::move(pass.predicted)};
}

Forward teacher_forced(const nn::EncoderDecoder& m, const Pair& p) {
    nn::EncoderDecoderPass pass = nn::encoder_decoder_forward(m, p.src, decoder_inputs(p), decoder_outputs(p));
    return {pass.loss, std::move(pass.predicted)};
}

double backward_into(const nn::Seq2Seq& m, const Pair& p, nn::Seq2Seq& grads) {
    return nn::seq2seq_backward(m, p.src, decoder_inputs(p), decoder_outputs(p), grads).loss;
}

double backward_into(const nn::EncoderDecoder& m, const Pair& p, nn::EncoderDecoder& grads) {
    return nn::encoder_decoder_backward(m, p.src, decoder_inputs(p), decoder_outputs(p), grads).loss;
}

Forward teacher_forced(const nn::LanguageModel& m, const Pair& p) {
    const nn::LanguageModelPass pass = nn::language_model_forward(m, decoder_inputs(p), decoder_outputs(p));
    Forward f{pass.loss, {}};
    for (std::size_t t = 0; t < pass.P.shape(0); ++t) f.predicted.push_back(nn::most_likely(nn::row_of(pass.P, t)));
    return f;
}

double backward_into(const nn::LanguageModel& m, const Pair& p, nn::LanguageModel& grads) {
    return nn::language_model_backward(m, decoder_inputs(p), decoder_outputs(p), grads);
}

std::vector<std::size_t> greedy(const nn::Seq2Seq& m, const Pair& p, std::size_t max_words) {
    return nn::greedy_decode(m, p.src, sos, eos, max_words);
}

std::vector<std::size_t> greedy(const nn::EncoderDecoder& m, const Pair& p, std::size_t max_words) {
    return nn::encoder_decoder_greedy(m, p.src, sos, eos, max_words);
}

// ---------------------------------------------------------------- export-only data

void export_corpus(Trace& trace, const Corpus& c) {
    const auto vocabulary = [&](const char* name, const Vocabulary& v) {
        Vec ids = xt::empty<double>({v.words.size()});
        for (std::size_t k = 0; k < ids.size(); ++k) ids(k) = as_double(k);
        trace.export_only(name, "word id of each word (the row labels); target: <sos> = 0, <eos> = 1", ids, v.words);
    };
    vocabulary("source_words", c.source);
    vocabulary("target_words", c.target);
    const auto pairs = [&](const std::string& set, const std::vector<Pair>& ps) {
        std::size_t longest_src = 0, longest_tgt = 0;
        for (const Pair& p : ps) {
            longest_src = std::max(longest_src, p.src.size());
            longest_tgt = std::max(longest_tgt, p.tgt.size());
        }
        Mat src = nn::zeros(ps.size(), longest_src) - 1.0, tgt = nn::zeros(ps.size(), longest_tgt) - 1.0;
        Mat lengths = xt::empty<double>({ps.size(), std::size_t{2}});
        for (std::size_t k = 0; k < ps.size(); ++k) {
            for (std::size_t j = 0; j < ps[k].src.size(); ++j) src(k, j) = as_double(ps[k].src[j]);
            for (std::size_t j = 0; j < ps[k].tgt.size(); ++j) tgt(k, j) = as_double(ps[k].tgt[j]);
            lengths(k, 0) = as_double(ps[k].src.size());
            lengths(k, 1) = as_double(ps[k].tgt.size());
        }
        trace.export_only(set + "_src", "source word ids of each " + set + " pair, -1 after its end", src);
        trace.export_only(set + "_tgt",
                          "target word ids of each " + set + " pair, without <sos> and <eos>, -1 after its end", tgt);
        trace.export_only(set + "_lengths", "source and target words of each " + set + " pair", lengths, {},
                          {"source", "target"});
    };
    pairs("train", c.train);
    pairs("test", c.test);
}

void export_orders(Trace& trace, const Mat& orders) {
    trace.export_only("order",
                      fmt::format("row e: the training pairs (rows of corpus.train_*) in epoch e's order, {} a batch",
                                  batch),
                      orders, numbered("epoch ", 1, orders.shape(0)));
}

void export_weights(Trace& trace, const std::string& model, const nn::Seq2Seq& m, const std::string& what) {
    for (const auto& [name, weight] : named_weights(m))
        trace.export_only(model + "." + name, what + ", nn::Seq2Seq::" + name, weight);
}

void export_weights(Trace& trace, const std::string& model, nn::EncoderDecoder m, const std::string& what) {
    for (const nn::NamedEntries& e : nn::named_tensors(m)) {
        Array weight = xt::empty<double>(e.shape);
        std::copy(e.data, e.data + e.size, weight.data());
        trace.export_only(model + "." + e.name, what + ", " + e.name + " of nn::named_tensors", weight);
    }
}

void shuffle_epoch(Rng& rng, std::vector<std::size_t>& order) {
    for (std::size_t k = order.size(); k-- > 1;) std::swap(order[k], order[rng.below(k + 1)]);
}

Mat epoch_orders(Rng rng, std::size_t pairs, std::size_t epochs) {
    std::vector<std::size_t> order(pairs);
    for (std::size_t k = 0; k < pairs; ++k) order[k] = k;
    Mat out = xt::empty<double>({epochs, pairs});
    for (std::size_t e = 0; e < epochs; ++e) {
        shuffle_epoch(rng, order);
        for (std::size_t k = 0; k < pairs; ++k) out(e, k) = as_double(order[k]);
    }
    return out;
}

}  // namespace attn::translation
