// Lesson 14's real text (src/text/bible.hpp): mod2imp's output parsed, the OSIS markup of the
// English and Spanish modules cleaned to the words a reader sees, and the verses aligned by
// reference. The markup below is copied from the modules Debian 12 installs (Strong's attributes
// shortened where they do not matter); what each entry must clean to was written by hand from the
// printed verse. The last cases read the installed modules themselves, and are skipped, saying so,
// where the packages are not installed.
#include "text/bible.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
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

namespace {
bool modules_installed(std::string& why) {
    if (::access("/usr/bin/mod2imp", X_OK) != 0) {
        why = "mod2imp (libsword-utils) is not installed";
        return false;
    }
    for (const char* conf : {"/usr/share/sword/mods.d/engKJV2006eb.conf", "/usr/share/sword/mods.d/spaRV1909eb.conf"})
        if (::access(conf, R_OK) != 0) {
            why = std::string(conf) + " is missing";
            return false;
        }
    return true;
}
}  // namespace

TEST_CASE("the installed modules: every verse read, cleaned and aligned", "[bible]") {
    std::string why;
    if (!modules_installed(why)) {
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
    // no markup, no Strong's number, no pilcrow is left anywhere
    const std::regex strongs("\\b[HG][0-9]{4}\\b");
    for (const auto* side : {&en, &es})
        for (const Verse& v : *side) {
            INFO(v.ref << ": " << v.text);
            CHECK(v.text.find_first_of("<>") == std::string::npos);
            CHECK_FALSE(std::regex_search(v.text, strongs));  // H7225, G1063: a Strong's number
            CHECK(v.text.find("\xc2\xb6") == std::string::npos);
            CHECK(v.text.find("  ") == std::string::npos);
        }
    AlignCounts counts;
    const std::vector<VersePair> pairs = align_by_reference(en, es, counts);
    // the Spanish module leaves 18 chapter-final verses empty (their words are in a neighbour:
    // Jonah 1:17 is its Jonah 2:1), and no English verse is empty
    CHECK(counts.only_english == 0);
    CHECK(counts.only_spanish == 0);
    CHECK(counts.empty == 18);
    CHECK(pairs.size() == 31084);
}

TEST_CASE("SWORD_PATH and the user's ~/.sword cannot put another module in the place of the one named", "[bible]") {
    std::string why;
    if (!modules_installed(why)) {
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
