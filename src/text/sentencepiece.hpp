// The subword vocabulary lesson 14 translates with, learned by SentencePiece itself (Kudo & Richardson
// 2018, "SentencePiece: A simple and language independent subword tokenizer and detokenizer for Neural
// Text Processing", EMNLP system demonstrations), the library Debian 12 ships as libsentencepiece-dev
// 0.1.97. text/bpe.hpp derives byte-pair encoding step by step and says where its rules and
// SentencePiece's agree; this header is the tool a model is trained with once the lesson has shown what
// it does: the same algorithm (--model_type=bpe), fast on all 31,000 verses, its model a string of bytes
// (SentencePiece's ModelProto, serialised) that a lesson can store and load again.
//
//   train_sentencepiece(verses, options)  ->  model bytes  ->  Tokenizer  ->  encode(verse): ids
//                                                                         ->  decode(ids): the verse
//
// Training runs in memory (the sentences go to SentencePiece through its SentenceIterator: no file is
// written or read) and is deterministic: the same sentences, in the same order, with the same options
// give the same bytes on every run and machine, with the same SentencePiece release (its BPE changed
// after 0.1.97: bpe.hpp, c). Nothing of it is random: SentencePiece samples and shuffles sentences only
// when asked for fewer than it has (input_sentence_size, here 0: all of them), and its BPE breaks every
// tie by the pieces' lengths and bytes (bpe.hpp, rules 1 to 3).
//
// The text is taken as it is (normalization_rule_name=identity): lesson 14's verses are already cleaned
// (text/bible.hpp), and SentencePiece's default rule, NFKC, would change characters before counting them
// (the ligature "ﬁ" into "fi", a no-break space into a space), so that its vocabulary would no longer be
// the one bpe.hpp derives from the same text. Runs of spaces still become one, and a word starts with "▁"
// (U+2581), as in bpe.hpp.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::text {

// Text the tokenizer cannot take, options out of range, bytes that are not a model, an id out of range,
// and every function of this header when attn was built without SentencePiece (the message names the
// package and the commands that add it).
struct TokenizerError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Whether this build of attn has SentencePiece (meson found libsentencepiece-dev). Without it every
// function below throws TokenizerError saying how to add it.
bool have_sentencepiece();

struct SentencePieceOptions {
    // Pieces in the vocabulary, the three special ones (<unk> <s> </s>) and every character of the
    // training text included: at least (characters, "▁" included) + 3. SentencePiece fails when no pair
    // is left to fill it with; its message (the largest size it can reach) is passed on.
    std::size_t vocab_size = 8000;
    // The longest sentence, in bytes, SentencePiece trains on (its max_sentence_length, 4192 by default;
    // 10 to 2^30). It leaves a longer sentence out of training with no more than a line of log;
    // train_sentencepiece throws instead, naming the sentence. The longest verse of the KJV and of the
    // Reina-Valera 1909, cleaned, is 601 bytes.
    std::size_t max_sentence_bytes = 4192;
    // SentencePiece's rules for the pieces it may make (bpe.hpp, d), at its defaults: a piece never mixes
    // Unicode scripts ("d," is Latin with Common) nor digits with other characters, and is at most 16
    // code points long. bpe.hpp's step-by-step BPE has none of these rules: set the first two false and
    // the length above the longest word for the vocabulary bpe.hpp derives (tests/test_sentencepiece.cpp).
    bool split_by_unicode_script = true;
    bool split_by_number = true;
    std::size_t max_piece_length = 16;
    // false: vocab_size is a most, not an exact count (SentencePiece's hard_vocab_limit=false): a text too
    // small to fill it gives the vocabulary it can (Tokenizer::size says how many), where true fails.
    bool hard_vocab_limit = true;
};

// What train_sentencepiece gives SentencePiece's trainer, as (flag, value): spm_train takes the same as
// --flag=value (minloglevel, not a field of the model, only quiets the library's log).
std::vector<std::pair<std::string, std::string>> sentencepiece_trainer_flags(const SentencePieceOptions& options);

// Trains a BPE vocabulary on `sentences`, in memory, and returns SentencePiece's model (its ModelProto,
// serialised), the same bytes for the same sentences and options. Every character of the sentences is
// in the vocabulary (character_coverage=1.0). Throws TokenizerError, naming what is wrong, for: no
// sentences, or none with a word; a sentence with invalid UTF-8, a NUL or another ASCII control
// character (a tab, a line feed: SentencePiece leaves them out of its alphabet, so that decoding would not
// give them back), the meta symbol "▁", "▅" (U+2585: SentencePiece skips a sentence holding it), the
// name of a special piece ("<s>": it reads it as a space), or more than max_sentence_bytes bytes
// ("sentences[3]: ..."); a vocab_size below the characters + 3; max_sentence_bytes out of range; an error
// of SentencePiece's (a vocab_size above what the text can fill: its message names the largest).
std::string train_sentencepiece(const std::vector<std::string>& sentences, const SentencePieceOptions& options);

// A trained model, loaded for encoding and decoding.
//
// A character the training text lacked becomes <unk> (id unknown_id()): SentencePiece's BPE starts from
// the characters of a word and knows no other (no byte fallback here), and a run of such characters is
// one <unk>. decode writes <unk> as " ⁇ " (U+2047, SentencePiece's choice), so that the text does not
// come back: unknown_characters names those characters, for an error message that can say which.
// Otherwise decode(encode(s)) is s with its runs of spaces made one and trimmed (normalize_spaces).
class Tokenizer {
public:
    // Throws TokenizerError for bytes that are not a SentencePiece model.
    explicit Tokenizer(std::string_view serialized_model);
    ~Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // The ids of the pieces of `text`. Throws TokenizerError for text train_sentencepiece would refuse
    // (invalid UTF-8, a control character, "▁", "▅", "<s>"), naming the byte.
    std::vector<int> encode(std::string_view text) const;
    // The same pieces as strings ("▁In", "▁the", "▁begin", "ning").
    std::vector<std::string> pieces(std::string_view text) const;
    // The text of `ids`; <s> and </s> give nothing, <unk> " ⁇ ". Throws TokenizerError naming an id
    // outside 0 to size() - 1.
    std::string decode(const std::vector<int>& ids) const;

    int size() const;                 // pieces in the vocabulary
    std::string piece(int id) const;  // throws TokenizerError for an id out of range
    float score(int id) const;        // as the .vocab file lists it: 0 for the special pieces, then -0, -1,
                                      // -2 ... down the list (the merges in the order learned, then the
                                      // characters); throws as piece does
    int unknown_id() const;           // <unk>: 0 as trained here
    int begin_id() const;             // <s>: 1
    int end_id() const;               // </s>: 2

    // The characters of `text` that encode turns into <unk>, each once, in the order they first occur.
    // Throws as encode does.
    std::vector<std::string> unknown_characters(std::string_view text) const;

private:
    struct Model;
    std::unique_ptr<Model> model_;
};

}  // namespace attn::text
