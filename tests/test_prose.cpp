// Tests for core/prose: text with maths in it as HTML (formulas typeset, C++ names as code,
// cross-references as links, everything else escaped text), explanations cut into paragraphs,
// and the ids of steps. tests/book_check.py counts what is left of ASCII maths in the whole book.
#include "attn_config.hpp"
#include "core/golden.hpp"
#include "core/html.hpp"
#include "core/prose.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace test_prose {

using namespace attn;
using test::valid_utf8;
using test::xml_problem;
namespace fs = std::filesystem;

namespace {

bool has(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

using test::text_of;

std::string digits_of(const std::string& text) {
    std::string out;
    for (const char c : text)
        if (c >= '0' && c <= '9') out += c;
    return out;
}

ProseLinks two_lessons() {
    ProseLinks links;
    links.lessons.push_back({4, "04-self-attention.html", {"causal", "masked"}, step_anchors({"causal", "masked"})});
    links.lessons.push_back({9, "09-learning-to-align.html", {"length", "causal"}, step_anchors({"length", "causal"})});
    links.current = 9;
    return links;
}

}  // namespace

TEST_CASE("prose_html typesets the maths among words and leaves the words as text", "[prose]") {
    const std::string h = prose_html("the state h_{t-1} divided by sqrt(d_k).");
    CHECK(h.rfind("the state <math>", 0) == 0);
    CHECK(has(h, "<msub><mi>h</mi><mrow><mi>t</mi><mo>−</mo><mn>1</mn></mrow></msub>"));
    CHECK(has(h, " divided by <math><mrow><msqrt><mrow><msub><mi>d</mi><mrow><mi>k</mi></mrow></msub></mrow></msqrt></mrow></math>."));
    CHECK(test::occurrences(h, "<math>") == 2);

    // h_{t-1} is not h_t - 1: the minus sits in the subscript of one and on the line of the other
    const std::string minus = prose_html("then h_t - 1 is");
    CHECK(has(minus, "<msub><mi>h</mi><mrow><mi>t</mi></mrow></msub><mo>−</mo><mn>1</mn>"));
    CHECK(!has(minus, "<mo>−</mo><mn>1</mn></mrow></msub>"));

    // two scripts on one name, a Greek letter by name, a formula with numbers
    CHECK(has(prose_html("the weights W_1^Q of head 1"),
              "<msubsup><mi>W</mi><mrow><mn>1</mn></mrow><mrow><mi>Q</mi></mrow></msubsup>"));
    CHECK(has(prose_html("the weights alpha sum to 1"), "<math><mrow><mi>α</mi></mrow></math> sum to 1"));
    const std::string lengths = prose_html("for T = 64, 128, ..., 4096 tokens");
    CHECK(has(lengths, "for <math>"));
    CHECK(has(lengths, "<mn>4096</mn></mrow></math> tokens"));
    CHECK(has(prose_html("the cost O(T^2 d)."), "<msup><mi>T</mi><mrow><mn>2</mn></mrow></msup><mi>d</mi>"));

    // an accent written as a combining mark: h̄_s is h̄ with s below
    CHECK(has(prose_html("the state h\u0304_s here"), "<msub><mi>h\u0304</mi><mrow><mi>s</mi></mrow></msub>"));

    // W_in is W with "in" below, not W with "∈"
    const std::string in = prose_html("the weights W_in of the input");
    CHECK(has(in, "<msub><mi>W</mi><mrow><mi>i</mi><mi>n</mi></mrow></msub>"));
    CHECK(!has(in, "∈"));

    // a prime at full size on its base, not a tiny superscript
    const std::string prime = prose_html("the word w'_i differs");
    CHECK(has(prime, "<msub><mrow><mi>w</mi><mo lspace=\"0\" rspace=\"0\">′</mo></mrow><mrow><mi>i</mi></mrow></msub>"));
    CHECK(!has(prime, "<msup>"));
}

TEST_CASE("prose_html keeps words out of formulas where a formula would say something else", "[prose]") {
    // an article before a formula stays a word: "a x_t" is not a times x_t
    CHECK(prose_html("gives a x_t here").rfind("gives a <math>", 0) == 0);
    // e.g. is an abbreviation, not e times g
    const std::string eg = prose_html("grows as T^2, e.g. at T = 4");
    CHECK(has(eg, ", e.g. at <math>"));
    CHECK(!has(eg, "<mi>g</mi>"));
    // a remark in brackets after a space is not a factor: b_z = 2 (sigmoid(2) = 0.88)
    const std::string remark = prose_html("bias b_z = 2 (sigmoid(2) = 0.88) makes it");
    CHECK(test::occurrences(remark, "<math>") == 2);
    CHECK(has(remark, "<mo>=</mo><mn>2</mn></mrow></math> <math>"));
    // a sentence's full stop ends a formula: h_0. T = 5 is two
    const std::string stop = prose_html("ends at h_0. T = 5 here");
    CHECK(test::occurrences(stop, "<math>") == 2);
    CHECK(has(stop, "</math>. <math>"));
    // "=" alone is no formula
    CHECK(!has(prose_html("the words = the tokens"), "<math>"));
    // 24-31 is a range, not 24 minus 31
    const std::string range = prose_html("from T_x 24-31 on");
    CHECK(has(range, "</math> 24-31 on"));
    CHECK(!has(range, "<mn>24</mn>"));
    // a lone x after "|" is a variable: p(y_i | x) is one formula
    CHECK(prose_html("the p(y_i | x) here").rfind("the <math>", 0) == 0);
    CHECK(prose_html("of log p(y_i | y_<i, x).").rfind("of <math><mrow><mi>log</mi>", 0) == 0);
    // a hat before a semicolon is still an accent
    CHECK(has(prose_html("orthogonal to x^; with"), "<mover accent=\"true\"><mi>x</mi><mo>^</mo></mover></mrow></math>; with"));
}

TEST_CASE("prose_html shows C++ names, settings and what it cannot translate as code", "[prose]") {
    const std::string h =
        prose_html("nn::gru_forward reads corpus.train_* (max_words, --set lr=0.1, split_by_number), see nn/seq2seq.cpp.");
    for (const std::string code :
         {"nn::gru_forward", "corpus.train_*", "max_words", "--set lr=0.1", "split_by_number", "nn/seq2seq.cpp"}) {
        INFO(code);
        CHECK(has(h, "<code>" + code + "</code>"));
    }
    CHECK(!has(h, "<math>"));
    // maths the translator refuses (a second subscript) is code as written, never a formula
    const std::string twice = prose_html("the tensor H_6_rev here");
    CHECK(has(twice, "<code>H_6_rev</code>"));
    CHECK(!has(twice, "<math>"));
    // a bracket the translator refuses is code up to its close; an arrow between words is its sign
    CHECK(has(prose_html("within 4 sqrt(3.5 / pairs) of it"), "within 4 <code>sqrt(3.5 / pairs)</code> of it"));
    const std::string arrow = prose_html("\"the man\" -> \"l'homme\"");
    CHECK(has(arrow, "&quot; → &quot;"));
    CHECK(!has(arrow, "-&gt;"));
    // a short subscript on an operator is maths, a long one a C++ name
    CHECK(has(prose_html("max_k of it"), "<math>"));
    CHECK(has(prose_html("sum_pairs of it"), "<code>sum_pairs</code>"));
}

TEST_CASE("prose_html escapes whatever a trace holds and keeps the page valid", "[prose]") {
    for (const std::string& text :
         {std::string("<script>alert(1)</script> x_t & y_{t"), std::string("a_i < b_j > c \"q\" 'r' &amp;"),
          std::string("bad \xff\xfe bytes x_\xff and \xc0\x80 h_{t-1}"), std::string("(((((x_t"), std::string("x_t)))]]}"),
          std::string("sqrt(sqrt(sqrt("), std::string("||||<=>=!=->"), std::string("_ ^ _^ ^_ x_ x^"),
          std::string("lesson 4's step [causal</a><script>] [causal]"), std::string("\x01 control \xef\xb7\x90 noncharacter"),
          std::string(5000, '(') + "x_t"}) {
        for (const bool with_links : {false, true}) {
            const ProseLinks links = two_lessons();
            const std::string h = prose_html(text, with_links ? &links : nullptr);
            INFO(text.substr(0, 80));
            CHECK(valid_utf8(h));
            CHECK(xml_problem("<p>" + h + "</p>") == "");
            CHECK(!has(h, "<script"));
        }
    }
    const std::string h = prose_html("<script>alert(1)</script> x_t & y_{t");
    CHECK(has(h, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    CHECK(has(h, "&amp;"));
    // the unbalanced y_{t is not a formula (the translator refuses it): code, as written
    CHECK(has(h, "<code>y_{t</code>"));
    // invalid bytes come out as U+FFFD
    CHECK(has(prose_html("bad \xff bytes"), "bad \xef\xbf\xbd bytes"));
}

TEST_CASE("prose_html links mentions of the book's lessons and steps, and only those", "[prose]") {
    const ProseLinks links = two_lessons();
    const std::string h = prose_html("As in lesson 4's step [causal], step [length] and lesson 12, and lessons 4 and 9.", &links);
    CHECK(has(h, "<a href=\"04-self-attention.html\">lesson 4</a>&apos;s"));
    // the step of the lesson the sentence named
    CHECK(has(h, "<a href=\"04-self-attention.html#s-causal\">step [causal]</a>"));
    // a step lesson 4 does not have: the page's own lesson's, linked within the page
    CHECK(has(h, "<a href=\"#s-length\">step [length]</a>"));
    // lesson 12 is not in this book: text
    CHECK(has(h, " and lesson 12, and "));
    CHECK(has(h, "lessons <a href=\"04-self-attention.html\">4</a> and <a href=\"09-learning-to-align.html\">9</a>."));
    CHECK(test::occurrences(h, "<a href") == 5);
    // a step id of no lesson, or without the links: no link
    CHECK(!has(prose_html("step [nowhere]", &links), "<a "));
    CHECK(!has(prose_html("As in lesson 4's step [causal]"), "<a "));
    // [causal] in a sentence naming no lesson: the page's lesson (9) has it
    CHECK(has(prose_html("See [causal].", &links), "<a href=\"#s-causal\">[causal]</a>"));
    // on another page (the exercises'), lesson 9's steps are still meant first, but the link names its page
    ProseLinks elsewhere = two_lessons();
    elsewhere.on_its_page = false;
    CHECK(has(prose_html("See [causal].", &elsewhere), "<a href=\"09-learning-to-align.html#s-causal\">[causal]</a>"));
}

TEST_CASE("prose_paragraphs cuts between sentences, never inside brackets or after an abbreviation", "[prose]") {
    const auto p = prose_paragraphs("One. Two e.g. Three stays. Four (a. B) stays. Five is 3.5 long, cf. Fig. 2. Six et al. Seven.");
    REQUIRE(p.size() == 2);
    CHECK(p[0] == "One. Two e.g. Three stays. Four (a. B) stays.");
    CHECK(p[1] == "Five is 3.5 long, cf. Fig. 2. Six et al. Seven.");
    // line breaks always cut; a short last sentence joins the paragraph before it
    const auto lines = prose_paragraphs("First line.\nSecond line. Third.");
    REQUIRE(lines.size() == 2);
    CHECK(lines[1] == "Second line. Third.");
    // a paragraph closes once it holds 50 words
    std::string long_sentence;
    for (int i = 0; i < 55; ++i) long_sentence += "word ";
    long_sentence += "end.";
    const std::string after = "Then a second sentence that is long enough to stand as a paragraph of its own here, "
                              "with more than twenty words in it.";
    const auto by_words = prose_paragraphs(long_sentence + " " + after);
    REQUIRE(by_words.size() == 2);
    CHECK(by_words[1] == after);
    CHECK(prose_paragraphs("").empty());
    CHECK(prose_paragraphs("no full stop") == std::vector<std::string>{"no full stop"});
}

TEST_CASE("step_anchors are valid, unique HTML ids", "[prose]") {
    CHECK(step_anchors({"a b", "a_b", "x", "x", "<\"é>"}) ==
          std::vector<std::string>{"s-a_b", "s-a_b-2", "s-x", "s-x-2", "s-____"});
}

TEST_CASE("a lesson page links what the book holds, typesets titles and claims, and cuts explanations", "[prose]") {
    Trace a("a", Config{}), b("b", Config{});
    a.step("one", "Why sqrt(d) divides", "x_1 = 1",
           "First sentence here. Second one. Third one. Fourth sees lesson 2's step [only] and lesson 7, which this "
           "book does not hold, so that mention stays as plain text for the reader.");
    a.check("h_t of lesson 2 holds", 0, 1e-12);
    b.step("only", "Only step", "", "Back to step [one] of lesson 1.");
    std::vector<BookLesson> lessons(2);
    lessons[0].number = 1, lessons[0].slug = "first", lessons[0].title = "First", lessons[0].trace = &a;
    lessons[1].number = 2, lessons[1].slug = "second", lessons[1].title = "Second", lessons[1].trace = &b;
    const BookInfo info;
    const std::string first = lesson_page(lessons, 0, info), second = lesson_page(lessons, 1, info);
    CHECK(xml_problem(first, true) == "");
    CHECK(has(first, "<div class=\"explanation\">\n<p>First sentence here. Second one. Third one.</p>\n<p>Fourth sees "));
    CHECK(has(first, "<a href=\"02-second.html\">lesson 2</a>&apos;s <a href=\"02-second.html#s-only\">step [only]</a> and "
                     "lesson 7, which"));
    // the step's section keeps its number's id; its heading has the step's
    CHECK(has(first, "<section class=\"step\" id=\"step-1\">\n<h2 id=\"s-one\">"));
    CHECK(has(first, "<a href=\"#step-1\">Why <math><mrow><msqrt>"));  // the table of contents: no link in a link
    CHECK(has(first, "<span class=\"mark\">✓</span> <math><mrow><msub><mi>h</mi>"));
    CHECK(has(first, "of <a href=\"02-second.html\">lesson 2</a> holds"));
    CHECK(has(second, "Back to <a href=\"01-first.html#s-one\">step [one]</a> of <a href=\"01-first.html\">lesson 1</a>."));
    CHECK(has(second, "<h2 id=\"s-only\">"));
    // a book of lesson 1 alone: lesson 2 and its step stay text
    const std::vector<BookLesson> alone{lessons[0]};
    const std::string only = lesson_page(alone, 0, info);
    CHECK(!has(only, "02-second.html"));
    CHECK(has(only, "Fourth sees lesson 2&apos;s step [only] and lesson 7"));
}

TEST_CASE("every text of every lesson keeps its digits in order and stays valid as prose", "[prose]") {
    std::size_t texts = 0, formulas = 0, code = 0;
    for (const auto& entry : fs::directory_iterator(ATTN_GOLDEN_DIR)) {
        if (entry.path().extension() != ".json") continue;
        const Trace trace = read_golden(entry.path());
        std::vector<std::string> all;
        for (const auto& s : trace.steps()) {
            all.push_back(s.title);
            for (const auto& p : prose_paragraphs(s.explanation)) all.push_back(p);
            for (const auto& c : s.checks) all.push_back(c.claim);
        }
        for (const auto& text : all) {
            INFO(entry.path().filename().string() << ": " << text);
            ProseCounts n;
            const std::string h = prose_html(text, nullptr, &n);
            CHECK(xml_problem("<p>" + h + "</p>") == "");
            // no number lost, added or moved by a formula
            CHECK(digits_of(text_of(h)) == digits_of(text));
            ++texts;
            formulas += n.formulas;
            code += n.code;
        }
    }
    WARN(texts << " texts: " << formulas << " formulas, " << code << " runs of code");
    CHECK(formulas > 500);
}

}  // namespace test_prose
