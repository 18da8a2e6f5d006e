// Byte-pair encoding for lesson 14, learned step by step: Sennrich, Haddow & Birch 2016, "Neural
// Machine Translation of Rare Words with Subword Units" (ACL), section 3.2 and its Algorithm 1.
// Start from the characters of every word; count the adjacent pairs of symbols over all words, each
// word weighted by how often it occurs; merge the most frequent pair everywhere into one new symbol;
// repeat. The merges, in the order learned, are the model: a new word is segmented by applying them
// in that order.
//
// Words are cut as SentencePiece (Kudo & Richardson 2018, "SentencePiece: A simple and language
// independent subword tokenizer and detokenizer for Neural Text Processing", EMNLP system
// demonstrations) cuts them by default: runs of whitespace
// separate words, and each word starts with the meta symbol "▁" (U+2581) where the paper ends each
// word with "</w>". Symbols are Unicode characters (code points), not bytes.
//
//   "And God said"  ->  ▁And ▁God ▁said  ->  ▁ A n d | ▁ G o d | ▁ s a i d  ->  merges ...
//
// Which pair wins, in this order (ranks_before):
//   1. the higher count;
//   2. then the shorter joined symbol, counted in code points;
//   3. then the smaller joined symbol, compared byte by byte (UTF-8 byte order is code point order);
//   4. then the shorter left symbol (two pairs can join to the same string: "ab"+"c", "a"+"bc").
// The rule does not depend on the order of the sentences or of any hash table. Rules 1 to 3 are
// SentencePiece's; the paper leaves ties open (its Algorithm 1 takes Python's max over a dict).
//
// SentencePiece 0.1.97 (the version Debian 12 ships; src/bpe_model_trainer.cc and
// src/trainer_interface.cc), spm_train --model_type=bpe:
//   What agrees. Its normaliser puts "▁" for each space and one before the first word
//   (add_dummy_prefix, escape_whitespaces) after collapsing runs of spaces and trimming
//   (remove_extra_whitespaces); split_by_whitespace then counts the words "▁word" with their
//   frequencies. Its symbols are code points. Each step scans its candidate pairs and takes the
//   highest frequency, then the piece of fewer code points, then the smaller std::string (whose <
//   compares bytes unsigned): our rules 1 to 3. Its vocabulary, as <prefix>.vocab lists it, is
//   <unk> <s> </s> (ids 0 to 2, score 0), then the merged pieces in the order learned (score -i
//   for the i-th), then the characters, most frequent first and ties in code point order (its
//   Sorted). With --character_coverage=1.0 every character of the text is one of them, so a
//   vocabulary of V pieces holds V - 3 - (number of characters) merges. --required_chars names
//   characters it keeps whatever their coverage. sentencepiece_vocabulary gives ours in that form.
//   What differs, and why:
//   a. Normalisation. The default rule nmt_nfkc applies NFKC and maps other whitespace to spaces;
//      --normalization_rule_name=identity leaves the text as it is. A no-break space (U+00A0) or an
//      ideographic space (U+3000) then stays a character of its word, as here; a tab stays in the
//      text too (spm_encode keeps it as a piece of its own inside the word, "ab<tab>cd" giving
//      ▁ ab <tab> cd, and spm_train leaves it out of its alphabet), where we cut words at it as
//      at every ASCII whitespace character.
//   b. Overlapping pairs. Sennrich et al.'s get_stats counts (a, a) twice in "a a a"; SentencePiece
//      counts it once, the number of replacements a merge makes (its ComputeFreq drops a position
//      that overlaps the one before it). A run of three equal symbols can therefore change the
//      choice: on "aaa bc bc" we count (a, a) 2 and merge it first (the tie with (b, c) goes to
//      "aa"); SentencePiece counts it 1 and merges (b, c) first. MergeStep::replaced is its count.
//   c. Candidates. Every 100 pieces it keeps as candidates only the max(1000, 5 % of its symbols)
//      most frequent pairs, plus the pairs each merge creates; a pair left out can become the most
//      frequent before the next refresh and is then passed over. It is sure to be exact BPE only
//      while at most 1000 distinct pairs have ever occurred. (Later releases replaced this loop by
//      a priority queue without rules 2 and 3; the agreement here is 0.1.97's.)
//   d. Allowed pieces (IsValidSentencePiece): at most max_sentencepiece_length code points (16);
//      no piece mixing Unicode scripts (split_by_unicode_script: "d," is Latin with Common), digits
//      only with digits (split_by_number), "▁" only first. Such pairs are never candidates; we
//      allow every pair.
//   e. The end. When no pair occurs any more it goes on adding pairs whose count has fallen to 0
//      (they stay among its candidates), in rules 2 and 3's order, until the vocabulary is full;
//      we stop, with fewer merges than asked for.
//   f. A string met twice. When a pair joins to a piece it already holds, SentencePiece drops the
//      pair without merging it; exact BPE merges it, and the vocabulary holds the string once.
//   g. Input. spm_train skips lines longer than max_sentence_length (4192 bytes), and turns the
//      characters below --character_coverage into the unknown symbol, which never merges.
//   h. Encoding. Its BPE model segments by merging, again and again, the adjacent pair whose joined
//      string is a piece of best score (learned earliest), leftmost first: by strings, not by the
//      learned pairs. That is the same segmentation as applying the merges in order, except where
//      one string can be joined from different pairs (f).
// So with --normalization_rule_name=identity --character_coverage=1.0 --split_by_unicode_script=false
// --split_by_number=false, a max_sentencepiece_length above the longest word, on a text where
// fewer than 1000 distinct pairs ever occur and no pair overlaps itself, and a vocabulary small
// enough that pairs remain, spm_train's vocabulary is sentencepiece_vocabulary's, piece for piece
// (tests/test_bpe.cpp checks it on the first verses of Genesis).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn::text {

// Text BPE cannot take (invalid UTF-8, the meta symbol "▁" in the input) and options out of range.
struct BpeError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// "▁" (U+2581, LOWER ONE EIGHTH BLOCK), SentencePiece's meta symbol: the start of a word.
inline constexpr std::string_view word_start = "\xe2\x96\x81";

// The characters (code points) of UTF-8 text, each as its own UTF-8 string. Throws BpeError naming
// the byte for invalid UTF-8 (RFC 3629: a stray continuation byte, a sequence cut short, an overlong
// form, a surrogate, a code point past U+10FFFF).
std::vector<std::string> utf8_characters(std::string_view text);

// The text as the tokenizer reads it: runs of ASCII whitespace (space, tab, line feed, vertical tab,
// form feed, carriage return) become one space, trimmed at both ends. decode(encode(m, s)) gives it
// back.
std::string normalize_spaces(std::string_view sentence);

// A sentence's words, each with "▁" in front: "In the  beginning" -> "▁In", "▁the", "▁beginning".
// Throws BpeError for invalid UTF-8 or a "▁" in the sentence (decoding would turn it into a space).
std::vector<std::string> split_words(std::string_view sentence);

struct WordCount {
    std::string word;  // "▁the"
    std::size_t count = 0;
};

// The words of all sentences with how often each occurs, sorted by word (byte order). Errors name
// the sentence: "sentences[3]: ...".
std::vector<WordCount> count_words(const std::vector<std::string>& sentences);

struct CharacterCount {
    std::string character;  // one code point, UTF-8
    std::size_t count = 0;
};

// The alphabet: every character of the words with how often it occurs, most frequent first, ties in
// code point order (SentencePiece's order of the characters in its vocabulary).
std::vector<CharacterCount> count_characters(const std::vector<WordCount>& words);

// A pair of adjacent symbols and how often it occurs, over all words, each weighted by its count.
struct PairCount {
    std::string left, right;
    std::size_t count = 0;
    std::string joined() const { return left + right; }
};

// True when `a` wins over `b` by the rules of the header: the higher count, then the shorter joined
// symbol in code points, then the smaller joined symbol in byte order, then the shorter left symbol.
bool ranks_before(const PairCount& a, const PairCount& b);

// One step of learning: the pair merged and the pairs it was chosen among.
struct MergeStep {
    PairCount pair;                     // the winner; pair.joined() is the new symbol
    std::size_t replaced = 0;           // replacements made, left to right, weighted by word count;
                                        // less than pair.count where occurrences overlap ("a a a")
    std::vector<PairCount> candidates;  // the best pairs in rank order, the winner first
};

struct BpeOptions {
    std::size_t merges = 0;       // merges to learn (at least 1); fewer when no pair is left
    std::size_t candidates = 5;   // pairs kept in each step's candidates (at least 1)
};

struct BpeModel {
    std::vector<CharacterCount> characters;  // the alphabet of the training text (count_characters)
    std::vector<MergeStep> merges;           // in the order learned
};

// Learns BPE on `sentences` (Sennrich et al. 2016, Algorithm 1, with the words of split_words and
// the tie rule of the header). Throws BpeError for no merges asked for, no candidates, no word in
// the sentences, or a sentence split_words rejects.
BpeModel learn_bpe(const std::vector<std::string>& sentences, const BpeOptions& options);

// The pieces of a sentence: each word of split_words split into characters, then the model's merges
// applied in the order learned, each left to right (Sennrich et al.'s apply_bpe). A character the
// training text lacked stays a piece of its own. Throws BpeError as split_words does.
std::vector<std::string> encode(const BpeModel& model, std::string_view sentence);

// The text of pieces: joined, "▁" turned into spaces, the first word's space dropped.
std::string decode(const std::vector<std::string>& pieces);

// The vocabulary as spm_train's <prefix>.vocab lists it: "<unk>", "<s>", "</s>", the merged symbols
// in the order learned (a string met again kept once), then the characters in count_characters'
// order.
std::vector<std::string> sentencepiece_vocabulary(const BpeModel& model);

}  // namespace attn::text
