// Tests for core/mathml and core/html: the equations' translation (exact on the notation, and on
// every equation every lesson writes: MathML or the plain text, never a formula that lost a
// number), the pages' escaping of whatever a trace holds, their links, their bytes, and the
// writing of the book. tests/book_check.py reads the pages of every lesson as a browser would.
#include "attn_config.hpp"
#include "core/golden.hpp"
#include "core/html.hpp"
#include "core/mathml.hpp"
#include "registry.hpp"
#include "run.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace test_html {

using namespace attn;
using test::valid_utf8;
using test::xml_problem;
namespace fs = std::filesystem;

namespace {

std::string math(const std::string& text) {
    const auto m = formula_mathml(text);
    INFO(text);
    REQUIRE(m.has_value());
    return *m;
}

bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

using test::occurrences;
using test::text_of;

std::string kept(const std::string& text, bool (*keep)(char)) {
    std::string out;
    for (const char c : text)
        if (keep(c)) out += c;
    return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_capital(char c) { return c >= 'A' && c <= 'Z'; }

// The names of the elements of a MathML fragment.
std::set<std::string> element_names(const std::string& markup) {
    std::set<std::string> names;
    for (std::size_t at = markup.find('<'); at != std::string::npos; at = markup.find('<', at + 1)) {
        if (markup[at + 1] == '/') continue;
        names.insert(markup.substr(at + 1, markup.find_first_of(" >/", at + 1) - at - 1));
    }
    return names;
}

fs::path temp_root() { return fs::temp_directory_path() / ("attn_test_html_" + std::to_string(::getpid())); }

Trace hostile_trace() {
    Trace trace("hostile", Config{7, {{"n", 2}}});
    trace.step("s<1>", "Title </h2><script>alert(1)</script>", "a_i = b & c < d  \"q\" 'r'",
               "Explanation with <b>tags</b>, & ampersands, \x01 a control, \xff\xfe bad bytes, \xc2\x85 C1, "
               "\xef\xb7\x90 a noncharacter and लाइट.");
    trace.tensor("A</code>", "x</span>", Array(xt::zeros<double>({2, 2})), {"<r1>", "r&2"}, {"\"c1\"", "c'2"},
                 View::heatmap);
    trace.tensor("p", "", Array(xt::ones<double>({2, 2})), {"<i>", "x"}, {"a", "b"}, View::plot);
    trace.tensor("b", "", Array(xt::ones<double>({2})), {"</svg>", "ok"}, {}, View::bars);
    trace.check("claim <img src=x onerror=alert(1)>", 0.5, 0.1);
    return trace;
}

}  // namespace

TEST_CASE("formula_mathml writes the lessons' notation as MathML", "[html]") {
    CHECK(math("x_j") == "<math><mrow><msub><mi>x</mi><mrow><mi>j</mi></mrow></msub></mrow></math>");
    const std::string alpha = math("alpha_ij = exp(e_ij) / sum_k exp(e_ik)");
    CHECK(contains(alpha, "<msub><mi>α</mi><mrow><mi>i</mi><mi>j</mi></mrow></msub>"));
    CHECK(contains(alpha, "<mo largeop=\"false\">∑</mo>"));
    CHECK(contains(alpha, "<mi>exp</mi>"));
    CHECK(contains(alpha, "<mo>/</mo>"));
    const std::string attention = math("O = softmax(Q K^T / sqrt(d_k)) V");
    CHECK(contains(attention, "<msup><mi>K</mi><mrow><mi>T</mi></mrow></msup>"));
    CHECK(contains(attention, "<msqrt><mrow><msub><mi>d</mi><mrow><mi>k</mi></mrow></msub></mrow></msqrt>"));
    // x between two operands is a product of dimensions; elsewhere a variable
    CHECK(occurrences(math("(n x d)(d x d_k) = n x d_k"), "<mo>×</mo>") == 3);
    CHECK(!contains(math("f(x) = F x"), "×"));
    CHECK(!contains(math("L(x + h)"), "×"));
    // accents, primes, stars, differentials
    CHECK(math("h~_t") ==
          "<math><mrow><msub><mover accent=\"true\"><mi>h</mi><mo>˜</mo></mover><mrow><mi>t</mi></mrow></msub></mrow></math>");
    CHECK(contains(math("dx^ = dy * g"), "<mover accent=\"true\"><mrow><mi>d</mi><mi>x</mi></mrow><mo>^</mo></mover>"));
    CHECK(contains(math("m_hat"), "<mover accent=\"true\"><mi>m</mi><mo>^</mo></mover>"));
    CHECK(contains(math("h→_j"), "<mover accent=\"true\"><mi>h</mi><mo>→</mo></mover>"));
    CHECK(contains(math("w'_i"), "<msub><mrow><mi>w</mi><mo lspace=\"0\" rspace=\"0\">′</mo></mrow><mrow><mi>i</mi></mrow></msub>"));
    CHECK(contains(math("C - C*"), "<msup><mi>C</mi><mrow><mo>∗</mo></mrow></msup>"));
    CHECK(contains(math("u_t*h_t"), "<mo>∗</mo><msub><mi>h</mi>"));
    CHECK(contains(math("dalpha"), "<mrow><mi>d</mi><mi>α</mi></mrow>"));
    // scripts on groups, signed and braced scripts, tokens, relations
    CHECK(contains(math("10000^(2i/d)"), "<msup><mn>10000</mn><mrow><mrow><mo stretchy=\"false\">(</mo><mn>2</mn><mi>i</mi>"));
    CHECK(contains(math("(K^n)^T"), "<msup><mrow><mo stretchy=\"false\">(</mo>"));
    CHECK(contains(math("d_model^-0.5"), "<msubsup><mi>d</mi><mrow><mi>model</mi></mrow><mrow><mo>−</mo><mn>0.5</mn></mrow></msubsup>"));
    CHECK(contains(math("s_{i-1}"), "<mrow><mi>i</mi><mo>−</mo><mn>1</mn></mrow>"));
    CHECK(contains(math("p(y_i | y_<i, x)"), "<mrow><mo>&lt;</mo><mi>i</mi></mrow>"));
    CHECK(contains(math("y_i = <eos>"), "<mtext>&lt;eos&gt;</mtext>"));
    CHECK(contains(math("||A A^T - I||_F^2"), "<msubsup><mo>‖</mo><mrow><mi>F</mi></mrow><mrow><mn>2</mn></mrow></msubsup>"));
    CHECK(contains(math("a <= b != c -> d"), "<mo>≤</mo><mi>b</mi><mo>≠</mo><mi>c</mi><mo>→</mo>"));
    CHECK(contains(math("w_1..w_n"), "<mo>…</mo>"));
    CHECK(contains(math("sum_{j in b}"), "<mo>∈</mo>"));
    CHECK(contains(math("m_0 = -inf"), "<mo>−</mo><mi>∞</mi>"));
    CHECK(contains(math("p(करो | x)"), "<mtext>करो</mtext>"));
}

TEST_CASE("formula_mathml translates nothing it cannot say faithfully", "[html]") {
    for (const std::string text : {"update gate bias", "x_j, one row per source token", "(a + b", "a + b)", "(a]",
                                   "online_softmax_rows(X)", "x_", "a^^ b", "std::chrono::steady_clock", "\"lights\"",
                                   "a \xff b", "", "   ", "a # b", "sqrt x", "2 for every feature"}) {
        INFO(text);
        CHECK(!formula_mathml(text).has_value());
    }
}

TEST_CASE("equation_html cuts at separators, writes MathML where it can and escaped text elsewhere", "[html]") {
    const EquationHtml two = equation_html("Q = X W_Q,  K = X W_K");
    CHECK(two.pieces == 2);
    CHECK(two.translated == 2);
    CHECK(occurrences(two.html, "<math>") == 2);
    CHECK(contains(two.html, "<span class=\"eq-piece\"><math>"));
    CHECK(contains(two.html, "</math>,</span>\u2003<math>"));

    const EquationHtml mixed = equation_html("x_j = E_src[w_j], one row per source token");
    CHECK(mixed.pieces == 2);
    CHECK(mixed.translated == 1);
    CHECK(contains(mixed.html, "<span class=\"eq-text\">one row per source token</span>"));

    // brackets hold their commas
    CHECK(equation_html("S = (w_1, ..., w_n)").pieces == 1);

    const EquationHtml hostile = equation_html("<script>alert(1)</script>, a & b, \xff");
    CHECK(!contains(hostile.html, "<script"));
    CHECK(contains(hostile.html, "&lt;script&gt;"));
    CHECK(xml_problem("<p>" + hostile.html + "</p>") == "");
}

TEST_CASE("every equation of every lesson is MathML or its own text, and no MathML loses a number", "[html]") {
    static const std::set<std::string> mathml_core = {"math", "mrow", "mi", "mn", "mo", "msub", "msup", "msubsup",
                                                      "mover", "msqrt", "mtext"};
    std::size_t equations = 0, whole = 0, partly = 0, pieces = 0, translated = 0;
    std::size_t lessons = 0;
    for (const auto& entry : fs::directory_iterator(ATTN_GOLDEN_DIR)) {
        if (entry.path().extension() != ".json") continue;
        ++lessons;
        const Trace trace = read_golden(entry.path());
        std::vector<std::string> texts;
        for (const auto& s : trace.steps()) {
            texts.push_back(s.equation);
            for (const auto& t : s.tensors) texts.push_back(t.equation);
        }
        for (const auto& text : texts) {
            if (text.empty()) continue;
            INFO(entry.path().filename().string() << ": " << text);
            const EquationHtml e = equation_html(text);
            CHECK(xml_problem("<p>" + e.html + "</p>") == "");
            CHECK(e.pieces >= 1);
            ++equations;
            pieces += e.pieces;
            translated += e.translated;
            whole += e.translated == e.pieces ? 1 : 0;
            partly += e.translated > 0 && e.translated < e.pieces ? 1 : 0;
            // nothing but MathML Core elements, and every digit and capital of the source, in order
            for (const auto& name : element_names(e.html))
                CHECK((mathml_core.count(name) > 0 || name == "span" || name == "code"));
            const std::string shown = text_of(e.html);
            CHECK(kept(shown, is_digit) == kept(text, is_digit));
            if (!contains(text, "Delta") && !contains(text, "Sigma")) CHECK(kept(shown, is_capital) == kept(text, is_capital));
        }
    }
    CHECK(lessons >= 12);
    WARN(fmt::format("{} equation strings of {} lessons: {} wholly MathML, {} partly, {} as text; {} of {} pieces "
                     "translated",
                     equations, lessons, whole, partly, equations - whole - partly, translated, pieces));
    // most equations are formulas: a translator that gave up on them would show here
    CHECK(translated * 10 >= pieces * 5);
}

TEST_CASE("a lesson page escapes every text a trace holds", "[html]") {
    const Trace trace = hostile_trace();
    BookLesson l;
    l.number = 3;
    l.slug = "bad/<slug>";
    l.title = "Title <b>&</b>";
    l.sources = "after <a href=x>";
    l.reproducibility = "attn · \"quoted\"";
    l.stopped = "stopped <here>";
    l.trace = &trace;
    BookInfo info;
    info.made_by = "attn <test>";
    const std::vector<BookLesson> lessons{l};
    for (const std::string& page : {lesson_page(lessons, 0, info), book_index(lessons, info)}) {
        CHECK(valid_utf8(page));
        CHECK(xml_problem(page, true) == "");
        for (const std::string bad : {"<script", "<b>", "<img", "<a href=x", "<r1>", "<i>", "\x01",
                                      "\xc2\x85", "\xef\xb7\x90", "<slug>", "<here>", "<test>"})
            CHECK(!contains(page, bad));
    }
    const std::string page = lesson_page(lessons, 0, info);
    CHECK(contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;"));
    CHECK(contains(page, "लाइट"));
    CHECK(contains(page, "&lt;/svg&gt;"));
    CHECK(contains(page, "<span class=\"mark\">✗</span> claim &lt;img"));  // a failing check is shown as such
    CHECK(contains(page, "(max |error| 0.5 &gt; tolerance 0.1)"));
    CHECK(contains(page, "The lesson stopped here."));
    CHECK(book_page_name(3, "bad/<slug>") == "03-bad__slug_.html");
}

TEST_CASE("a step shows its code folded and escaped, then its notes, and sums up export-only data in a line",
          "[html]") {
    Trace trace("code", Config{});
    trace.step("attention", "Attention", "O = A V", "");
    trace.tensor("O", "", Array(xt::ones<double>({2, 2})));
    trace.export_only("W_trained_1", "", Array(xt::zeros<double>({3, 4})));
    trace.export_only("W_trained_2", "", Array(xt::zeros<double>({5})));
    trace.step("other", "Other", "", "");
    BookLesson l;
    l.number = 4, l.slug = "no-diagrams", l.title = "Self", l.trace = &trace;  // a slug without diagrams
    l.extras["attention"].code.push_back({"attend", "src/nn/a.cpp", 12, "Mat attend() { return x < y && \"</code></pre><script>\"; }"});
    l.extras["attention"].notes_html = {"<p class=\"task-link\">note</p>"};
    l.extras["not-a-step"].notes_html = {"<p>never shown</p>"};
    BookInfo info;
    info.pages.push_back({"more.html", "More <pages>", "<main><p>body</p></main>\n"});
    info.index_note_html = "<p><a href=\"more.html\">more</a></p>";
    const std::vector<BookLesson> lessons{l};
    const std::string page = lesson_page(lessons, 0, info);
    CHECK(xml_problem(page, true) == "");
    CHECK(contains(page, "<details class=\"code\"><summary>Code: <code>nn::attend</code> <code class=\"file\">src/nn/a.cpp:12"));
    CHECK(contains(page, "return x &lt; y &amp;&amp; &quot;&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;&quot;; }"));
    CHECK(!contains(page, "<script"));
    CHECK(contains(page, "</details>\n<p class=\"task-link\">note</p>\n"));
    CHECK(!contains(page, "never shown"));
    // export-only tensors: no block of their own, one line naming them and the command that writes them
    CHECK(contains(page, "id=\"s1-t1\""));
    CHECK(!contains(page, "id=\"s1-t2\""));
    CHECK(contains(page, "2 tensors of 17 numbers in all (<code>W_trained_1</code> [3, 4], <code>W_trained_2</code> [5]); "
                         "<code>attn export 4 --out DIR</code> writes them."));
    // the caller's pages: written under the book's head, linked from the index
    const std::string more = extra_page(info.pages[0], info);
    CHECK(xml_problem(more, true) == "");
    CHECK(contains(more, "<title>More &lt;pages&gt; · "));
    CHECK(contains(more, "<a href=\"index.html\">Contents</a>"));
    CHECK(contains(book_index(lessons, info), "<p><a href=\"more.html\">more</a></p>"));
    const fs::path root = temp_root();
    const auto written = write_book(root / "book", lessons, info);
    CHECK(written.size() == 3);
    CHECK(test::read_file(root / "book" / "more.html") == more);
    fs::remove_all(root);
}

TEST_CASE("attn book shows each step's src/nn code as the source holds it, and links every exercise", "[html]") {
    const char* attn = std::getenv("ATTN_BIN");
    const char* source = std::getenv("ATTN_SOURCE_DIR");
    REQUIRE(attn != nullptr);
    REQUIRE(source != nullptr);
    const fs::path root = temp_root();
    fs::create_directories(root);
    REQUIRE(std::system(("'" + std::string(attn) + "' book 4 --out '" + (root / "site").string() + "' > /dev/null").c_str()) == 0);
    const std::string page = test::read_file(root / "site" / "04-self-attention.html");
    const std::string exercises = test::read_file(root / "site" / "exercises.html");
    // step [attention] (the 7th) calls nn::scaled_dot_product_attention: its body, from the file itself
    const std::size_t step = page.find("<section class=\"step\" id=\"step-7\">");
    REQUIRE(step != std::string::npos);
    const std::string section = page.substr(step, page.find("</section>", step) - step);
    CHECK(contains(section, "Code: <code>nn::scaled_dot_product_attention</code> <code class=\"file\">src/nn/self_attention_scaled.cpp:"));
    const std::string file = test::read_file(fs::path(source) / "src/nn/self_attention_scaled.cpp");
    CHECK(contains(file, "    r.weights = softmax_rows(r.scores);\n"));
    CHECK(contains(section, "    r.weights = softmax_rows(r.scores);\n"));
    CHECK(contains(section, "exercises.html#scaled-attention"));
    // every exercise has its section, and the steps of this lesson that check one link to it
    std::size_t sections = 0;
    for (std::size_t at = exercises.find("class=\"task-page\""); at != std::string::npos;
         at = exercises.find("class=\"task-page\"", at + 1))
        ++sections;
    CHECK(sections == 29);
    for (const std::string id : {"lin-penalty", "scaled-attention", "causal-mask", "positional"})
        CHECK(contains(page, "exercises.html#" + id + "\""));
    // the exercises page links the steps of the lessons the book has, and not those it has not
    CHECK(contains(exercises, "<a href=\"04-self-attention.html#step-7\">[attention]</a>"));
    CHECK(!contains(exercises, "01-bottleneck.html"));
    CHECK(contains(exercises, "build/attn-student check softmax"));
    fs::remove_all(root);
}

TEST_CASE("pages link their neighbours and the index, hold a table of contents, and repeat their bytes", "[html]") {
    Trace a("a", Config{}), b("b", Config{});
    a.step("one", "First step", "x_1 = 1", "");
    a.tensor("v", "", Array(xt::ones<double>({3})));
    a.check("holds", 0, 1e-12);
    a.step("two", "Second step", "", "");
    b.step("only", "Only step", "", "");
    b.tensor("big", "", Array(xt::zeros<double>({20, 20})));
    b.parameter("W", "drawn", Array(xt::ones<double>({2, 2})));
    std::vector<BookLesson> lessons(2);
    lessons[0].number = 1, lessons[0].slug = "first", lessons[0].title = "First", lessons[0].trace = &a;
    lessons[1].number = 2, lessons[1].slug = "second", lessons[1].title = "Second", lessons[1].trace = &b;
    const BookInfo info;
    const std::string first = lesson_page(lessons, 0, info), second = lesson_page(lessons, 1, info);
    CHECK(first == lesson_page(lessons, 0, info));
    CHECK(contains(first, "<a href=\"index.html\">Contents</a>"));
    CHECK(!contains(first, "rel=\"prev\""));
    CHECK(contains(first, "<a href=\"02-second.html\" rel=\"next\">"));
    CHECK(contains(second, "<a href=\"01-first.html\" rel=\"prev\">"));
    CHECK(!contains(second, "rel=\"next\""));
    CHECK(contains(first, "<a href=\"#step-1\">First step</a>"));
    CHECK(contains(first, "<section class=\"step\" id=\"step-2\">"));
    CHECK(contains(first, "<span class=\"mark\">✓</span> holds"));
    // a 20 x 20 tensor folds under <details> with its shape; a drawn parameter too, with its summary
    CHECK(contains(second, "<details><summary>the numbers, [20, 20]</summary>"));
    CHECK(contains(second, "<details><summary>drawn at random: mean 1, sd 0, from 1 to 1; the numbers, [2, 2]"));
    const std::string index = book_index(lessons, info);
    CHECK(contains(index, "<a href=\"01-first.html\">First</a>"));
    CHECK(contains(index, "<a href=\"02-second.html\">Second</a>"));
    for (const std::string& page : {first, second, index}) {
        CHECK(!contains(page, "<script"));
        CHECK(!contains(page, "http://"));  // no network: nothing is fetched
        CHECK(!contains(page, "https://"));
        CHECK(contains(page, "prefers-color-scheme: dark"));
        CHECK(contains(page, "@media print"));
    }
}

TEST_CASE("every box that scrolls is a named region the keyboard reaches; the two navs are named apart", "[html]") {
    Trace a("a", Config{});
    a.step("one", "First step", "x_1 = 1", "");
    a.tensor("wide", "", Array(xt::zeros<double>({3, 9})), {}, {}, View::heatmap);
    a.tensor("counts", "", Array{{16.0, 0.5, 1e-9}, {40.0, 0.25, 2e-9}}, {}, {"entries", "max", "error"});
    a.tensor("big", "", Array{3e6, 2.0, 81920.0});
    a.tensor("G", "", Array{{1.5, 2.5}, {0.5, 1.0}});
    a.tensor("g", "", Array{{1.5, 2.5}, {0.5, 1.0}});
    std::vector<BookLesson> lessons(2);
    lessons[0].number = 1, lessons[0].slug = "first", lessons[0].title = "First", lessons[0].trace = &a;
    lessons[1].number = 2, lessons[1].slug = "second", lessons[1].title = "Second", lessons[1].trace = &a;
    const std::string page = lesson_page(lessons, 0, BookInfo{}), index = book_index(lessons, BookInfo{});
    // every element that scrolls sideways (class scroll or equation) is focusable, a region, and named
    for (const std::string& p : {page, index}) {
        std::size_t boxes = 0;
        for (const std::string cls : {"<div class=\"scroll", "<div class=\"equation"})
            for (std::size_t at = p.find(cls); at != std::string::npos; at = p.find(cls, at + 1), ++boxes) {
                const std::string tag = p.substr(at, p.find('>', at) - at);
                INFO(tag);
                CHECK(contains(tag, " tabindex=\"0\" role=\"region\" aria-label=\""));
                CHECK(!contains(tag, "aria-label=\"\""));
            }
        CHECK(boxes >= (p == page ? 5u : 1u));  // the equation, a figure, three tables; the lessons' table
    }
    CHECK(contains(page, "aria-label=\"the equation of step 1\""));
    CHECK(contains(page, "aria-label=\"figure: wide (step 1, tensor 1)\""));
    CHECK(contains(page, "aria-label=\"the numbers of counts (step 1, tensor 2)\""));
    // each region's name is its own, ignoring case too (axe-core's landmark-unique)
    std::set<std::string> names;
    std::size_t regions = 0;
    for (std::size_t at = page.find("role=\"region\" aria-label=\""); at != std::string::npos;
         at = page.find("role=\"region\" aria-label=\"", at + 1), ++regions)
        names.insert(lower(page.substr(at, page.find('"', at + 26) - at)));
    CHECK(names.size() == regions);
    CHECK(occurrences(page, "<nav class=\"pages\" aria-label=\"Lessons, top of the page\">") == 1);
    CHECK(occurrences(page, "<nav class=\"pages\" aria-label=\"Lessons, end of the page\">") == 1);
    CHECK(!contains(page, "<th></th>"));
    CHECK(contains(page, "<th><span class=\"visually-hidden\">row</span></th>"));
    // a figure is never drawn narrower than keeps its smallest text at 10 px (the heatmap's labels: 12 px)
    CHECK(contains(page, "<div style=\"min-width: "));
    // whole numbers as whole numbers: a column of counts beside measurements, and a tensor of large integers
    CHECK(contains(page, "<td>16</td><td>5.0000e-01</td><td>1.0000e-09</td>"));  // the rest as before: scientific
    CHECK(contains(page, "<td>40</td>"));
    CHECK(!contains(page, "1.6000e+01"));
    CHECK(contains(page, "<td>3000000</td><td>2</td><td>81920</td>"));
    CHECK(!contains(page, "3e+06"));
    // the figures' dark palette is in the page once, not in every picture
    CHECK(occurrences(page, "svg.fig .bg {") == 1);
    CHECK(!contains(page, "<style>\n@media"));
}

TEST_CASE("a lesson's page has the same bytes on every run", "[html]") {
    const Lesson* lesson = find_lesson("additive");
    REQUIRE(lesson != nullptr);
    const Trace one = run_lesson(*lesson, lesson->defaults), two = run_lesson(*lesson, lesson->defaults);
    std::vector<BookLesson> first(1), second(1);
    first[0].number = second[0].number = lesson->number;
    first[0].slug = second[0].slug = lesson->slug;
    first[0].trace = &one;
    second[0].trace = &two;
    const std::string page = lesson_page(first, 0, BookInfo{});
    CHECK(page == lesson_page(second, 0, BookInfo{}));
    // the alignment heatmap with its tokens, on the fixed scale of probabilities
    CHECK(contains(page, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
    CHECK(contains(page, ">fixed scale 0 to 1: probabilities</text>"));
    CHECK(contains(page, ">lights</text>"));
}

TEST_CASE("write_book writes the index and every page, and names the path it cannot write", "[html]") {
    Trace a("a", Config{});
    a.step("one", "One", "", "");
    std::vector<BookLesson> lessons(1);
    lessons[0].number = 1, lessons[0].slug = "a", lessons[0].title = "A", lessons[0].trace = &a;
    const fs::path root = temp_root();
    const fs::path dir = root / "nested" / "book";
    const auto written = write_book(dir, lessons, BookInfo{});
    REQUIRE(written.size() == 2);
    CHECK(written[0] == dir / "index.html");
    CHECK(written[1] == dir / "01-a.html");
    CHECK(test::read_file(written[1]) == lesson_page(lessons, 0, BookInfo{}));
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);  // no temporary file left

    const fs::path file = root / "plain_file";
    std::ofstream(file) << "x";
    std::string message = "(no error)";
    try {
        write_book(file, lessons, BookInfo{});
    } catch (const std::runtime_error& e) {
        message = e.what();
    }
    CHECK(contains(message, file.string()));
    CHECK(contains(message, "not a directory"));
    CHECK(test::read_file(file) == "x");
    fs::remove_all(root);
}

TEST_CASE("attn book refuses what it cannot write before any lesson runs, and a student's build shows its own run",
          "[html]") {
    const char* attn = std::getenv("ATTN_BIN");
    const char* student = std::getenv("ATTN_STUDENT_BIN");
    const char* wrong = std::getenv("ATTN_WRONG_SOFTMAX_BIN");
    REQUIRE(attn != nullptr);
    REQUIRE(student != nullptr);
    REQUIRE(wrong != nullptr);
    const fs::path root = temp_root() / "cli";
    fs::create_directories(root);
    const fs::path file = root / "a_file";
    std::ofstream(file) << "x";
    const auto book = [](const char* bin, const std::string& args) {
        return test::run_command("NO_COLOR=1 '" + std::string(bin) + "' book " + args + " 2>&1");
    };

    test::Result r = book(attn, "1 --out '" + file.string() + "'");
    CHECK(r.code == 3);
    CHECK_THAT(r.output, Catch::Contains("exists and is not a directory"));
    CHECK(test::read_file(file) == "x");
    r = book(attn, "1 --out '" + (file / "below").string() + "'");  // a folder inside a file cannot be made
    CHECK(r.code == 3);
    CHECK_THAT(r.output, Catch::Contains("cannot write there"));
    r = book(attn, "1 2 --set d=4 --out '" + (root / "x").string() + "'");
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("need exactly one lesson"));
    r = book(attn, "nosuchlesson --out '" + (root / "x").string() + "'");
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("unknown lesson"));
    r = book(attn, "1");
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("--out"));
    CHECK(!fs::exists(root / "x"));

    // a build whose softmax is wrong: its failing checks are on its pages, marked, and it exits 1
    r = book(wrong, "2 --out '" + (root / "wrong").string() + "'");
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Catch::Contains("identity checks FAILED"));
    const std::string wrong_page = test::read_file(root / "wrong" / "02-additive.html");
    CHECK(contains(wrong_page, "<li class=\"check fail\"><span class=\"mark\">✗</span>"));
    CHECK(contains(test::read_file(root / "wrong" / "index.html"), "checks fail"));

    // the starters: the lesson stops at its first exercise, and its page says where and why
    r = book(student, "1 --out '" + (root / "student").string() + "'");
    CHECK(r.code == 1);
    const std::string student_page = test::read_file(root / "student" / "01-bottleneck.html");
    CHECK(contains(student_page, "The lesson stopped here."));
    CHECK(contains(student_page, "gru-step is not done yet"));
    CHECK(contains(test::read_file(root / "student" / "index.html"), "your exercise files"));
    fs::remove_all(temp_root());
}

// run --book (issue 41): the pages of the lessons it shows, from the same runs, written after the last lesson and
// byte for byte those `attn book` writes of the same lessons; refused with --step, which ends a lesson early; a
// lesson a starter stops has its page all the same.
TEST_CASE("run --book writes the pages attn book writes, from the runs it shows", "[html]") {
    const char* attn = std::getenv("ATTN_BIN");
    const char* student = std::getenv("ATTN_STUDENT_BIN");
    REQUIRE(attn != nullptr);
    REQUIRE(student != nullptr);
    const fs::path root = temp_root() / "run_book";
    fs::create_directories(root);
    const auto attn_cmd = [](const char* bin, const std::string& args) {
        return test::run_command("NO_COLOR=1 '" + std::string(bin) + "' " + args + " 2>&1");
    };

    test::Result r = attn_cmd(attn, "run 1 2 --book '" + (root / "run").string() + "'");
    INFO(r.output);
    CHECK(r.code == 0);
    const auto wrote = r.output.find("Wrote 4 pages to " + (root / "run").string() + ": open ");  // the index, 2 lessons, the exercises
    REQUIRE(wrote != std::string::npos);
    CHECK(wrote > r.output.find("additive: all "));  // after the last lesson
    r = attn_cmd(attn, "book 1 2 --out '" + (root / "book").string() + "'");
    CHECK(r.code == 0);
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(root / "book")) {
        const std::string name = entry.path().filename().string();
        names.insert(name);
        INFO(name);
        CHECK(test::read_file(root / "run" / name) == test::read_file(entry.path()));
    }
    CHECK(names == std::set<std::string>{"index.html", "01-bottleneck.html", "02-additive.html", "exercises.html"});
    CHECK(std::distance(fs::directory_iterator(root / "run"), fs::directory_iterator()) == 4);

    r = attn_cmd(attn, "run 1 --step encoder --book '" + (root / "step").string() + "'");
    CHECK(r.code == 2);
    CHECK_THAT(r.output, Catch::Contains("--book writes whole lessons"));
    CHECK(!fs::exists(root / "step"));

    // a student's starters: lesson 1 stops at its first exercise, and its page says where and why
    r = attn_cmd(student, "run 1 --book '" + (root / "student").string() + "'");
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Catch::Contains("Wrote 3 pages to "));  // the index, lesson 1, the exercises
    CHECK(contains(test::read_file(root / "student" / "01-bottleneck.html"), "The lesson stopped here."));
    fs::remove_all(temp_root());
}

}  // namespace test_html
