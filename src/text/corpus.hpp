// Lesson 14's corpus made from the aligned verses (text/bible.hpp): words counted, the verses split
// into training, validation and test sets by whole books, and the test set shown free of near-duplicates
// of the training set.
//
// Why whole books. The Bible repeats itself: Kings and Chronicles tell the same reigns, Matthew, Mark and
// Luke the same sayings, Numbers 7 lists the same offering twelve times, Psalm 18 is 2 Samuel 22. A split
// by random verses would put one telling in training and its twin in the test set, and a model that had
// memorised the first would seem to translate the second. Measured on the KJV (word 4-grams, a verse
// counted a near-duplicate when it shares at least half of its 4-grams, by Jaccard's index, with one
// verse of another book): 679 verses are near-duplicates, 11.8 % of 2 Kings, 6.1 % of 2 Chronicles,
// none at all in John, Daniel, Ruth or Esther. So:
//   test:        John (879 verses): prose narrative and dialogue, the longest book with no near-duplicate
//                elsewhere, and sentences of every length (Bahdanau et al.'s figure 2 needs long ones);
//   validation:  Ruth, Esther and Daniel (609 verses): prose narrative, no near-duplicate elsewhere;
//   training:    every other book.
// near_duplicates() checks the claim on the data actually read, rather than trusting the measurement.
#pragma once

#include "text/bible.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attn::text {

// The words of a text, as lesson 14 counts lengths: maximal runs of letters and digits (ASCII letters and
// digits, and every code point from U+00C0 on but U+00D7 and U+00F7, the multiplication and division
// signs: the accented letters of Spanish), lower-cased in ASCII. Punctuation, including Spanish's ¿ ¡ « »,
// separates words and is not one. Throws BibleError on invalid UTF-8.
std::vector<std::string> words_of(std::string_view text);
std::size_t word_count(std::string_view text);

// Which books go where (the header says why).
struct BookSplit {
    std::vector<std::string> validation, test;
};
const BookSplit& book_split();

struct CorpusSplit {
    std::vector<VersePair> train, validation, test;  // each in the order of `pairs`
};

// Every pair to the set its book belongs to. Throws BibleError naming a book of the rule that no pair
// has (a misspelt name would otherwise leave a set silently empty).
CorpusSplit split_by_books(const std::vector<VersePair>& pairs, const BookSplit& rule);

// The verses of `candidates` that have a near-duplicate in `reference`: a verse of `reference` with which
// they share at least half of their word 4-grams (Jaccard's index |A ∩ B| / |A ∪ B| >= 0.5, on the English
// side, words as words_of counts them). Verses of fewer than four words have no 4-gram and are compared
// whole: equal word lists are near-duplicates. Their indices into `candidates`, ascending.
std::vector<std::size_t> near_duplicates(const std::vector<VersePair>& candidates,
                                         const std::vector<VersePair>& reference);

// Every character of both sides of `pairs` but the space, each once, in code point order (which is UTF-8's
// byte order). Throws BibleError on invalid UTF-8, naming the byte.
std::string alphabet(const std::vector<VersePair>& pairs);

// How many verses have each length in words (English side when `english`, else Spanish): bins of
// `width` words, [0, width), [width, 2 width), ..., the last bin holding everything from
// (bins - 1) width on. Throws std::invalid_argument for bins or width 0.
std::vector<std::size_t> length_histogram(const std::vector<VersePair>& pairs, bool english, std::size_t width,
                                          std::size_t bins);

}  // namespace attn::text
