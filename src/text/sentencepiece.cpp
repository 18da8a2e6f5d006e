#include "text/sentencepiece.hpp"

#include "text/bpe.hpp"
#include "text/utf8.hpp"

#include <fmt/format.h>

#include <climits>
#include <set>
#include <unordered_map>

#if ATTN_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#endif

namespace attn::text {

namespace {

// The message of every function of the header in a build without the library.
[[maybe_unused]] std::string missing_library() {
    return "attn was built without SentencePiece, which lessons 14 and 15 train their vocabulary with: install the "
           "Debian package libsentencepiece-dev (bash .ci/install-deps), then meson setup --reconfigure build, and "
           "build again";
}

// Checks `text` as the tokenizer takes it; errors begin with `where` ("sentences[3]: " or "").
//   invalid UTF-8     SentencePiece would read each bad byte as U+FFFD, a character the text lacks
//   ASCII controls    SentencePiece's trainer leaves NUL, tab, line feed and the others out of its
//                     alphabet, so that encode turns them into <unk> (or, a NUL, ends the text) and
//                     decode cannot give them back; lesson 14's cleaned verses have none
//   "▁" (U+2581)      the meta symbol: decode would turn it into a space (bpe.hpp's split_words)
//   "▅" (U+2585)      the trainer's stand-in for a character left out: it skips every sentence holding
//                     one, saying so only in its log (trainer_interface.cc, LoadSentences)
//   <unk> <s> </s>    the special pieces' names: the trainer reads each as a space (tried on 0.1.97: a
//                     model trained on "ab<s>c" has no "<", "s" or ">", and gives back "ab ⁇ c")
[[maybe_unused]] void check_text(std::string_view text, std::string_view where) {
    for (const std::string_view special : {"<unk>", "<s>", "</s>"}) {
        const std::size_t at = text.find(special);
        if (at != std::string_view::npos)
            throw TokenizerError(fmt::format("{}the name of the special piece {} at byte {}: SentencePiece reads it "
                                             "as that piece (or, training, as a space), not as text",
                                             where, special, at));
    }
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t n = utf8_sequence_length(text, i);
        if (n == 0)
            throw TokenizerError(fmt::format("{}invalid UTF-8 at byte {} (0x{:02X})", where, i,
                                             static_cast<unsigned char>(text[i])));
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == 0)
            throw TokenizerError(fmt::format("{}a NUL byte (U+0000) at byte {}: SentencePiece would end the text "
                                             "there",
                                             where, i));
        if (c < 0x20 || c == 0x7F)
            throw TokenizerError(fmt::format("{}the control character U+{:04X} at byte {}: SentencePiece leaves it "
                                             "out of its alphabet, so decoding could not give it back (clean the "
                                             "text: a space for a tab or a line break)",
                                             where, c, i));
        if (text.compare(i, n, word_start) == 0)
            throw TokenizerError(fmt::format("{}the meta symbol \u2581 (U+2581) at byte {}: it stands for a space, "
                                             "and decoding would turn it into one",
                                             where, i));
        if (text.compare(i, n, "\u2585") == 0)
            throw TokenizerError(fmt::format("{}the character \u2585 (U+2585) at byte {}: SentencePiece's trainer "
                                             "uses it for characters it leaves out, and skips every sentence that "
                                             "holds it",
                                             where, i));
        i += n;
    }
}

void check_options(const SentencePieceOptions& options) {
    // SentencePiece's own bounds (trainer_interface.cc), checked here to name the option as attn spells it
    if (options.max_sentence_bytes < 10 || options.max_sentence_bytes > (std::size_t{1} << 30))
        throw TokenizerError(fmt::format("train_sentencepiece: max_sentence_bytes {} is out of range (10 to {})",
                                         options.max_sentence_bytes, std::size_t{1} << 30));
    if (options.vocab_size > static_cast<std::size_t>(INT_MAX))
        throw TokenizerError(fmt::format("train_sentencepiece: vocab_size {} is too large (at most {})",
                                         options.vocab_size, INT_MAX));
    if (options.max_piece_length == 0 || options.max_piece_length > 512)
        throw TokenizerError(fmt::format("train_sentencepiece: max_piece_length {} is out of range (1 to 512)",
                                         options.max_piece_length));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> sentencepiece_trainer_flags(const SentencePieceOptions& options) {
    check_options(options);
    const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
    return {
        {"model_type", "bpe"},  // Sennrich et al.'s algorithm, as bpe.hpp derives it
        {"vocab_size", std::to_string(options.vocab_size)},
        {"character_coverage", "1.0"},  // every character of the text is a piece: none becomes <unk>
        {"normalization_rule_name", "identity"},  // the header: cleaned text, and bpe.hpp's vocabulary
        {"max_sentence_length", std::to_string(options.max_sentence_bytes)},
        {"split_by_unicode_script", flag(options.split_by_unicode_script)},
        {"split_by_number", flag(options.split_by_number)},
        {"max_sentencepiece_length", std::to_string(options.max_piece_length)},
        {"hard_vocab_limit", flag(options.hard_vocab_limit)},
        // determinism: every sentence, in the order given, so nothing is sampled (the only randomness of
        // SentencePiece's BPE trainer), and one thread
        {"input_sentence_size", "0"},
        {"shuffle_input_sentence", "false"},
        {"num_threads", "1"},
        // SentencePiece's defaults, written out so that a later default cannot change the model: words cut
        // at spaces, each with "▁" in front, runs of spaces made one; no digit split one by one; no bytes
        // for unknown characters (they are <unk>: Tokenizer); <unk> <s> </s> are ids 0, 1, 2
        {"split_by_whitespace", "true"},
        {"add_dummy_prefix", "true"},
        {"remove_extra_whitespaces", "true"},
        {"split_digits", "false"},
        {"byte_fallback", "false"},
        {"unk_id", "0"},
        {"bos_id", "1"},
        {"eos_id", "2"},
        {"pad_id", "-1"},
        // warnings and errors only (a process-wide setting of the library; not part of the model): its
        // errors come back to us as a status, turned into TokenizerError
        {"minloglevel", "2"},
    };
}

#if ATTN_HAVE_SENTENCEPIECE

bool have_sentencepiece() { return true; }

namespace {

// The sentences, one by one, to SentencePiece's trainer (no file between).
class Sentences final : public sentencepiece::SentenceIterator {
public:
    explicit Sentences(const std::vector<std::string>& sentences) : sentences_(sentences) {}
    bool done() const override { return next_ >= sentences_.size(); }
    void Next() override { ++next_; }
    const std::string& value() const override { return sentences_[next_]; }
    sentencepiece::util::Status status() const override { return {}; }  // OK: nothing to read fails

private:
    const std::vector<std::string>& sentences_;
    std::size_t next_ = 0;
};

}  // namespace

std::string train_sentencepiece(const std::vector<std::string>& sentences, const SentencePieceOptions& options) {
    const auto flags = sentencepiece_trainer_flags(options);  // checks the options
    if (sentences.empty()) throw TokenizerError("train_sentencepiece: no sentences to train on");
    for (std::size_t s = 0; s < sentences.size(); ++s) {
        const std::string where = fmt::format("train_sentencepiece: sentences[{}]: ", s);
        // SentencePiece would leave it out of training, saying so only in its log
        if (sentences[s].size() > options.max_sentence_bytes)
            throw TokenizerError(fmt::format("{}{} bytes long, above max_sentence_bytes ({}): SentencePiece would "
                                             "leave it out of training; raise max_sentence_bytes",
                                             where, sentences[s].size(), options.max_sentence_bytes));
        check_text(sentences[s], where);
    }
    // The alphabet SentencePiece must hold with character_coverage=1.0: every character of the words,
    // "▁" included (bpe.hpp counts it the same way), and the three special pieces beside it. Its own
    // message for a vocabulary too small names neither.
    const std::vector<WordCount> words = count_words(sentences);
    if (words.empty())
        throw TokenizerError(fmt::format("train_sentencepiece: no word in the {} sentences", sentences.size()));
    const std::size_t characters = count_characters(words).size();
    if (options.vocab_size < characters + 3)
        throw TokenizerError(fmt::format("train_sentencepiece: vocab_size {} is too small: the sentences have {} "
                                         "characters (\u2581 included), each a piece of its own, and <unk> <s> </s> "
                                         "make {}",
                                         options.vocab_size, characters, characters + 3));

    // Train(kwargs) rather than Train("--flag=value ..."): the latter logs the command line before it
    // reads minloglevel from it, and cuts it at every space.
    std::unordered_map<std::string, std::string> kwargs(flags.begin(), flags.end());
    Sentences iterator(sentences);
    std::string model;
    const sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(kwargs, &iterator, &model);
    if (!status.ok())
        throw TokenizerError(fmt::format("train_sentencepiece: SentencePiece could not learn {} pieces from the {} "
                                         "sentences: {}",
                                         options.vocab_size, sentences.size(), status.ToString()));
    return model;
}

struct Tokenizer::Model {
    sentencepiece::SentencePieceProcessor processor;
};

Tokenizer::Tokenizer(std::string_view serialized_model) : model_(std::make_unique<Model>()) {
    const sentencepiece::util::Status status = model_->processor.LoadFromSerializedProto(serialized_model);
    if (!status.ok())
        throw TokenizerError(fmt::format("Tokenizer: the {} bytes given are not a SentencePiece model: {}",
                                         serialized_model.size(), status.ToString()));
    // a ModelProto parses from many byte strings (every field is optional); one without pieces or without
    // its <unk> loads, yet cannot encode
    const int size = model_->processor.GetPieceSize();
    const int unk = model_->processor.unk_id();
    if (size <= 0 || unk < 0 || unk >= size || !model_->processor.IsUnknown(unk))
        throw TokenizerError(fmt::format("Tokenizer: the {} bytes given are not a SentencePiece model "
                                         "({} pieces, no <unk>)",
                                         serialized_model.size(), size));
}

std::vector<int> Tokenizer::encode(std::string_view text) const {
    check_text(text, "Tokenizer::encode: ");
    std::vector<int> ids;
    const sentencepiece::util::Status status = model_->processor.Encode(text, &ids);
    if (!status.ok()) throw TokenizerError("Tokenizer::encode: " + status.ToString());
    return ids;
}

std::vector<std::string> Tokenizer::pieces(std::string_view text) const {
    check_text(text, "Tokenizer::pieces: ");
    std::vector<std::string> pieces;
    const sentencepiece::util::Status status = model_->processor.Encode(text, &pieces);
    if (!status.ok()) throw TokenizerError("Tokenizer::pieces: " + status.ToString());
    return pieces;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
    const int size = model_->processor.GetPieceSize();
    for (std::size_t k = 0; k < ids.size(); ++k)
        if (ids[k] < 0 || ids[k] >= size)
            throw TokenizerError(fmt::format("Tokenizer::decode: ids[{}] = {} is out of range: the vocabulary has "
                                             "ids 0 to {}",
                                             k, ids[k], size - 1));
    std::string text;
    const sentencepiece::util::Status status = model_->processor.Decode(ids, &text);
    if (!status.ok()) throw TokenizerError("Tokenizer::decode: " + status.ToString());
    return text;
}

int Tokenizer::size() const { return model_->processor.GetPieceSize(); }

std::string Tokenizer::piece(int id) const {
    if (id < 0 || id >= size())
        throw TokenizerError(
            fmt::format("Tokenizer::piece: id {} is out of range: the vocabulary has ids 0 to {}", id, size() - 1));
    return model_->processor.IdToPiece(id);
}

float Tokenizer::score(int id) const {
    if (id < 0 || id >= size())
        throw TokenizerError(
            fmt::format("Tokenizer::score: id {} is out of range: the vocabulary has ids 0 to {}", id, size() - 1));
    return model_->processor.GetScore(id);
}

int Tokenizer::unknown_id() const { return model_->processor.unk_id(); }
int Tokenizer::begin_id() const { return model_->processor.bos_id(); }
int Tokenizer::end_id() const { return model_->processor.eos_id(); }

std::vector<std::string> Tokenizer::unknown_characters(std::string_view text) const {
    check_text(text, "Tokenizer::unknown_characters: ");
    // The pieces with where each came from in the text (its surface): a piece that is <unk> covers one
    // unknown character or a run of them. (mutable_proto is how SentencePiece's header says to fill one.)
    sentencepiece::ImmutableSentencePieceText encoded;
    const sentencepiece::util::Status status = model_->processor.Encode(text, encoded.mutable_proto());
    if (!status.ok()) throw TokenizerError("Tokenizer::unknown_characters: " + status.ToString());
    std::vector<std::string> unknown;
    std::set<std::string> seen;
    for (const auto& p : encoded.pieces()) {
        if (!model_->processor.IsUnknown(static_cast<int>(p.id()))) continue;
        for (std::string& c : utf8_characters(p.surface()))
            if (c != " " && seen.insert(c).second) unknown.push_back(std::move(c));
    }
    return unknown;
}

#else  // built without SentencePiece: every function says how to add it

bool have_sentencepiece() { return false; }

std::string train_sentencepiece(const std::vector<std::string>&, const SentencePieceOptions&) {
    throw TokenizerError(missing_library());
}

struct Tokenizer::Model {};

Tokenizer::Tokenizer(std::string_view) { throw TokenizerError(missing_library()); }
std::vector<int> Tokenizer::encode(std::string_view) const { throw TokenizerError(missing_library()); }
std::vector<std::string> Tokenizer::pieces(std::string_view) const { throw TokenizerError(missing_library()); }
std::string Tokenizer::decode(const std::vector<int>&) const { throw TokenizerError(missing_library()); }
int Tokenizer::size() const { throw TokenizerError(missing_library()); }
std::string Tokenizer::piece(int) const { throw TokenizerError(missing_library()); }
float Tokenizer::score(int) const { throw TokenizerError(missing_library()); }
int Tokenizer::unknown_id() const { throw TokenizerError(missing_library()); }
int Tokenizer::begin_id() const { throw TokenizerError(missing_library()); }
int Tokenizer::end_id() const { throw TokenizerError(missing_library()); }
std::vector<std::string> Tokenizer::unknown_characters(std::string_view) const {
    throw TokenizerError(missing_library());
}

#endif

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

}  // namespace attn::text
