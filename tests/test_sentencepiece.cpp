// SentencePiece as lesson 14 trains it (src/text/sentencepiece.hpp): the same bytes on every run, the
// same vocabulary and encodings as its own command-line trainer spm_train, bpe.hpp's vocabulary where
// bpe.hpp says the rules agree, the round trip through encode and decode on real English and Spanish
// verses, unknown characters named, and every bad input refused with its reason. Without the library
// (a build without libsentencepiece-dev) the cases check the message that says how to add it and stop;
// without spm_train, or without the SWORD modules, the parts that need them are skipped, saying so.
#include "text/bible.hpp"
#include "text/bpe.hpp"
#include "text/sentencepiece.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_sentencepiece {

using namespace attn::text;

namespace {

// KJV Genesis 1:1-5 (support.hpp)
const std::vector<std::string>& genesis = attn::test::kjv_genesis_1_to_5();

// The Reina-Valera 1909's Génesis 1:1-5, 1:26 (ñ), 4:6 (¿) and 28:17 (¡), as src/text/bible cleans the
// module spaRV1909eb, and the KJV's 1:26, 4:6 and 28:17 beside them.
const std::vector<std::string> genesis_more_en = {
    "And God said, Let us make man in our image, after our likeness: and let them have dominion over the fish "
    "of the sea, and over the fowl of the air, and over the cattle, and over all the earth, and over every "
    "creeping thing that creepeth upon the earth.",
    "And the LORD said unto Cain, Why art thou wroth? and why is thy countenance fallen?",
    "And he was afraid, and said, How dreadful is this place! this is none other but the house of God, and "
    "this is the gate of heaven."};
const std::vector<std::string> genesis_es = {
    "EN el principio crió Dios los cielos y la tierra.",
    "Y la tierra estaba desordenada y vacía, y las tinieblas estaban sobre la haz del abismo, y el Espíritu de "
    "Dios se movía sobre la haz de las aguas.",
    "Y dijo Dios: Sea la luz: y fué la luz.",
    "Y vió Dios que la luz era buena: y apartó Dios la luz de las tinieblas.",
    "Y llamó Dios á la luz Día, y á las tinieblas llamó Noche: y fué la tarde y la mañana un día.",
    "Y dijo Dios: Hagamos al hombre á nuestra imagen, conforme á nuestra semejanza; y señoree en los peces de "
    "la mar, y en las aves de los cielos, y en las bestias, y en toda la tierra, y en todo animal que anda "
    "arrastrando sobre la tierra.",
    "Entonces Jehová dijo á Caín: ¿Por qué te has ensañado, y por qué se ha inmutado tu rostro?",
    "Y tuvo miedo, y dijo: ¡Cuán terrible es este lugar! No es otra cosa que casa de Dios, y puerta del cielo."};

std::vector<std::string> joined(const std::vector<std::vector<std::string>>& parts) {
    std::vector<std::string> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
}

// False, after a warning, in a build without SentencePiece: then every function must say how to add it.
bool sentencepiece_or_skip() {
    if (have_sentencepiece()) return true;
    CHECK_THROWS_WITH(train_sentencepiece(genesis, {}),
                      Catch::Contains("built without SentencePiece") && Catch::Contains("libsentencepiece-dev") &&
                          Catch::Contains("bash .ci/install-deps") &&
                          Catch::Contains("meson setup --reconfigure build"));
    CHECK_THROWS_AS(Tokenizer(""), TokenizerError);
    WARN("skipped: attn was built without SentencePiece (Debian package libsentencepiece-dev)");
    return false;
}

// The first `count` verses of a module (Genesis 1 to 3 are its first 80), cleaned as read_module cleans
// them; empty, with the reason in `why`, when the module or SWORD's exporter is missing. Only the verses
// used are cleaned (read_module cleans all 31,102: a second more).
std::vector<std::string> first_verses(const ModuleSpec& spec, bool keep_titles, std::size_t count, std::string& why) {
    const std::vector<std::string> needed = {"/usr/bin/mod2imp", "/usr/share/sword/mods.d/" + spec.module + ".conf"};
    for (const std::string& path : needed)
        if (::access(path.c_str(), R_OK) != 0) {
            why = path + " is missing";
            return {};
        }
    const std::vector<Verse> verses = parse_imp(module_imp(spec.module, spec.package), "mod2imp " + spec.module);
    REQUIRE(verses.size() >= count);
    std::vector<std::string> texts;
    for (std::size_t k = 0; k < count; ++k) texts.push_back(clean_osis(verses[k].text, keep_titles));
    return texts;
}

std::vector<std::string> vocabulary(const Tokenizer& t) {
    std::vector<std::string> pieces;
    for (int id = 0; id < t.size(); ++id) pieces.push_back(t.piece(id));
    return pieces;
}

// A temporary folder of this file's (removed at the end of the test case that holds it).
std::filesystem::path scratch_folder() { return attn::test::fresh_folder("sentencepiece"); }

}  // namespace

TEST_CASE("the same bytes twice, and spm_train's vocabulary and encodings from the same flags", "[sentencepiece]") {
    if (!sentencepiece_or_skip()) return;
    const std::vector<std::string> text = joined({genesis, genesis_more_en, genesis_es});
    const SentencePieceOptions options{300};
    const std::string model = train_sentencepiece(text, options);
    CHECK(train_sentencepiece(text, options) == model);
    // the bytes hold the vocabulary: another size, other bytes
    CHECK(train_sentencepiece(text, {299}) != model);
    const Tokenizer ours(model);
    REQUIRE(ours.size() == 300);

    const std::string spm_train = attn::test::spm_train_or_skip();
    if (spm_train.empty()) return;
    const attn::test::RemovedAtEnd removed{scratch_folder()};
    const std::filesystem::path input = removed.path / "text.txt", prefix = removed.path / "spm";
    {
        std::ofstream out(input, std::ios::binary);
        for (const std::string& line : text) out << line << '\n';
    }
    // the same flags, by file: what the two could differ in is the reading of the sentences (an iterator
    // against lines of a file) and the fields of the model that name the files
    std::string command =
        "'" + spm_train + "' --input='" + input.string() + "' --model_prefix='" + prefix.string() + "'";
    for (const auto& [flag, value] : sentencepiece_trainer_flags(options)) command += " --" + flag + "=" + value;
    command += " 2>&1";
    const attn::test::Result run = attn::test::run_command(command);
    INFO(command << "\n" << run.output);
    REQUIRE(run.code == 0);
    const Tokenizer theirs(attn::test::read_file(prefix.string() + ".model"));
    REQUIRE(theirs.size() == ours.size());
    for (int id = 0; id < ours.size(); ++id) {
        INFO("id " << id);
        CHECK(theirs.piece(id) == ours.piece(id));
        CHECK(theirs.score(id) == ours.score(id));
    }
    for (const std::string& s : text) {
        INFO(s);
        CHECK(theirs.encode(s) == ours.encode(s));
    }
}

TEST_CASE("the text is taken as it is: no NFKC", "[sentencepiece]") {
    if (!sentencepiece_or_skip()) return;
    // NFKC would make the ligature ﬁ (U+FB01) "fi" and the no-break space (U+00A0) a space: both stay
    // characters of their own, pieces of the vocabulary
    // ﬁ n e s h a b, the no-break space and ▁: nine characters, and <unk> <s> </s>
    const std::string model = train_sentencepiece({"\xef\xac\x81ne \xef\xac\x81sh", "a\xc2\xa0" "b"}, {3 + 9});
    const Tokenizer t(model);
    const std::vector<std::string> pieces = vocabulary(t);
    CHECK(std::count(pieces.begin(), pieces.end(), "\xef\xac\x81") == 1);
    CHECK(std::count(pieces.begin(), pieces.end(), "\xc2\xa0") == 1);
    CHECK(std::count(pieces.begin(), pieces.end(), "f") == 0);
    CHECK(t.decode(t.encode("\xef\xac\x81ne")) == "\xef\xac\x81ne");
}

TEST_CASE("on Genesis 1:1-5, under bpe.hpp's conditions, SentencePiece's vocabulary is bpe.hpp's", "[sentencepiece]") {
    if (!sentencepiece_or_skip()) return;
    // bpe.hpp's conditions (tests/test_bpe.cpp checks those of the text): no script or number rule,
    // pieces as long as the words. Every merge until each word is one symbol: 145, on 34 characters.
    SentencePieceOptions options;
    options.split_by_unicode_script = false;
    options.split_by_number = false;
    options.max_piece_length = 16;
    for (const std::size_t merges : {std::size_t{145}, std::size_t{100}, std::size_t{40}}) {
        INFO(merges << " merges");
        const BpeModel bpe = learn_bpe(genesis, {merges, 1});
        REQUIRE(bpe.merges.size() == merges);
        const std::vector<std::string> expected = sentencepiece_vocabulary(bpe);
        REQUIRE(expected.size() == 3 + merges + 34);
        options.vocab_size = expected.size();
        const Tokenizer t(train_sentencepiece(genesis, options));
        CHECK(vocabulary(t) == expected);
        // the scores as the .vocab file lists them: 0 for <unk> <s> </s>, then -0, -1, -2 ... in order
        for (int id = 0; id < t.size(); ++id) {
            INFO(t.piece(id));
            CHECK(t.score(id) == (id < 3 ? 0.0f : -static_cast<float>(id - 3)));
        }
        // and a verse it has not seen segments as bpe.hpp's merges segment it
        const std::string verse = "And God made the firmament, and divided the waters which were under the firmament";
        CHECK(t.pieces(verse) == encode(bpe, verse));
    }
    // At SentencePiece's defaults a piece never joins a letter to punctuation (a Latin character to a
    // Common one), where bpe.hpp's 100 merges make "▁earth." and others, so the vocabulary is another
    const auto mixed = [](const std::string& p) {
        const bool letter =
            std::any_of(p.begin(), p.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
        return letter && p.find_first_of(".,;:") != std::string::npos;
    };
    const std::vector<std::string> bpe100 = sentencepiece_vocabulary(learn_bpe(genesis, {100, 1}));
    REQUIRE(std::count_if(bpe100.begin(), bpe100.end(), mixed) > 0);
    const std::vector<std::string> pieces = vocabulary(Tokenizer(train_sentencepiece(genesis, {bpe100.size()})));
    REQUIRE(pieces.size() == bpe100.size());
    CHECK(pieces != bpe100);
    CHECK(std::count_if(pieces.begin(), pieces.end(), mixed) == 0);
}

TEST_CASE("decode(encode(verse)) is the verse, in English and Spanish", "[sentencepiece]") {
    if (!sentencepiece_or_skip()) return;
    std::vector<std::string> en = joined({genesis, genesis_more_en}), es = genesis_es;
    std::string why;
    const std::vector<std::string> en_read = first_verses(english_module(), true, 80, why);
    const std::vector<std::string> es_read = first_verses(spanish_module(), false, 80, why);
    if (en_read.empty() || es_read.empty()) {
        WARN("the inline verses only, not Genesis 1 to 3 from the modules: " << why << "; " << install_command());
    } else {
        // the modules' first verses are those written above
        CHECK(en_read[0] == genesis[0]);
        CHECK(es_read[4] == genesis_es[4]);
        en.insert(en.end(), en_read.begin(), en_read.end());
        es.insert(es.end(), es_read.begin(), es_read.end());
    }
    // the Spanish characters are there to be tested
    for (const char* c : {"ñ", "¿", "¡", "á", "é", "í", "ó"}) {
        INFO(c);
        CHECK(std::any_of(es.begin(), es.end(), [&](const std::string& s) { return s.find(c) != std::string::npos; }));
    }
    const std::vector<std::string> text = joined({en, es});
    const Tokenizer t(train_sentencepiece(text, {400}));
    REQUIRE(t.size() == 400);
    std::size_t characters = 0, ids = 0;
    for (const std::string& verse : text) {
        INFO(verse);
        const std::vector<int> encoded = t.encode(verse);
        CHECK(t.decode(encoded) == verse);
        for (const int id : encoded) CHECK((id >= 3 && id < t.size()));  // no <unk>, <s> or </s>
        std::string joined_pieces;
        for (const std::string& p : t.pieces(verse)) joined_pieces += p;
        std::string spelled;  // each word with "▁" in front
        for (const char c : " " + verse) spelled += c == ' ' ? std::string("\xe2\x96\x81") : std::string(1, c);
        CHECK(joined_pieces == spelled);
        characters += utf8_characters(verse).size();
        ids += encoded.size();
    }
    // the merges are used: fewer pieces than characters, by far
    CHECK(ids * 2 < characters);
    // runs of spaces become one, and the ends are trimmed
    CHECK(t.decode(t.encode("  Y dijo   Dios: ")) == "Y dijo Dios:");
    CHECK(t.encode("").empty());
}

TEST_CASE("a character the training text lacked becomes <unk>, and unknown_characters names it", "[sentencepiece]") {
    if (!sentencepiece_or_skip()) return;
    const Tokenizer t(train_sentencepiece(genesis, {100}));
    CHECK(t.unknown_id() == 0);
    CHECK(t.begin_id() == 1);
    CHECK(t.end_id() == 2);
    CHECK(t.piece(0) == "<unk>");
    CHECK(t.piece(1) == "<s>");
    CHECK(t.piece(2) == "</s>");

    const std::string known = "And God saw the light";
    CHECK(t.unknown_characters(known).empty());
    const std::vector<int> known_ids = t.encode(known);
    CHECK(std::count(known_ids.begin(), known_ids.end(), t.unknown_id()) == 0);
    // ß and Ω are not in Genesis 1:1-5, nor is "x"; é is not either. A run of them is one <unk>.
    const std::string text = "And God \xc3\x9f\xc3\x9f saw x the \xce\xa9 light \xc3\xa9";
    const std::vector<int> ids = t.encode(text);
    CHECK(std::count(ids.begin(), ids.end(), t.unknown_id()) == 4);
    CHECK(t.unknown_characters(text) == std::vector<std::string>{"\xc3\x9f", "x", "\xce\xa9", "\xc3\xa9"});
    // decoding cannot give them back: SentencePiece writes <unk> as " ⁇ ", after the word's own space
    CHECK(t.decode(ids) == "And God  \xe2\x81\x87  saw  \xe2\x81\x87  the  \xe2\x81\x87  light  \xe2\x81\x87 ");
    CHECK(t.decode({t.begin_id(), t.end_id()}).empty());

    CHECK_THROWS_WITH(t.decode({5, t.size()}), "Tokenizer::decode: ids[1] = 100 is out of range: the vocabulary has "
                                               "ids 0 to 99");
    CHECK_THROWS_WITH(t.decode({-1}), Catch::Contains("ids[0] = -1 is out of range"));
    CHECK_THROWS_WITH(t.piece(100), Catch::Contains("id 100 is out of range"));
    CHECK_THROWS_WITH(t.score(-1), Catch::Contains("id -1 is out of range"));
}

TEST_CASE("a soft limit gives the vocabulary the text can fill, where a hard one fails", "[sentencepiece]") {
    if (!sentencepiece_or_skip()) return;
    const std::size_t alphabet = count_characters(count_words(genesis)).size();
    SentencePieceOptions options;
    // 5000 pieces: more than Genesis 1:1-5 can fill; a hard limit fails saying so, a soft one gives fewer
    options.vocab_size = 5000;
    CHECK_THROWS_WITH(train_sentencepiece(genesis, options), Catch::Contains("could not learn 5000 pieces"));
    options.hard_vocab_limit = false;
    const Tokenizer soft(train_sentencepiece(genesis, options));
    CHECK(soft.size() > static_cast<int>(alphabet) + 3);
    CHECK(soft.size() < 5000);
    for (const std::string& verse : genesis) CHECK(soft.decode(soft.encode(verse)) == verse);
}

TEST_CASE("bad sentences, options and model bytes are refused, saying why", "[sentencepiece]") {
    if (!sentencepiece_or_skip()) return;
    const auto train = [](const std::vector<std::string>& s, std::size_t vocab) {
        return train_sentencepiece(s, {vocab});
    };
    CHECK_THROWS_WITH(train({}, 100), "train_sentencepiece: no sentences to train on");
    CHECK_THROWS_WITH(train({" ", ""}, 100), "train_sentencepiece: no word in the 2 sentences");
    // 34 characters and <unk> <s> </s>: 37 at least
    CHECK_THROWS_WITH(train(genesis, 36), Catch::Contains("vocab_size 36 is too small") &&
                                              Catch::Contains("34 characters") && Catch::Contains("make 37"));
    CHECK(Tokenizer(train(genesis, 37)).size() == 37);
    // more than the text can fill: SentencePiece's own message, which names the largest
    CHECK_THROWS_WITH(train(genesis, 5000), Catch::Contains("could not learn 5000 pieces") &&
                                                Catch::Contains("Vocabulary size too high"));

    const std::string a = "In the beginning";
    CHECK_THROWS_WITH(train({a, std::string("ab\0c", 4)}, 100),
                      Catch::StartsWith("train_sentencepiece: sentences[1]: a NUL byte (U+0000) at byte 2"));
    CHECK_THROWS_WITH(train({a, a, "bad \xff byte"}, 100),
                      "train_sentencepiece: sentences[2]: invalid UTF-8 at byte 4 (0xFF)");
    CHECK_THROWS_WITH(train({"cri\xc3"}, 100), "train_sentencepiece: sentences[0]: invalid UTF-8 at byte 3 (0xC3)");
    CHECK_THROWS_WITH(train({"a\tb"}, 100),
                      Catch::StartsWith("train_sentencepiece: sentences[0]: the control character U+0009 at byte 1"));
    CHECK_THROWS_WITH(train({"a\nb"}, 100), Catch::Contains("U+000A at byte 1"));
    CHECK_THROWS_WITH(train({"the \xe2\x96\x81word"}, 100),
                      Catch::StartsWith("train_sentencepiece: sentences[0]: the meta symbol \xe2\x96\x81 (U+2581) at "
                                        "byte 4"));
    CHECK_THROWS_WITH(train({a, "ab\xe2\x96\x85"}, 100),
                      Catch::StartsWith("train_sentencepiece: sentences[1]: the character \xe2\x96\x85 (U+2585) at "
                                        "byte 2"));
    CHECK_THROWS_WITH(train({"x </s> y"}, 100),
                      Catch::StartsWith("train_sentencepiece: sentences[0]: the name of the special piece </s> at "
                                        "byte 2"));

    // the longest sentence: at max_sentence_bytes it is trained on (its characters are pieces: "x" has
    // none of them), a byte more and it is refused
    SentencePieceOptions options{3 + 13};  // I n t h e b g i G o d x and ▁
    options.max_sentence_bytes = 20;
    const std::string twenty = "In the beginning God";
    REQUIRE(twenty.size() == 20);
    const Tokenizer fits(train_sentencepiece({twenty, "x"}, options));
    CHECK(fits.unknown_characters(twenty).empty());
    CHECK_THROWS_WITH(train_sentencepiece({"x", "y", twenty + "."}, options),
                      "train_sentencepiece: sentences[2]: 21 bytes long, above max_sentence_bytes (20): SentencePiece "
                      "would leave it out of training; raise max_sentence_bytes");
    options.max_sentence_bytes = 9;
    CHECK_THROWS_WITH(train_sentencepiece(genesis, options), Catch::Contains("max_sentence_bytes 9 is out of range"));

    // model bytes
    CHECK_THROWS_WITH(Tokenizer("not a model"),
                      Catch::StartsWith("Tokenizer: the 11 bytes given are not a SentencePiece model"));
    CHECK_THROWS_WITH(Tokenizer(""), Catch::StartsWith("Tokenizer: the 0 bytes given are not a SentencePiece model"));
    const std::string model = train(genesis, 60);
    CHECK_THROWS_WITH(Tokenizer(model.substr(0, model.size() / 2)), Catch::Contains("not a SentencePiece model"));

    // text to encode
    const Tokenizer t(model);
    CHECK_THROWS_WITH(t.encode("bad \xff"), "Tokenizer::encode: invalid UTF-8 at byte 4 (0xFF)");
    CHECK_THROWS_WITH(t.pieces("a\tb"), Catch::StartsWith("Tokenizer::pieces: the control character U+0009"));
    CHECK_THROWS_WITH(t.unknown_characters("<s>"), Catch::Contains("special piece <s> at byte 0"));
}

}  // namespace test_sentencepiece
