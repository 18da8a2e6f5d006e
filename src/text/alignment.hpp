// Scoring attention maps against verses aligned by hand (issue 42): lessons/data/hand_alignments.txt holds
// verses of John, lesson 14's test set, each with the links a reader draws between its English and Spanish
// words; this header reads that file, checks it against the modules' text, and scores a model's attention
// map (target piece x source piece) against it.
//
// Links are "sure" or "possible", as Och and Ney annotated theirs (F. J. Och and H. Ney 2003, "A Systematic
// Comparison of Various Statistical Alignment Models", Computational Linguistics 29(1):19-51):
// S, the sure links, and P, the possible ones, with S a subset of P. The file's format and its linking
// conventions are in the file's header.
//
// From pieces to words. A model attends over subword pieces; the gold links are between words, as
// words_of (text/corpus.hpp) counts them. piece_words maps each piece to the word it belongs to; then, for
// a Spanish word t and an English word e,
//
//     W[t][e] = (1 / |pieces(t)|) * sum over p in pieces(t) of  sum over q in pieces(e) of  alpha[p][q]
//
// the weights of a source word's pieces are summed (the attention a target piece gives a word is what it
// gives all of its pieces: a word spelt in three pieces is not worth three words), and a target word's
// pieces averaged (each of them is one distribution over the source; their mean is again one, so that each
// row of W sums to 1 when every source piece has a word). A piece with no word (punctuation, <eos>) is left
// out on either side: a target row of it counts for nothing, and the weight given to a source piece without
// a word is lost (its row of W then sums to less than 1).
//
// Scores of one verse, with A the model's alignment: for each Spanish word t, the link (e*, t) to its
// highest-weighted English word e* = argmax_e W[t][e] (the lowest e among equal weights; a word none of
// whose pieces is in the map, or with no positive weight, gets no link). A has a link for every Spanish
// word, words the annotator left unaligned too, as attention gives every target word one (the extraction
// of Garg et al. 2019, "Jointly Learning to Align and Translate with Transformer Models", EMNLP):
//
//   (a) accuracy = |{t with a sure link : (e*, t) in P}| / |{t with a sure link}|
//       the share of aligned Spanish words (those with at least one sure link) whose highest-weighted
//       English word is one of their partners, sure or possible;
//   (b) AER = 1 - (|A n S| + |A n P|) / (|A| + |S|)
//       Och and Ney's alignment error rate (with recall |A n S| / |S| and precision |A n P| / |A|): 0 when A takes every sure link and nothing outside P, 1 when it takes nothing in P.
// One link per Spanish word cannot take every sure link of a Spanish word with several ("díjoles": said, unto,
// them), so AER stays above 0 on such a verse even for a map that puts all its weight on the right words:
// best_argmax_score gives the floor, the counts of the best alignment of this kind.
// Over several verses the counts are pooled (AlignmentScore::operator+=) before either ratio is taken, as
// Och and Ney computed AER over their whole test corpus.
#pragma once

#include "text/bible.hpp"

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attn::text {

// Every error of this header: a malformed line of the file ("<source>, line <n>: ..."), a file that cannot be
// read, a verse whose words the modules no longer give, pieces that do not spell the words, a weight matrix
// whose shape does not fit its maps, a score of nothing.
struct AlignmentError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Where the file is, relative to the source tree.
inline constexpr const char* hand_alignments_path = "lessons/data/hand_alignments.txt";

// A link: English word `en` to Spanish word `es`, indices into the verse's words.
struct WordLink {
    std::size_t en = 0, es = 0;
    friend bool operator==(const WordLink& a, const WordLink& b) { return a.en == b.en && a.es == b.es; }
    friend bool operator!=(const WordLink& a, const WordLink& b) { return !(a == b); }
};

// One hand-aligned verse.
struct HandAlignment {
    std::string ref;                  // "John 1:2"
    std::size_t line = 0;             // the line of its "verse" keyword in the file, from 1
    std::vector<std::string> en, es;  // its words, as words_of gives them
    std::vector<WordLink> sure;       // S, in the file's order; never empty
    std::vector<WordLink> possible;   // the links of P that are not in S (P = sure + possible)

    bool is_sure(std::size_t en_word, std::size_t es_word) const;
    bool is_possible(std::size_t en_word, std::size_t es_word) const;  // in P: sure or possible
    bool has_sure_link(std::size_t es_word) const;                     // the Spanish word is aligned
};

// The verses of the file's text, in its order (the format is in the file's header). Throws AlignmentError
// naming `source` and the line for: an unknown keyword, or one out of its place (verse, en, es, sure,
// possible, in that order); a verse, en or es line with no value; a reference that is not "Book C:V", or
// one given twice (the message names the first line); a word that words_of would not give (upper case,
// punctuation); a link that is not "e-s" with decimal indices, an index out of range (naming the verse's
// word count), a link given twice or given both sure and possible; a verse with no sure link; and, naming
// the verse, the end of the text inside a verse.
std::vector<HandAlignment> parse_hand_alignments(std::string_view text, const std::string& source);

// The same from a file; throws AlignmentError naming the file when it cannot be read.
std::vector<HandAlignment> read_hand_alignments(const std::string& path);

// The verse pair of each hand alignment, in the file's order, taken from `pairs` (align_by_reference's).
// Throws AlignmentError naming the verse and its line when `pairs` lacks its reference, or when words_of
// of its English or Spanish text is not the file's words (naming the first word that differs): the
// modules have changed, or the file was edited by mistake.
std::vector<VersePair> hand_aligned_pairs(const std::vector<HandAlignment>& gold,
                                          const std::vector<VersePair>& pairs);

// A piece with no word: piece_words' mark, and the one a caller gives a row or column of its own (<eos>).
inline constexpr std::size_t no_word = static_cast<std::size_t>(-1);

// For each piece (SentencePiece's, as Tokenizer::piece gives them: "▁" U+2581 where a space was, "▁In",
// "▁begin", "ning"), the index of the word of `words` it belongs to, or no_word. The pieces are joined, "▁"
// made a space, and words_of's rule is run over the result, each character remembering its piece: a piece
// belongs to the word of its first letter or digit; a piece with none (",", "▁", "¿") has no word. So
// "¿Eres tú?" in pieces "▁¿", "E", "res", "▁tú", "?" gives no word, eres, eres, tú, no word. What a letter is
// is words_of's to say, character by character: it counts every code point from U+00C0 on, so that the
// apostrophe of "Father’s" (U+2019) is a letter and "father’s" one word, whatever piece "’" falls in. Special
// pieces
// ("<s>", "</s>", "<unk>", "<sos>", "<eos>", "<pad>") have no word and no text. Throws AlignmentError when the
// words spelt by the pieces are not `words` (naming the first difference: a piece lost, an <unk> in place
// of a character), or for invalid UTF-8.
std::vector<std::size_t> piece_words(const std::vector<std::string>& pieces, const std::vector<std::string>& words);

// Weights in rows: target (Spanish) by source (English), rows[i][j].
using WeightRows = std::vector<std::vector<double>>;

// The word x word matrix W of the header's formula: es_word_count rows, en_word_count columns.
// `es_piece_words` has one entry per row of `piece_weights`, `en_piece_words` one per column, each a word
// index or no_word. Throws AlignmentError for rows of different lengths, maps of the wrong size, or an
// index not below its word count.
WeightRows word_weights(const WeightRows& piece_weights, const std::vector<std::size_t>& es_piece_words,
                        const std::vector<std::size_t>& en_piece_words, std::size_t es_word_count,
                        std::size_t en_word_count);

// A, the alignment read off W: (argmax_e W[t][e], t) for each Spanish word t, in t's order (see the header
// for ties and for words with no weight).
std::vector<WordLink> argmax_alignment(const WeightRows& word_weights);

// The counts both scores are made of; add verses' counts up, then take the ratios.
struct AlignmentScore {
    std::size_t aligned = 0;   // Spanish words with a sure link
    std::size_t hits = 0;      // of those, the ones whose argmax English word is a partner (in P)
    std::size_t links = 0;     // |A|
    std::size_t sure = 0;      // |S|
    std::size_t a_and_s = 0;   // |A n S|
    std::size_t a_and_p = 0;   // |A n P|

    AlignmentScore& operator+=(const AlignmentScore& other);
    double accuracy() const;  // hits / aligned; throws AlignmentError when aligned is 0
    double aer() const;       // 1 - (a_and_s + a_and_p) / (links + sure); throws when links + sure is 0
};

// The counts of one verse from its word x word matrix (rows: gold.es, columns: gold.en). Throws
// AlignmentError naming the verse when the matrix is not gold.es.size() x gold.en.size().
AlignmentScore score_word_weights(const WeightRows& word_weights, const HandAlignment& gold);

// The best counts an argmax alignment can have on `gold`: each Spanish word linked to its first sure partner,
// or, with none, its first possible partner, or, with neither, to a word outside P (every word gets a link, as
// from a real map). Its accuracy is 1; its AER is the floor of any map's on this verse (0 only when no Spanish
// word has two sure links and every Spanish word has a partner).
AlignmentScore best_argmax_score(const HandAlignment& gold);

// word_weights, then score_word_weights: the counts of one verse from a model's attention over pieces.
AlignmentScore score_attention(const WeightRows& piece_weights, const std::vector<std::size_t>& es_piece_words,
                               const std::vector<std::size_t>& en_piece_words, const HandAlignment& gold);

}  // namespace attn::text
