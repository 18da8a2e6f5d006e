// Scoring attention against hand-aligned verses (src/text/alignment.hpp, issue 42): the file's parser and
// its errors, pieces mapped to words_of's words, word weights made of piece weights, the accuracy and the
// alignment error rate of maps whose scores are known by hand, and the repository's file itself: read
// whole, and, where the SWORD modules are installed, every verse of it checked against their text.
#include "text/alignment.hpp"
#include "text/bible.hpp"
#include "text/corpus.hpp"
#include "text/sentencepiece.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own (the tests are compiled as unity files).
namespace test_alignment {

using namespace attn::text;

const std::string W = "\xe2\x96\x81";  // ▁, SentencePiece's mark of a word's start
constexpr std::size_t none = no_word;

// John 15:1 in the file's format, with a comment, blank lines and stray spaces the parser must take: every
// Spanish word has one sure partner, and "the true vine" -> "la vid verdadera" swaps noun and adjective.
const std::string john_15_1 =
    "# I am the true vine, and my Father is the husbandman.\n"
    "\n"
    "verse John 15:1\n"
    "  en i am the true vine and my father is the husbandman\n"
    "es yo soy la vid verdadera y mi padre es el labrador   \n"
    "sure 0-0 1-1 2-2 3-4 4-3 5-5 6-6 7-7 8-8 9-9 10-10\r\n"
    "possible\n";

// John 1:2: "The same" -> "Este", two sure links to one Spanish word.
const std::string john_1_2 =
    "verse John 1:2\n"
    "en the same was in the beginning with god\n"
    "es este era en el principio con dios\n"
    "sure 0-0 1-0 2-1 3-2 4-3 5-4 6-5 7-6\n"
    "possible\n";

// John 11:35: "Jesus wept." -> "Y lloró Jesús.", the verb before its subject and an "Y" with no partner.
const std::string john_11_35 =
    "verse John 11:35\n"
    "en jesus wept\n"
    "es y lloró jesús\n"
    "sure 0-2 1-1\n"
    "possible 1-0\n";

HandAlignment only(const std::string& text) {
    const std::vector<HandAlignment> verses = parse_hand_alignments(text, "test");
    REQUIRE(verses.size() == 1);
    return verses.front();
}

// Peaked attention over pieces: each row of a target piece of word t gives 0.9 to the first piece of English
// word choice[t], the rest spread evenly over all columns; rows of pieces without a word are uniform.
WeightRows peaked(const std::vector<std::size_t>& es_map, const std::vector<std::size_t>& en_map,
                  const std::vector<std::size_t>& choice) {
    const double spread = 0.1 / static_cast<double>(en_map.size());
    WeightRows rows;
    for (const std::size_t t : es_map) {
        std::vector<double> row(en_map.size(), t == none ? 1.0 / static_cast<double>(en_map.size()) : spread);
        if (t != none) {
            const auto first = std::find(en_map.begin(), en_map.end(), choice.at(t));
            REQUIRE(first != en_map.end());
            row[static_cast<std::size_t>(first - en_map.begin())] += 0.9;
        }
        rows.push_back(row);
    }
    return rows;
}

std::filesystem::path repository_file() {
    const char* source = std::getenv("ATTN_SOURCE_DIR");
    REQUIRE(source != nullptr);
    return std::filesystem::path(source) / hand_alignments_path;
}

TEST_CASE("the hand alignments' format: a verse, its words and its sure and possible links", "[alignment]") {
    const std::vector<HandAlignment> verses = parse_hand_alignments(john_15_1 + "\n" + john_11_35, "test");
    REQUIRE(verses.size() == 2);
    const HandAlignment& v = verses[0];
    CHECK(v.ref == "John 15:1");
    CHECK(v.line == 3);
    CHECK(v.en == words_of("I am the true vine, and my Father is the husbandman."));
    CHECK(v.es == words_of("YO soy la vid verdadera, y mi Padre es el labrador."));
    REQUIRE(v.sure.size() == 11);
    CHECK(v.sure[3] == WordLink{3, 4});  // true -> verdadera
    CHECK(v.possible.empty());
    CHECK(v.is_sure(4, 3));
    CHECK_FALSE(v.is_sure(3, 3));
    const HandAlignment& w = verses[1];
    CHECK(w.ref == "John 11:35");
    CHECK(w.line == 9);
    CHECK(w.is_sure(0, 2));
    CHECK_FALSE(w.is_sure(1, 0));
    CHECK(w.is_possible(1, 0));   // possible only
    CHECK(w.is_possible(0, 2));   // P holds S
    CHECK_FALSE(w.is_possible(0, 0));
    CHECK(w.has_sure_link(1));
    CHECK_FALSE(w.has_sure_link(0));  // "y": a possible link does not make it aligned
    CHECK(parse_hand_alignments("# nothing but comments\n\n", "test").empty());
}

TEST_CASE("every malformed line of the hand alignments is an error naming its line", "[alignment]") {
    struct Case {
        std::string text;
        std::vector<std::string> said;  // what the message must hold
    };
    const std::string head = "verse John 11:35\nen jesus wept\nes y lloró jesús\n";
    const std::vector<Case> cases = {
        {"versus John 1:1\n", {"test, line 1:", "unknown keyword \"versus\""}},
        {"en jesus wept\n", {"line 1:", "\"en\" outside a verse"}},
        {"verse John 11:35\nes y lloró jesús\n", {"line 2:", "\"es\" where the verse John 11:35 (line 1) needs its \"en\""}},
        {"verse\n", {"line 1:", "no reference"}},
        {"verse John eleven\n", {"line 1:", "\"John eleven\" is not a verse reference"}},
        {"verse John 11:35\nen\n", {"line 2:", "no English words"}},
        {"verse John 11:35\nen Jesus wept\n", {"line 2:", "\"Jesus\"", "not a word as words_of gives them"}},
        {"verse John 11:35\nen jesus wept\nes y lloró jesús.\n", {"line 3:", "\"jesús.\""}},
        {head + "sure 0-2 1:1\n", {"line 4:", "sure link \"1:1\"", "not \"e-s\""}},
        {head + "sure 0-2 -1-1\n", {"line 4:", "\"-1-1\""}},
        {head + "sure 0-2 1-1x\n", {"line 4:", "\"1-1x\""}},
        {head + "sure 0-2 99999999999999999999999-1\n", {"line 4:", "not \"e-s\""}},
        {head + "sure 0-2 2-1\n", {"line 4:", "English word 2 is out of range", "2 English words, 0 to 1"}},
        {head + "sure 0-3\n", {"line 4:", "Spanish word 3 is out of range", "3 Spanish words, 0 to 2"}},
        {head + "sure 0-2 0-2\n", {"line 4:", "sure link 0-2 of John 11:35 is given twice"}},
        {head + "sure\n", {"line 4:", "John 11:35 has no sure link"}},
        {head + "sure 0-2\npossible 1-0 1-0\n", {"line 5:", "possible link 1-0", "given twice"}},
        {head + "sure 0-2\npossible 0-2\n", {"line 5:", "possible link 0-2 of John 11:35 is also sure"}},
        {head + "sure 0-2\n", {"test: the text ends inside the verse John 11:35 (line 1)", "\"possible\" line is missing"}},
        {head + "sure 0-2\npossible\n\n# again\n" + head, {"line 8:", "John 11:35 is given twice (first at line 1)"}},
        {head + "sure 0-2\npossible\nsure 0-2\n", {"line 6:", "\"sure\" outside a verse"}},
    };
    for (const Case& c : cases) {
        INFO("the text:\n" << c.text);
        bool thrown = false;
        try {
            (void)parse_hand_alignments(c.text, "test");
        } catch (const AlignmentError& e) {
            thrown = true;
            const std::string message = e.what();
            for (const std::string& s : c.said) {
                INFO("the message: " << message);
                CHECK(message.find(s) != std::string::npos);
            }
        }
        CHECK(thrown);
    }
    // a file that is not there
    CHECK_THROWS_AS(read_hand_alignments("/nonexistent/hand_alignments.txt"), AlignmentError);
    CHECK_THROWS_WITH(read_hand_alignments("/nonexistent/hand_alignments.txt"),
                      Catch::Contains("cannot read the hand alignments /nonexistent/hand_alignments.txt"));
}

TEST_CASE("the repository's hand alignments: about twenty verses of John, read from a file", "[alignment]") {
    const std::vector<HandAlignment> gold = read_hand_alignments(repository_file().string());
    CHECK(gold.size() >= 20);
    std::set<std::string> refs;
    std::size_t sure = 0, with_inversion = 0, many_to_one = 0;
    for (const HandAlignment& g : gold) {
        INFO(g.ref);
        CHECK(book_of(g.ref) == "John");  // the test set, never a training book
        refs.insert(g.ref);
        sure += g.sure.size();
        // word order changes: two sure links that cross
        bool crossing = false;
        for (const WordLink& a : g.sure)
            for (const WordLink& b : g.sure) crossing = crossing || (a.en < b.en && a.es > b.es);
        with_inversion += crossing ? 1 : 0;
        // many English words to one Spanish word
        bool shared = false;
        for (std::size_t t = 0; t < g.es.size(); ++t)
            shared = shared || std::count_if(g.sure.begin(), g.sure.end(), [&](const WordLink& l) { return l.es == t; }) > 1;
        many_to_one += shared ? 1 : 0;
    }
    CHECK(refs.size() == gold.size());
    CHECK(sure > 15 * gold.size());
    CHECK(with_inversion >= gold.size() / 2);
    CHECK(many_to_one >= gold.size() / 2);
    // the verse of lesson 14's step [maps], and the inversions the file was written for
    const auto find = [&](const std::string& ref) -> const HandAlignment& {
        const auto it = std::find_if(gold.begin(), gold.end(), [&](const HandAlignment& g) { return g.ref == ref; });
        REQUIRE(it != gold.end());
        return *it;
    };
    CHECK(find("John 1:2").is_sure(1, 0));    // same -> Este
    CHECK(find("John 15:1").is_sure(3, 4));   // true -> verdadera
    CHECK(find("John 15:1").is_sure(4, 3));   // vine -> vid
    CHECK(find("John 6:37").is_sure(6, 7));   // shall -> vendrá
    CHECK(find("John 6:37").is_sure(7, 7));   // come -> vendrá
    CHECK(find("John 6:54").is_sure(15, 14)); // him -> le, before the verb
}

TEST_CASE("piece_words maps SentencePiece's pieces to words_of's words, punctuation to none", "[alignment]") {
    // John 1:21, pieces as a BPE vocabulary cuts them: "¿" and "?" are no word, "Qué" is "qué"
    const std::vector<std::string> es = {W + "Y", W + "le", W + "pregun", "taron", ":", W + "¿", "Qué", W + "pues", "?",
                                         W + "¿", "E", "res", W + "tú", W + "El", "ías", "?"};
    const std::vector<std::string> es_words = words_of("Y le preguntaron: ¿Qué pues? ¿Eres tú Elías?");
    CHECK(piece_words(es, es_words) ==
          std::vector<std::size_t>{0, 1, 2, 2, none, none, 3, 4, none, none, 5, 5, 6, 7, 7, none});
    // John 6:8: words_of counts the apostrophe of "Peter’s" (U+2019, as every code point from U+00C0 on) as a
    // letter, so "peter’s" is one word, and every piece of it maps to it wherever the boundaries fall
    const std::vector<std::string> en_words = words_of("Simon Peter’s brother,");
    REQUIRE(en_words == std::vector<std::string>{"simon", "peter’s", "brother"});
    CHECK(piece_words({W + "Simon", W + "Pet", "er", "’", "s", W + "brother", ","}, en_words) ==
          std::vector<std::size_t>{0, 1, 1, 1, 1, 2, none});
    CHECK(piece_words({W + "Simon", W + "Peter", "’s", W + "brother", ","}, en_words) ==
          std::vector<std::size_t>{0, 1, 1, 2, none});
    // punctuation inside a piece is no word; a piece across two words (from a vocabulary that does not split at
    // punctuation) belongs to the first, and the second word to its next piece
    const std::vector<std::string> two = words_of("Nathanael, Philip");
    CHECK(piece_words({W + "Nathana", "el,", W + "Philip"}, two) == std::vector<std::size_t>{0, 0, 1});
    CHECK(piece_words({W + "Nathana", "el,", W + "P", "hilip"}, two) == std::vector<std::size_t>{0, 0, 1, 1});
    CHECK(piece_words({W + "Nathana", "el,P", "hilip"}, {"nathanael", "philip"}) == std::vector<std::size_t>{0, 0, 1});
    // a lone "▁" before punctuation, and special pieces, are no word
    CHECK(piece_words({"<s>", W + "Jesus", W + "we", "pt", W, ".", "<eos>"}, words_of("Jesus wept .")) ==
          std::vector<std::size_t>{none, 0, 1, 1, none, none, none});
    // pieces that do not spell the words: an <unk> in place of a word, a word too many
    CHECK_THROWS_WITH(piece_words({W + "Simon", "<unk>", W + "brother"}, en_words),
                      Catch::Contains("word 1 is \"peter’s\" in the text and \"brother\" in the pieces"));
    CHECK_THROWS_WITH(piece_words({W + "Simon", W + "Peter", "’s", W + "brother", W + "Andrew"}, en_words),
                      Catch::Contains("the text: 3 words, the pieces: 4 words"));
    CHECK_THROWS_AS(piece_words({W + "Sim\xff"}, {"sim"}), AlignmentError);
}

TEST_CASE("piece_words on a real SentencePiece vocabulary: every word has a piece, in order", "[alignment]") {
    if (!have_sentencepiece()) {
        WARN("skipped: attn was built without SentencePiece (libsentencepiece-dev)");
        return;
    }
    // the repository's verses as their comments give them, both languages in one vocabulary as lesson 14 has
    std::ifstream in(repository_file());
    std::vector<std::string> sentences;
    // the two comment lines above each verse's "en" line: English, then Spanish
    std::vector<std::string> block;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("verse ", 0) == 0) block.clear();
        else if (line.rfind("# ", 0) == 0 && block.size() < 2) block.push_back(line.substr(2));
        if (line.rfind("en ", 0) == 0) {
            REQUIRE(block.size() == 2);
            sentences.insert(sentences.end(), block.begin(), block.end());
        }
    }
    const std::vector<HandAlignment> gold = read_hand_alignments(repository_file().string());
    REQUIRE(sentences.size() == 2 * gold.size());
    SentencePieceOptions options;
    options.vocab_size = 500;
    options.hard_vocab_limit = false;
    const Tokenizer tokenizer(train_sentencepiece(sentences, options));
    std::size_t split_words = 0;
    for (std::size_t k = 0; k < gold.size(); ++k)
        for (const bool english : {true, false}) {
            const std::string& text = sentences[2 * k + (english ? 0 : 1)];
            const std::vector<std::string>& words = english ? gold[k].en : gold[k].es;
            INFO(gold[k].ref << ": " << text);
            REQUIRE(words_of(text) == words);  // the comments are the verses
            const std::vector<std::string> pieces = tokenizer.pieces(text);
            const std::vector<std::size_t> map = piece_words(pieces, words);
            // every word has at least one piece, the pieces go through the words in order, and a piece with
            // no word has no letter or digit
            std::vector<std::size_t> per_word(words.size(), 0);
            std::size_t last = 0;
            for (std::size_t p = 0; p < pieces.size(); ++p) {
                if (map[p] == none) {
                    std::string piece_text = pieces[p];
                    for (std::size_t at; (at = piece_text.find(W)) != std::string::npos;) piece_text.replace(at, W.size(), " ");
                    CHECK(words_of(piece_text).empty());
                    continue;
                }
                CHECK(map[p] >= last);
                last = map[p];
                ++per_word.at(map[p]);
            }
            CHECK(std::count(per_word.begin(), per_word.end(), 0) == 0);
            split_words += static_cast<std::size_t>(
                std::count_if(per_word.begin(), per_word.end(), [](std::size_t n) { return n > 1; }));
        }
    CHECK(split_words > 0);  // the vocabulary is small enough that some words take several pieces
}

TEST_CASE("word weights: source pieces summed, target pieces averaged, pieces without a word left out", "[alignment]") {
    // two Spanish words (the first in two pieces) and <eos>; two English words (the second in two pieces) and "."
    const WeightRows pieces = {{0.1, 0.2, 0.3, 0.4}, {0.3, 0.3, 0.3, 0.1}, {0.5, 0.5, 0.0, 0.0}, {1.0, 0.0, 0.0, 0.0}};
    const WeightRows w = word_weights(pieces, {0, 0, 1, none}, {0, 1, 1, none}, 2, 2);
    REQUIRE(w.size() == 2);
    CHECK(w[0][0] == Approx((0.1 + 0.3) / 2));
    CHECK(w[0][1] == Approx((0.2 + 0.3 + 0.3 + 0.3) / 2));
    CHECK(w[1][0] == Approx(0.5));
    CHECK(w[1][1] == Approx(0.5));
    // the shapes must fit
    CHECK_THROWS_WITH(word_weights(pieces, {0, 0, 1}, {0, 1, 1, none}, 2, 2), Catch::Contains("4 target rows"));
    CHECK_THROWS_WITH(word_weights(pieces, {0, 0, 1, none}, {0, 1, 1}, 2, 2), Catch::Contains("row 0"));
    CHECK_THROWS_WITH(word_weights(pieces, {0, 0, 2, none}, {0, 1, 1, none}, 2, 2),
                      Catch::Contains("Spanish piece 2 is mapped to word 2"));
    CHECK_THROWS_WITH(word_weights(pieces, {0, 0, 1, none}, {0, 1, 1, 2}, 2, 2),
                      Catch::Contains("English piece 3 is mapped to word 2"));
    // argmax: the lowest index among equals; a row without weight gives no link
    CHECK(argmax_alignment({{0.2, 0.5, 0.5}, {0.0, 0.0, 0.0}, {0.7, 0.1, 0.2}}) ==
          std::vector<WordLink>{{1, 0}, {0, 2}});
}

TEST_CASE("a map with all its weight on the gold partners scores 1, and AER 0 where one link a word can", "[alignment]") {
    // John 15:1, every word in pieces; "verdadera" and "husbandman" in two, punctuation and <eos> with none
    const HandAlignment g = only(john_15_1);
    const std::vector<std::string> en = {W + "I", W + "am", W + "the", W + "true", W + "vine", ",", W + "and",
                                         W + "my", W + "Father", W + "is", W + "the", W + "husband", "man", "."};
    const std::vector<std::string> es = {W + "YO", W + "soy", W + "la", W + "vid", W + "verdad", "era", ",", W + "y",
                                         W + "mi", W + "Padre", W + "es", W + "el", W + "labrador", "."};
    std::vector<std::size_t> en_map = piece_words(en, g.en), es_map = piece_words(es, g.es);
    es_map.push_back(none);  // <eos>
    const std::vector<std::size_t> right = {0, 1, 2, 4, 3, 5, 6, 7, 8, 9, 10};  // Spanish word -> English
    const AlignmentScore s = score_attention(peaked(es_map, en_map, right), es_map, en_map, g);
    CHECK(s.aligned == 11);
    CHECK(s.hits == 11);
    CHECK(s.links == 11);
    CHECK(s.sure == 11);
    CHECK(s.accuracy() == 1.0);
    CHECK(s.aer() == 0.0);
    // the same map read monotonically (la vid verdadera -> the true vine, word for word) misses the inversion
    const std::vector<std::size_t> diagonal = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    const AlignmentScore d = score_attention(peaked(es_map, en_map, diagonal), es_map, en_map, g);
    CHECK(d.hits == 9);
    CHECK(d.accuracy() == Approx(9.0 / 11));
    CHECK(d.aer() == Approx(1.0 - (9.0 + 9.0) / (11 + 11)));

    // John 1:2: "The same" -> "Este" has two sure links, A one: the right map scores 1 but AER 1/15, the floor
    const HandAlignment h = only(john_1_2);
    const std::vector<std::size_t> en2 = piece_words({W + "The", W + "same", W + "was", W + "in", W + "the",
                                                      W + "beginning", W + "with", W + "God", "."}, h.en);
    const std::vector<std::size_t> es2 =
        piece_words({W + "Este", W + "era", W + "en", W + "el", W + "principio", W + "con", W + "Dios", "."}, h.es);
    const AlignmentScore r = score_attention(peaked(es2, en2, {1, 2, 3, 4, 5, 6, 7}), es2, en2, h);
    CHECK(r.accuracy() == 1.0);
    CHECK(r.a_and_s == 7);
    CHECK(r.sure == 8);
    CHECK(r.aer() == Approx(1.0 - (7.0 + 7.0) / (7 + 8)));
    const AlignmentScore best = best_argmax_score(h);
    CHECK(best.aer() == Approx(1.0 / 15));
    CHECK(best.accuracy() == 1.0);
    CHECK(best_argmax_score(g).aer() == 0.0);
}

TEST_CASE("a uniform map: every Spanish word takes the English word with the most pieces", "[alignment]") {
    // John 11:35: "Jesus wept." in pieces ▁Jesus ▁we pt . ; "Y lloró Jesús." in ▁Y ▁llor ó ▁Jesús . and <eos>
    const HandAlignment g = only(john_11_35);
    const std::vector<std::size_t> en = piece_words({W + "Jesus", W + "we", "pt", "."}, g.en);
    std::vector<std::size_t> es = piece_words({W + "Y", W + "llor", "ó", W + "Jesús", "."}, g.es);
    es.push_back(none);
    const WeightRows uniform(es.size(), std::vector<double>(en.size(), 0.25));
    // every word's row: jesus 1/4, wept 2/4 (the "." keeps its 1/4): A = {wept-y, wept-lloró, wept-jesús}
    const WeightRows w = word_weights(uniform, es, en, g.es.size(), g.en.size());
    for (const auto& row : w) CHECK(row == std::vector<double>{0.25, 0.5});
    CHECK(argmax_alignment(w) == std::vector<WordLink>{{1, 0}, {1, 1}, {1, 2}});
    const AlignmentScore s = score_attention(uniform, es, en, g);
    // aligned: lloró and jesús (y has a possible link only); hit: lloró
    CHECK(s.aligned == 2);
    CHECK(s.hits == 1);
    CHECK(s.accuracy() == 0.5);
    // A n S = {wept-lloró}; A n P adds wept-y: AER = 1 - (1 + 2) / (3 + 2)
    CHECK(s.links == 3);
    CHECK(s.a_and_s == 1);
    CHECK(s.a_and_p == 2);
    CHECK(s.aer() == Approx(0.4));
}

TEST_CASE("a possible partner is a hit and counts in A n P, not in A n S", "[alignment]") {
    // John 6:20, as the repository's file has it: "It is I; be not afraid." -> "Yo soy; no tengáis miedo."
    const HandAlignment g = only("verse John 6:20\n"
                                 "en but he saith unto them it is i be not afraid\n"
                                 "es mas él les dijo yo soy no tengáis miedo\n"
                                 "sure 0-0 1-1 2-3 3-2 4-2 6-5 7-4 8-7 9-6 10-8\n"
                                 "possible 5-5 8-8 10-7\n");
    // soy -> it and tengáis -> afraid are possible links; every other word goes to a sure partner
    const std::vector<std::size_t> choice = {0, 1, 3, 2, 7, 5, 9, 10, 10};
    WeightRows w(g.es.size(), std::vector<double>(g.en.size(), 0.0));
    for (std::size_t t = 0; t < choice.size(); ++t) w[t][choice[t]] = 1.0;
    const AlignmentScore s = score_word_weights(w, g);
    CHECK(s.aligned == 9);
    CHECK(s.hits == 9);
    CHECK(s.accuracy() == 1.0);
    CHECK(s.a_and_s == 7);
    CHECK(s.a_and_p == 9);
    CHECK(s.aer() == Approx(1.0 - 16.0 / 19));
}

TEST_CASE("a map that sends every Spanish word to a wrong English word scores 0, AER 1", "[alignment]") {
    const HandAlignment g = only(john_15_1);
    std::vector<std::size_t> one_piece(g.en.size());
    for (std::size_t k = 0; k < one_piece.size(); ++k) one_piece[k] = k;
    // each Spanish word to the English word after its partner: never in P
    const std::vector<std::size_t> right = {0, 1, 2, 4, 3, 5, 6, 7, 8, 9, 10};
    std::vector<std::size_t> wrong(right.size());
    for (std::size_t t = 0; t < right.size(); ++t) {
        wrong[t] = (right[t] + 1) % g.en.size();
        REQUIRE_FALSE(g.is_possible(wrong[t], t));
    }
    const AlignmentScore s = score_attention(peaked(one_piece, one_piece, wrong), one_piece, one_piece, g);
    CHECK(s.hits == 0);
    CHECK(s.accuracy() == 0.0);
    CHECK(s.a_and_p == 0);
    CHECK(s.aer() == 1.0);
    // scores of verses pool their counts, not their ratios
    AlignmentScore pooled = s;
    pooled += best_argmax_score(g);
    CHECK(pooled.accuracy() == 0.5);
    CHECK(pooled.aer() == 0.5);
    // nothing to score is an error, not 0 or NaN
    CHECK_THROWS_AS(AlignmentScore{}.accuracy(), AlignmentError);
    CHECK_THROWS_AS(AlignmentScore{}.aer(), AlignmentError);
    CHECK_THROWS_WITH(score_word_weights(WeightRows(3, std::vector<double>(3, 1.0)), g),
                      Catch::Contains("John 15:1: the word weights have 3 rows for its 11 Spanish words"));
}

TEST_CASE("hand_aligned_pairs finds each verse and holds its words to the file's", "[alignment]") {
    const std::vector<HandAlignment> gold = parse_hand_alignments(john_1_2 + john_11_35, "test");
    const VersePair v12{"John 1:2", "The same was in the beginning with God.", "Este era en el principio con Dios."};
    const VersePair v1135{"John 11:35", "Jesus wept.", "Y lloró Jesús."};
    const VersePair other{"John 1:1", "In the beginning was the Word.", "EN el principio era el Verbo."};
    const std::vector<VersePair> found = hand_aligned_pairs(gold, {other, v1135, v12});
    REQUIRE(found.size() == 2);
    CHECK(found[0].ref == "John 1:2");  // the file's order
    CHECK(found[1].es == "Y lloró Jesús.");
    CHECK_THROWS_WITH(hand_aligned_pairs(gold, {other, v12}),
                      Catch::Contains("John 11:35 (line 6) is not among the 2 verse pairs"));
    VersePair changed = v1135;
    changed.es = "Y lloró el Señor.";
    CHECK_THROWS_WITH(hand_aligned_pairs(gold, {v12, changed}),
                      Catch::Contains("John 11:35 (line 6): its Spanish words are no longer the modules'") &&
                          Catch::Contains("word 2 is \"el\" in the modules and \"jesús\" in the file"));
}

TEST_CASE("the installed modules: every hand-aligned verse's words are still the modules'", "[alignment]") {
    std::string why;
    if (!attn::test::bible_modules_installed(why)) {
        WARN("skipped: " << why << "; " << install_command());
        return;
    }
    const std::vector<HandAlignment> gold = read_hand_alignments(repository_file().string());
    AlignCounts counts;
    const std::vector<VersePair> pairs =
        align_by_reference(read_module(english_module(), true), read_module(spanish_module(), false), counts);
    const std::vector<VersePair> found = hand_aligned_pairs(gold, pairs);
    REQUIRE(found.size() == gold.size());
    for (std::size_t k = 0; k < gold.size(); ++k) {
        CHECK(words_of(found[k].en) == gold[k].en);
        CHECK(words_of(found[k].es) == gold[k].es);
    }
    // and the check can fail: the file's verse with one word changed
    std::vector<HandAlignment> edited = gold;
    edited.front().es.back() = "señor";
    CHECK_THROWS_AS(hand_aligned_pairs(edited, pairs), AlignmentError);
}

}  // namespace test_alignment
