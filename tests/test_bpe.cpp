// Byte-pair encoding (src/text/bpe.hpp): Sennrich et al.'s toy vocabulary merged by hand, the tie
// rule, the round trip through encode and decode, invalid input, and SentencePiece's own trainer
// (spm_train 0.1.97, Debian package sentencepiece) on the first verses of Genesis, where its rules
// and ours agree and where they do not. Those last cases are skipped, saying so, without spm_train.
#include "text/bpe.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_bpe {

using namespace attn::text;

// "▁", U+2581
const std::string W = "\xe2\x96\x81";

std::vector<std::string> repeated(const std::string& sentence, std::size_t times) {
    return std::vector<std::string>(times, sentence);
}

std::vector<std::string> joined(const std::vector<std::vector<std::string>>& parts) {
    std::vector<std::string> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
}

TEST_CASE("Sennrich et al.'s toy vocabulary: the first ten merges, counted by hand", "[bpe]") {
    // Sennrich, Haddow & Birch 2016, Algorithm 1: low 5, lower 2, newest 6, widest 3 (the paper puts
    // </w> at the end of a word, we put ▁ in front: its first two merges, e s and es t, both 9, are
    // the same either way).
    const std::vector<std::string> text = joined(
        {repeated("low", 5), repeated("lower", 2), repeated("newest", 6), repeated("widest", 3)});
    const BpeModel model = learn_bpe(text, {10, 6});

    // Pairs at the start: ▁l 7, lo 7, ow 7, we 2+6 = 8, er 2, ▁n 6, ne 6, ew 6, es 6+3 = 9, st 9,
    // ▁w 3, wi 3, id 3, de 3. Step by step (rule 1 count, 2 length in code points, 3 bytes):
    //   1. es 9 against st 9: same length, "es" < "st"
    //   2. es+t 9
    //   3. lo 7, ow 7, ▁l 7: "lo" < "ow" < "▁l" (▁ is E2 96 81, above ASCII)
    //   4. lo+w 7 against ▁+lo 7: "low" < "▁lo"
    //   5. ▁+low 7
    //   6. newest = ▁ n e w est: ▁n 6, ne 6, ew 6, w+est 6: the three of 2 code points, "ew" first
    //   7. ▁ n ew est: ▁n (2 code points) before n+ew (3) and ew+est (5)
    //   8. ▁n+ew 6
    //   9. ▁new+est 6
    //  10. left: ▁low+e 2, e+r 2, and from widest ▁w 3, wi 3, id 3, d+est 3: "id" < "wi" < "▁w"
    const std::vector<PairCount> expected = {
        {"e", "s", 9},           {"es", "t", 9},        {"l", "o", 7},          {"lo", "w", 7},
        {W, "low", 7},           {"e", "w", 6},         {W, "n", 6},            {W + "n", "ew", 6},
        {W + "new", "est", 6},   {"i", "d", 3}};
    REQUIRE(model.merges.size() == expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
        INFO("merge " << k + 1);
        CHECK(model.merges[k].pair.left == expected[k].left);
        CHECK(model.merges[k].pair.right == expected[k].right);
        CHECK(model.merges[k].pair.count == expected[k].count);
        CHECK(model.merges[k].replaced == expected[k].count);  // no pair overlaps itself here
    }
    // the decision of step 1, as a lesson shows it: the six best pairs in rank order
    const std::vector<PairCount> first = {{"e", "s", 9}, {"s", "t", 9}, {"w", "e", 8},
                                          {"l", "o", 7}, {"o", "w", 7}, {W, "l", 7}};
    REQUIRE(model.merges[0].candidates.size() == first.size());
    for (std::size_t k = 0; k < first.size(); ++k) {
        INFO("candidate " << k);
        CHECK(model.merges[0].candidates[k].joined() == first[k].joined());
        CHECK(model.merges[0].candidates[k].count == first[k].count);
    }
    // the alphabet: ▁ 16, e 2+12+3 = 17, w 5+2+6+3 = 16, ... most frequent first, ties in code point order
    REQUIRE(model.characters.size() == 11);
    CHECK(model.characters[0].character == "e");
    CHECK(model.characters[0].count == 17);
    CHECK(model.characters[1].character == "w");  // 16, before ▁ (16): "w" < "▁"
    CHECK(model.characters[2].character == W);
    CHECK(model.characters[2].count == 16);

    // the merges segment a word never seen: ▁lowest = ▁low + est
    CHECK(encode(model, "lowest") == std::vector<std::string>{W + "low", "est"});
    CHECK(encode(model, "widest newer") == std::vector<std::string>{W, "w", "id", "est", W + "new", "e", "r"});
}

TEST_CASE("ties are broken by length in code points, then bytes, then the left symbol", "[bpe]") {
    // rule 1: the count first, whatever the strings
    CHECK(ranks_before({"z", "z", 2}, {"a", "a", 1}));
    // rule 2: "xy" (2 code points) before "abc" (3); "éa" is 3 bytes but 2 code points
    CHECK(ranks_before({"x", "y", 1}, {"ab", "c", 1}));
    CHECK(ranks_before({"\xc3\xa9", "a", 1}, {"ab", "c", 1}));
    // rule 3: bytes, unsigned: "bc" before "▁a" and before "éa" (C3 A9)
    CHECK(ranks_before({"b", "c", 1}, {W, "a", 1}));
    CHECK(ranks_before({"b", "c", 1}, {"\xc3\xa9", "a", 1}));
    CHECK_FALSE(ranks_before({W, "a", 1}, {"b", "c", 1}));
    // rule 4: the same string from two pairs: the shorter left symbol first
    CHECK(ranks_before({"a", "bc", 1}, {"ab", "c", 1}));
    CHECK_FALSE(ranks_before({"ab", "c", 1}, {"a", "bc", 1}));
    CHECK_FALSE(ranks_before({"a", "b", 1}, {"a", "b", 1}));

    // "ab cd": ▁a, ab, ▁c, cd all occur once: ab ("ab" < "cd" < "▁a" < "▁c"). Then cd (2 code points,
    // "cd" < "▁c", against ▁+ab's 3). Then ▁+ab and ▁+cd, both 3 code points: "▁ab" < "▁cd". Then every
    // word is one symbol: 4 merges of the 10 asked for. The order of the sentences does not matter.
    for (const auto& text : {std::vector<std::string>{"ab cd"}, std::vector<std::string>{"cd", "ab"}}) {
        const BpeModel model = learn_bpe(text, {10, 5});
        REQUIRE(model.merges.size() == 4);
        CHECK(model.merges[0].pair.joined() == "ab");
        CHECK(model.merges[0].candidates.size() == 4);
        CHECK(model.merges[0].candidates[3].joined() == W + "c");
        CHECK(model.merges[1].pair.joined() == "cd");
        CHECK(model.merges[2].pair.left == W);
        CHECK(model.merges[2].pair.right == "ab");
        CHECK(model.merges[3].pair.left == W);
        CHECK(model.merges[3].pair.right == "cd");
    }
}

TEST_CASE("overlapping pairs are counted as Sennrich et al. count them, merged left to right", "[bpe]") {
    // "aaa": (a, a) at 0-1 and at 1-2, counted twice (get_stats); the merge takes the first only
    const BpeModel model = learn_bpe({"aaa aaa"}, {2, 5});
    REQUIRE(model.merges.size() == 2);
    CHECK(model.merges[0].pair.joined() == "aa");
    CHECK(model.merges[0].pair.count == 4);
    CHECK(model.merges[0].replaced == 2);
    // then ▁ aa a: ▁+aa and aa+a, 2 each and both 3 code points: "aaa" < "▁aa"
    CHECK(model.merges[1].pair.left == "aa");
    CHECK(model.merges[1].pair.right == "a");
    // ▁aaaaa: ▁ aa aa a, then (aa, a) where it occurs: ▁ aa aaa
    CHECK(encode(model, "aaaaa") == std::vector<std::string>{W, "aa", "aaa"});
}

TEST_CASE("decode(encode(s)) gives back the sentence with its spaces normalised", "[bpe]") {
    const std::vector<std::string> text = {
        "In the beginning God created the heaven and the earth.",
        "EN el principio crió Dios los cielos y la tierra.",
        "Y la tierra estaba desordenada y vacía, y las tinieblas estaban sobre la haz del abismo,"};
    const BpeModel model = learn_bpe(text, {40, 1});
    REQUIRE(model.merges.size() == 40);
    std::set<std::string> vocabulary;
    for (const std::string& piece : sentencepiece_vocabulary(model)) vocabulary.insert(piece);
    for (const std::string& s :
         {text[0], text[1], std::string("  And\tGod said,  \n Let there be light: "),
          std::string("crió Dios \xe2\x80\x94 \xc3\x9f"),  // an em dash and ß, not in the training text
          std::string("tinieblas"), std::string(" \t ")}) {
        INFO(s);
        const std::vector<std::string> pieces = encode(model, s);
        CHECK(decode(pieces) == normalize_spaces(s));
        for (const std::string& p : pieces) {
            INFO(p);
            CHECK((vocabulary.count(p) == 1 || utf8_characters(p).size() == 1));
            CHECK(p.find(W, 1) == std::string::npos);  // ▁ only at the start of a piece
        }
    }
    CHECK(normalize_spaces("  And\tGod said,  \n Let ") == "And God said, Let");
    CHECK(decode({W + "In", W + "the", W, "be", "gin", "ning"}) == "In the beginning");
    CHECK(encode(model, "").empty());
}

TEST_CASE("invalid UTF-8, the meta symbol and empty requests are rejected, saying why", "[bpe]") {
    REQUIRE_THROWS_WITH(learn_bpe({"In the beginning", "bad \xff byte"}, {3, 5}),
                        "sentences[1]: invalid UTF-8 at byte 4 (0xFF)");
    REQUIRE_THROWS_WITH(encode(learn_bpe({"abc"}, {1, 5}), "cri\xc3"), "invalid UTF-8 at byte 3 (0xC3)");
    // a stray continuation byte; overlong forms of "/", U+007F, U+07FF and U+FFFF; a surrogate (U+D800);
    // past U+10FFFF; a sequence cut short; a lead byte followed by ASCII
    for (const char* bad : {"\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xf0\x8f\xbf\xbf",
                            "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xe2\x96", "\xc3\x28"})
        CHECK_THROWS_AS(utf8_characters(bad), BpeError);
    // the largest of each length, and the code points beside the surrogates, are accepted
    CHECK(utf8_characters("\x7f\xdf\xbf\xed\x9f\xbf\xee\x80\x80\xf4\x8f\xbf\xbf").size() == 5);
    REQUIRE_THROWS_WITH(learn_bpe({"and", "the \xe2\x96\x81word"}, {3, 5}),
                        Catch::Matchers::StartsWith("sentences[1]: the meta symbol \xe2\x96\x81 (U+2581) at byte 4"));
    REQUIRE_THROWS_WITH(learn_bpe({"and"}, {0, 5}), "learn_bpe: 0 merges asked for (at least 1)");
    REQUIRE_THROWS_WITH(learn_bpe({"and"}, {3, 0}), "learn_bpe: 0 candidates per step asked for (at least 1)");
    REQUIRE_THROWS_WITH(learn_bpe({" ", ""}, {3, 5}), "learn_bpe: no word in the 2 sentences");
}

// ---- SentencePiece's trainer --------------------------------------------------------------------

namespace {

// KJV Genesis 1:1-5 (support.hpp)
const std::vector<std::string>& genesis = attn::test::kjv_genesis_1_to_5();

// The pieces of <dir>/<name>.vocab after spm_train has learned a BPE vocabulary of `size` pieces
// on `lines`, with the flags under which its rules are ours (src/text/bpe.hpp).
std::vector<std::string> spm_vocabulary(const std::string& spm_train, const std::filesystem::path& dir,
                                        const std::string& name, const std::vector<std::string>& lines,
                                        std::size_t size) {
    const std::filesystem::path input = dir / (name + ".txt"), prefix = dir / name;
    {
        std::ofstream out(input, std::ios::binary);
        for (const std::string& line : lines) out << line << '\n';
    }
    const std::string command = "'" + spm_train + "' --input='" + input.string() + "' --model_prefix='" +
                                prefix.string() + "' --vocab_size=" + std::to_string(size) +
                                " --model_type=bpe --normalization_rule_name=identity --character_coverage=1.0"
                                " --num_threads=1 --split_by_unicode_script=false --split_by_number=false"
                                " --split_digits=false --byte_fallback=false --add_dummy_prefix=true"
                                " --split_by_whitespace=true --remove_extra_whitespaces=true 2>&1";
    const attn::test::Result run = attn::test::run_command(command);
    INFO(command << "\n" << run.output);
    REQUIRE(run.code == 0);
    std::istringstream vocab(attn::test::read_file(prefix.string() + ".vocab"));
    std::vector<std::string> pieces;
    for (std::string line; std::getline(vocab, line);) pieces.push_back(line.substr(0, line.find('\t')));
    return pieces;
}

// A temporary folder of this file's (removed at the end of the test case that holds it).
std::filesystem::path scratch_folder() { return attn::test::fresh_folder("bpe"); }

}  // namespace

TEST_CASE("spm_train learns the same vocabulary on Genesis 1:1-5, piece for piece", "[bpe]") {
    const std::string spm_train = attn::test::spm_train_or_skip();
    if (spm_train.empty()) return;
    const attn::test::RemovedAtEnd removed{scratch_folder()};

    // Every merge until each word is one symbol: 145, on 46 distinct words of 34 characters.
    const BpeModel model = learn_bpe(genesis, {1000, 1});
    REQUIRE(model.merges.size() == 145);
    REQUIRE(model.characters.size() == 34);
    // The conditions of the header under which SentencePiece's rules are ours: no occurrence of a pair
    // overlapped another (b), no word longer than its 16 code points (d), and fewer than 1000 distinct
    // pairs ever (c: every step's candidates, with room for all of them).
    for (const MergeStep& m : model.merges) CHECK(m.replaced == m.pair.count);
    for (const WordCount& w : count_words(genesis)) CHECK(utf8_characters(w.word).size() <= 16);
    std::set<std::pair<std::string, std::string>> ever;
    for (const MergeStep& m : learn_bpe(genesis, {1000, 100000}).merges)
        for (const PairCount& p : m.candidates) ever.insert({p.left, p.right});
    CHECK(ever.size() < 1000);

    // 3 + 145 + 34 = 182 pieces: the two vocabularies are equal
    const std::vector<std::string> ours = sentencepiece_vocabulary(model);
    REQUIRE(ours.size() == 182);
    const std::vector<std::string> theirs = spm_vocabulary(spm_train, removed.path, "genesis", genesis, 182);
    CHECK(theirs == ours);

    // Asked for 3 pieces more (e), spm_train adds 3 pairs that occur no more (their count fell to 0)
    // between the merges and the characters; we have nothing to add.
    const std::vector<std::string> more = spm_vocabulary(spm_train, removed.path, "more", genesis, 185);
    REQUIRE(more.size() == 185);
    CHECK(std::vector<std::string>(more.begin(), more.begin() + 148) ==
          std::vector<std::string>(ours.begin(), ours.begin() + 148));
    CHECK(std::vector<std::string>(more.end() - 34, more.end()) ==
          std::vector<std::string>(ours.end() - 34, ours.end()));
    for (std::size_t k = 148; k < 151; ++k) {
        INFO(more[k]);
        CHECK(std::find(ours.begin(), ours.end(), more[k]) == ours.end());
    }

    // spm_encode, merging by strings (h), segments a verse it has not seen as we do, at 40 merges
    const BpeModel small = learn_bpe(genesis, {40, 1});
    const std::vector<std::string> vocab40 = spm_vocabulary(spm_train, removed.path, "small", genesis, 3 + 40 + 34);
    REQUIRE(vocab40 == sentencepiece_vocabulary(small));
    const std::string verse = "And God made the firmament, and divided the waters which were under the firmament";
    const attn::test::Result encoded = attn::test::run_command(
        "printf '%s\\n' '" + verse + "' | '" + std::filesystem::path(spm_train).parent_path().string() +
        "/spm_encode' --model='" + (removed.path / "small.model").string() + "' --output_format=piece 2>&1");
    INFO(encoded.output);
    REQUIRE(encoded.code == 0);
    std::string ours_encoded;
    for (const std::string& p : encode(small, verse)) ours_encoded += (ours_encoded.empty() ? "" : " ") + p;
    CHECK(encoded.output == ours_encoded + "\n");
}

TEST_CASE("spm_train and Sennrich et al. part on a run of three equal symbols", "[bpe]") {
    const std::string spm_train = attn::test::spm_train_or_skip();
    if (spm_train.empty()) return;
    const attn::test::RemovedAtEnd removed{scratch_folder()};
    // "aaa bc bc": (a, a) occurs twice in ▁aaa, (b, c) once in each ▁bc. We count (a, a) 2, as
    // get_stats does, and it wins the tie with (b, c) ("aa" < "bc"); SentencePiece counts the
    // replacements, 1, and merges (b, c) first (bpe.hpp, b).
    const BpeModel model = learn_bpe({"aaa bc bc"}, {1, 5});
    CHECK(model.merges[0].pair.joined() == "aa");
    CHECK(model.merges[0].pair.count == 2);
    CHECK(model.merges[0].replaced == 1);
    const std::vector<std::string> theirs = spm_vocabulary(spm_train, removed.path, "runs", {"aaa bc bc"}, 3 + 1 + 4);
    REQUIRE(theirs.size() == 8);
    CHECK(theirs[3] == "bc");
}

}  // namespace test_bpe
