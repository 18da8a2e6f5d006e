// Lesson 14's real text (src/text/bible.hpp): mod2imp's output parsed, the OSIS markup of the
// English and Spanish modules cleaned to the words a reader sees, and the verses aligned by
// reference. The markup below is copied from the modules Debian 12 installs (Strong's attributes
// shortened where they do not matter); what each entry must clean to was written by hand from the
// printed verse. The last cases read the installed modules themselves, and are skipped, saying so,
// where the packages are not installed.
#include "text/bible.hpp"
#include "text/corpus.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_bible {

using namespace attn::text;

TEST_CASE("clean_osis keeps the words of a verse and drops Strong's numbers, notes and pilcrows", "[bible]") {
    // KJV Genesis 1:4: Strong's numbers are attributes, the italics a <transChange>, a footnote at the end
    CHECK(clean_osis("And <w lemma=\"strong:H0430\">God</w> <w lemma=\"strong:H7200\">saw</w> the "
                     "<w lemma=\"strong:H0216\">light</w>, <w lemma=\"strong:H3588\">that</w> "
                     "<transChange type=\"added\">it was</transChange> <w lemma=\"strong:H2896\">good</w>: and "
                     "<w lemma=\"strong:H0430\">God</w> <w lemma=\"strong:H0914\">divided</w> the "
                     "<w lemma=\"strong:H0216\">light</w> <w lemma=\"strong:H0996\">from</w> the "
                     "<w lemma=\"strong:H2822\">darkness</w>.<note placement=\"foot\"><reference "
                     "type=\"annotateRef\">1.4 </reference>the light from…: Heb. between the light and between the "
                     "darkness</note>",
                     false) == "And God saw the light, that it was good: and God divided the light from the darkness.");
    // KJV John 3:16: a milestone, the words of Jesus in <q>, a pilcrow
    CHECK(clean_osis("<milestone type=\"x-p\" marker=\"\xc2\xb6\"/><q marker=\"\" who=\"Jesus\">\xc2\xb6 "
                     "<w lemma=\"strong:G1063\">For</w> <w lemma=\"strong:G2316\">God</w> <w>so</w> "
                     "<w>loved</w> the <w>world</w>,</q>",
                     false) == "For God so loved the world,");
    // a footnote between two words with no space around it (as the WEB has them) still parts them
    CHECK(clean_osis("<w lemma=\"strong:H0430\">God</w><note placement=\"foot\">The Hebrew word rendered "
                     "“God” is “אֱלֹהִ֑ים” (Elohim).</note><w lemma=\"strong:H1254\">created</w>",
                     false) == "God created");
    // the Spanish module: capitals of the chapter's first word as stored, accents kept
    CHECK(clean_osis("<w lemma=\"strong:H7225\">EN el principio</w> <w lemma=\"strong:H1254\">crió</w> "
                     "<w lemma=\"strong:H0430\">Dios</w> los cielos y la tierra.",
                     false) == "EN el principio crió Dios los cielos y la tierra.");
}

TEST_CASE("clean_osis: titles only when canonical and asked for, poetry and divine names as words", "[bible]") {
    // KJV Psalm 3:1 begins with the psalm's superscription, a canonical title; its lines are <l> elements
    const std::string psalm =
        "<title canonical=\"true\" type=\"psalm\">A <w>Psalm</w> of <w>David</w>, when he fled from "
        "<w>Absalom</w> his <w>son</w>.</title> <lg/><l level=\"1\"/><divineName><w>LORD</w></divineName>, how "
        "are they <w>increased</w><l level=\"1\" eID=\"x\"/><l level=\"1\"/>that <w>trouble</w> me!";
    CHECK(clean_osis(psalm, true) ==
          "A Psalm of David, when he fled from Absalom his son. LORD, how are they increased that trouble me!");
    CHECK(clean_osis(psalm, false) == "LORD, how are they increased that trouble me!");
    // a heading the editors added is never kept
    CHECK(clean_osis("<title type=\"x-heading\">The Creation</title>In the beginning", true) == "In the beginning");
    // the speakers of the Song of Songs are labels, not words of the verse
    CHECK(clean_osis("<speaker who=\"Beloved\">Beloved</speaker> Let him kiss me", false) == "Let him kiss me");
}

TEST_CASE("clean_osis: the end of the book ends the verse; entities, USFM markers and spaces", "[bible]") {
    // the WEB appends its glossary to Revelation 22:21, after the book's closing div
    CHECK(clean_osis("The grace of the Lord Jesus Christ be with all the saints. Amen. <div type=\"book\" "
                     "eID=\"gen1\"/><div type=\"glossary\">Abaddon: Destroyer.</div>",
                     false) == "The grace of the Lord Jesus Christ be with all the saints. Amen.");
    // a book's opening div (sID) is not its end
    CHECK(clean_osis("<div type=\"book\" sID=\"gen2\" osisID=\"Gen\"/>In the beginning", false) == "In the beginning");
    CHECK(clean_osis("Moses &amp; Aaron said &quot;go&quot; &lt;here&gt; and &apos;there&apos;", false) ==
          "Moses & Aaron said \"go\" <here> and 'there'");
    CHECK(clean_osis("the \\ndLORD\\nd* thy God and \\+ndLord\\+nd*", false) == "the LORD thy God and Lord");
    CHECK(clean_osis("  two\t\tspaces \n and  a line  ", false) == "two spaces and a line");
    CHECK(clean_osis("", false).empty());
    CHECK(clean_osis("<note>only a note</note>", false).empty());
}

TEST_CASE("clean_osis refuses markup that does not close, naming it", "[bible]") {
    CHECK_THROWS_WITH(clean_osis("a <w lemma=\"x\"", false), Catch::Contains("a tag left open at byte 2"));
    CHECK_THROWS_WITH(clean_osis("a <note>never closed", false), Catch::Contains("a <note> is not closed"));
    // a note inside a note is skipped whole
    CHECK(clean_osis("a<note>b<note>c</note>d</note>e", false) == "a e");
}

TEST_CASE("parse_imp reads mod2imp's keys and entries, leaving out headings and introductions", "[bible]") {
    const std::string imp = "$$$[ Module Heading ]\n\n$$$[ Testament 1 Heading ]\n<milestone/>\n"
                            "$$$Genesis 0:0\n<div type=\"book\"/>\n$$$Genesis 1:0\n<chapter/>\n"
                            "$$$Genesis 1:1\nIn the beginning\n$$$I Samuel 3:10\nSpeak; for\nthy servant heareth\n"
                            "$$$Song of Solomon 1:1\n\n$$$Revelation of John 22:21\r\nAmen.\r\n";
    const std::vector<Verse> v = parse_imp(imp, "test");
    REQUIRE(v.size() == 4);
    CHECK(v[0].ref == "Genesis 1:1");
    CHECK(v[0].text == "In the beginning");
    CHECK(v[1].ref == "I Samuel 3:10");
    CHECK(v[1].text == "Speak; for thy servant heareth");  // an entry's lines joined by a space
    CHECK(v[2].ref == "Song of Solomon 1:1");
    CHECK(v[2].text.empty());  // an empty verse is kept, to be counted when aligning
    CHECK(v[3].ref == "Revelation of John 22:21");
    CHECK(v[3].text == "Amen.");
    CHECK(parse_imp("", "empty").empty());
}

TEST_CASE("parse_imp refuses what mod2imp never prints, naming the line", "[bible]") {
    CHECK_THROWS_WITH(parse_imp("stray text\n$$$Genesis 1:1\nx\n", "f"),
                      Catch::Contains("f, line 1: text before the first key"));
    CHECK_THROWS_WITH(parse_imp("$$$Genesis 1:1\nx\n$$$Genesis one:1\ny\n", "f"),
                      Catch::Contains("line 3") && Catch::Contains("is not a reference"));
    CHECK_THROWS_WITH(parse_imp("$$$Genesis1:1\nx\n", "f"), Catch::Contains("is not a reference"));
    CHECK_THROWS_WITH(parse_imp("$$$Genesis 1:99999\nx\n", "f"), Catch::Contains("is not a reference"));
    CHECK_THROWS_WITH(parse_imp("$$$Genesis 1:1\nx\n$$$Genesis 1:1\ny\n", "f"),
                      Catch::Contains("line 3: the verse Genesis 1:1 comes twice"));
}

TEST_CASE("align_by_reference pairs verses with words on both sides and counts the rest", "[bible]") {
    const std::vector<Verse> en = {{"Genesis 1:1", "In the beginning"}, {"Jonah 1:17", "Now the LORD"},
                                   {"III John 1:15", "Peace be to thee."}, {"John 3:16", "For God so loved"}};
    const std::vector<Verse> es = {{"Genesis 1:1", "EN el principio"}, {"Jonah 1:17", ""},
                                   {"John 3:16", "Porque de tal manera"}, {"Malachi 4:6", "El convertirá"}};
    AlignCounts counts;
    const std::vector<VersePair> pairs = align_by_reference(en, es, counts);
    REQUIRE(pairs.size() == 2);
    CHECK(pairs[0].ref == "Genesis 1:1");
    CHECK(pairs[0].es == "EN el principio");
    CHECK(pairs[1].ref == "John 3:16");
    CHECK(pairs[1].en == "For God so loved");
    CHECK(counts.english == 4);
    CHECK(counts.spanish == 4);
    CHECK(counts.only_english == 1);
    CHECK(counts.only_spanish == 1);
    CHECK(counts.empty == 1);
    CHECK(counts.kept == 2);
}

TEST_CASE("words_of counts words as lesson 14 does: letters and digits, accents kept, punctuation apart", "[bible]") {
    CHECK(words_of("In the beginning God created the heaven and the earth.") ==
          std::vector<std::string>{"in", "the", "beginning", "god", "created", "the", "heaven", "and", "the", "earth"});
    // Spanish: accented capitals stay as stored (only ASCII is lower-cased), ¿ ¡ « » part words and are none
    CHECK(words_of("\xc2\xbfQui\xc3\xa9n es \xc3\x89ste?\xc2\xa1Oh!\xc2\xabS\xc3\xad\xc2\xbb") ==
          std::vector<std::string>{"qui\xc3\xa9n", "es", "\xc3\x89ste", "oh", "s\xc3\xad"});
    // the multiplication sign is no letter; digits are
    CHECK(words_of("3\xc3\x97" "4 cubits, 12 tribes") == std::vector<std::string>{"3", "4", "cubits", "12", "tribes"});
    CHECK(word_count("") == 0);
    CHECK(word_count(" ,;: ") == 0);
    CHECK(word_count("And it came to pass") == 5);
    // invalid UTF-8: a stray continuation byte, a cut sequence, an overlong slash, a surrogate
    for (const char* bad : {"a \x80 b", "ni\xc3", "\xc0\xaf", "\xed\xa0\x80"}) {
        INFO(bad);
        CHECK_THROWS_WITH(words_of(bad), Catch::Contains("invalid UTF-8 at byte"));
    }
}

TEST_CASE("split_by_books sends whole books to each set and refuses a book no verse has", "[bible]") {
    const std::vector<VersePair> pairs = {{"Genesis 1:1", "a", "a"},  {"Ruth 1:1", "b", "b"},
                                          {"John 1:1", "c", "c"},     {"I John 1:1", "d", "d"},
                                          {"Ruth 4:22", "e", "e"},    {"Revelation of John 1:1", "f", "f"}};
    const CorpusSplit s = split_by_books(pairs, {{"Ruth"}, {"John"}});
    // "I John" and "Revelation of John" are other books than "John"
    REQUIRE(s.train.size() == 3);
    CHECK(s.train[0].ref == "Genesis 1:1");
    CHECK(s.train[1].ref == "I John 1:1");
    CHECK(s.train[2].ref == "Revelation of John 1:1");
    REQUIRE(s.validation.size() == 2);
    CHECK(s.validation[1].ref == "Ruth 4:22");
    REQUIRE(s.test.size() == 1);
    CHECK(s.test[0].ref == "John 1:1");
    CHECK(book_of("I Samuel 3:4") == "I Samuel");
    CHECK_THROWS_WITH(book_of("Genesis"), Catch::Contains("not a verse reference"));
    CHECK_THROWS_WITH(split_by_books(pairs, {{"Ruth"}, {"Jhon"}}), Catch::Contains("test book Jhon"));
    CHECK_THROWS_WITH(split_by_books(pairs, {{"Ruth"}, {"Ruth"}}), Catch::Contains("both a validation and a test"));
}

TEST_CASE("near_duplicates: at least half the word 4-grams shared, by Jaccard's index", "[bible]") {
    // the reference's 7 words have the 4-grams abcd bcde cdef defg
    const std::vector<VersePair> reference = {{"X 1:1", "a b c d e f g", ""}, {"X 1:2", "Amen.", ""}};
    const std::vector<VersePair> candidates = {
        {"Y 1:1", "A b c d e f, x", ""},  // abcd bcde cdef defx: 3 shared of 5 in all, 3/5: near
        {"Y 1:2", "a b c x e f g", ""},   // abcx bcxe cxef xefg: none shared
        {"Y 1:3", "AMEN", ""},            // short: compared whole, the same word: near
        {"Y 1:4", "Amen amen", ""},       // short, other words: not near
        {"Y 1:5", "b c d e f g", ""},     // bcde cdef defg: 3 shared of 4, 3/4: near
        {"Y 1:6", "a b c d e x y", ""}};  // abcd bcde cdex dexy: 2 shared of 6, 1/3: not near
    CHECK(near_duplicates(candidates, reference) == std::vector<std::size_t>{0, 2, 4});
    // exactly one half is near (wxyz against wxyz xyzq: 1 shared of 2), one third is not
    CHECK(near_duplicates({{"Z 1:1", "w x y z", ""}}, {{"Z 1:2", "w x y z q", ""}}) == std::vector<std::size_t>{0});
    CHECK(near_duplicates({{"Z 1:1", "w x y z", ""}}, {{"Z 1:2", "w x y z q r", ""}}).empty());
}

TEST_CASE("length_histogram counts verses per bin of words, the last bin open", "[bible]") {
    const std::vector<VersePair> pairs = {{"A 1:1", "one", "uno dos"},
                                          {"A 1:2", "one two three four five", "x"},
                                          {"A 1:3", "a b c d e f g h i j k l", "y"}};
    CHECK(length_histogram(pairs, true, 5, 3) == std::vector<std::size_t>{1, 1, 1});  // 1, 5, 12 words
    CHECK(length_histogram(pairs, false, 2, 2) == std::vector<std::size_t>{2, 1});    // 2 words: bin 1
    CHECK(length_histogram(pairs, true, 100, 1) == std::vector<std::size_t>{3});
    CHECK_THROWS(length_histogram(pairs, true, 0, 3));
}

namespace {
}  // namespace

// A Strong's number as the modules' markup writes one (H7225, G1063): H or G and four digits, a
// whole word (what the regular expression \b[HG][0-9]{4}\b matches).
namespace {
bool has_strongs_number(const std::string& text) {
    const auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
    for (std::size_t i = 0; i + 5 <= text.size(); ++i) {
        if ((text[i] != 'H' && text[i] != 'G') || (i > 0 && word(text[i - 1]))) continue;
        bool digits = true;
        for (std::size_t k = 1; k <= 4; ++k) digits = digits && std::isdigit(static_cast<unsigned char>(text[i + k])) != 0;
        if (digits && (i + 5 == text.size() || !word(text[i + 5]))) return true;
    }
    return false;
}
}  // namespace

TEST_CASE("has_strongs_number finds H and G numbers as whole words only", "[bible]") {
    CHECK(has_strongs_number("H7225"));
    CHECK(has_strongs_number("the G1063 word"));
    CHECK(has_strongs_number("end,H0001."));
    CHECK_FALSE(has_strongs_number("H722"));
    CHECK_FALSE(has_strongs_number("H72250"));
    CHECK_FALSE(has_strongs_number("AH7225"));
    CHECK_FALSE(has_strongs_number("K7225 h7225"));
}

TEST_CASE("the installed modules: every verse read, cleaned and aligned", "[bible]") {
    std::string why;
    if (!attn::test::bible_modules_installed(why)) {
        WARN("skipped: " << why << "; " << install_command());
        return;
    }
    const std::vector<Verse> en = read_module(english_module(), true);
    const std::vector<Verse> es = read_module(spanish_module(), false);
    REQUIRE(en.size() == 31102);
    REQUIRE(es.size() == 31102);
    CHECK(en.front().ref == "Genesis 1:1");
    CHECK(en.front().text == "In the beginning God created the heaven and the earth.");
    CHECK(es.front().text == "EN el principio crió Dios los cielos y la tierra.");
    CHECK(en.back().ref == "Revelation of John 22:21");
    CHECK(en.back().text == "The grace of our Lord Jesus Christ be with you all. Amen.");
    // no markup, no Strong's number, no pilcrow is left anywhere (the verses that break a rule are
    // collected and named, one check for all 62,204: an INFO and four checks per verse were most of the
    // test's time under the sanitizers)
    std::vector<std::string> unclean;
    for (const auto* side : {&en, &es})
        for (const Verse& v : *side)
            if (v.text.find_first_of("<>") != std::string::npos || has_strongs_number(v.text) ||
                v.text.find("\xc2\xb6") != std::string::npos || v.text.find("  ") != std::string::npos)
                unclean.push_back(v.ref + ": " + v.text);
    INFO(unclean.size() << " verses keep markup, a Strong's number, a pilcrow or two spaces, the first: "
                        << (unclean.empty() ? std::string("none") : unclean.front()));
    CHECK(unclean.empty());
    AlignCounts counts;
    const std::vector<VersePair> pairs = align_by_reference(en, es, counts);
    // the Spanish module leaves 18 chapter-final verses empty (their words are in a neighbour:
    // Jonah 1:17 is its Jonah 2:1), and no English verse is empty
    CHECK(counts.only_english == 0);
    CHECK(counts.only_spanish == 0);
    CHECK(counts.empty == 18);
    CHECK(pairs.size() == 31084);

    // the split by books: John to the test set, Ruth, Esther and Daniel to validation, whole
    const CorpusSplit split = split_by_books(pairs, book_split());
    CHECK(split.test.size() == 879);
    CHECK(split.validation.size() == 85 + 167 + 357);
    CHECK(split.train.size() + split.validation.size() + split.test.size() == pairs.size());
    CHECK(split.test.front().ref == "John 1:1");
    CHECK(split.test.back().ref == "John 21:25");
    // and the claim the split rests on, on the text read: no test or validation verse has a near-duplicate
    // in the training set (where a random split of verses would have hundreds: 679 verses of the Bible
    // have one in another book)
    CHECK(near_duplicates(split.test, split.train).empty());
    CHECK(near_duplicates(split.validation, split.train).empty());
    // the check can fail: 2 Kings against every other book (1 and 2 Chronicles, Isaiah 36-39 tell the same)
    const CorpusSplit kings = split_by_books(pairs, {{}, {"II Kings"}});
    CHECK(near_duplicates(kings.test, kings.train).size() > 50);
}

TEST_CASE("SWORD_PATH and the user's ~/.sword cannot put another module in the place of the one named", "[bible]") {
    std::string why;
    if (!attn::test::bible_modules_installed(why)) {
        WARN("skipped: " << why << "; " << install_command());
        return;
    }
    // a configuration named spaRV1909eb whose text is the King James Version's (its DataPath is relative:
    // a link to the installed modules beside it): a plain SWORD manager reading SWORD_PATH or ~/.sword
    // takes it for the Spanish module
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("attn_test_bible_" + std::to_string(::getpid()));
    const attn::test::RemovedAtEnd cleanup{dir};
    std::filesystem::create_directories(dir / "mods.d");
    std::filesystem::create_directories(dir / ".sword" / "mods.d");
    std::ifstream kjv("/usr/share/sword/mods.d/engKJV2006eb.conf");
    std::string conf((std::istreambuf_iterator<char>(kjv)), std::istreambuf_iterator<char>());
    const std::size_t section = conf.find("[engKJV2006eb]");
    REQUIRE(section != std::string::npos);
    conf.replace(section, std::string("[engKJV2006eb]").size(), "[spaRV1909eb]");
    for (const auto& root : {dir, dir / ".sword"}) {
        std::ofstream(root / "mods.d" / "spaRV1909eb.conf") << conf;
        std::filesystem::create_directory_symlink("/usr/share/sword/modules", root / "modules");
    }
    // (mod2imp itself, run with SWORD_PATH=dir, prints the King James Version's Genesis 1:1 as the
    // Spanish module's: checked by hand, 2026-11-29)
    const char* old_path = std::getenv("SWORD_PATH");
    const char* old_home = std::getenv("HOME");
    const std::string kept_path = old_path ? old_path : "", kept_home = old_home ? old_home : "";
    ::setenv("SWORD_PATH", dir.c_str(), 1);
    ::setenv("HOME", dir.c_str(), 1);
    std::vector<Verse> es;
    try {
        es = parse_imp(module_imp("spaRV1909eb", "sword-text-sparv"), "test");
    } catch (...) {
    }
    old_path ? ::setenv("SWORD_PATH", kept_path.c_str(), 1) : ::unsetenv("SWORD_PATH");
    old_home ? ::setenv("HOME", kept_home.c_str(), 1) : ::unsetenv("HOME");
    REQUIRE(es.size() == 31102);
    CHECK(clean_osis(es.front().text, false) == "EN el principio crió Dios los cielos y la tierra.");
}

TEST_CASE("a module that is not installed is named with its package and the install command", "[bible]") {
    if (::access("/usr/bin/mod2imp", X_OK) != 0) {
        CHECK_THROWS_WITH(module_imp("engKJV2006eb", "sword-text-kjv"),
                          Catch::Contains("libsword-utils") && Catch::Contains("apt-get install"));
        return;
    }
    CHECK_THROWS_WITH(module_imp("noSuchModule2026", "sword-text-none"),
                      Catch::Contains("noSuchModule2026 is not installed") && Catch::Contains("sword-text-none") &&
                          Catch::Contains("apt-get install"));
}

}  // namespace test_bible
