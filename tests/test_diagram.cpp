// Tests for core/diagram: the data-flow diagrams of the book (issue 44). Shapes come from the trace;
// a tensor the trace lacks is refused by name; the SVG is XML whatever the labels hold; the layout has
// no overlapping boxes and every arrow ends on a box, for every lesson's diagrams drawn from its own
// trace. tests/book_check.py finds them in every page and their labels in the PDF print.
#include "core/diagram.hpp"
#include "core/html.hpp"
#include "core/xml_text.hpp"
#include "registry.hpp"
#include "run.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

namespace test_diagram {

using namespace attn;
using test::xml_problem;

namespace {

Array zeros(std::size_t rows, std::size_t cols) { return Array(Shape{rows, cols}, 0.0); }

// A trace of two steps: "proj" with Q [5, 4] and K [5, 4], "att" with A [5, 5].
Trace small_trace(std::size_t rows = 5, std::size_t cols = 4) {
    Trace t("toy", Config{});
    t.step("proj", "Projections", "", "");
    t.tensor("Q", "", zeros(rows, cols));
    t.tensor("K", "", zeros(rows, cols));
    t.step("att", "Attention", "", "");
    t.tensor("A", "", zeros(rows, rows));
    return t;
}

Diagram small_diagram() {
    Diagram d;
    d.id = "toy";
    d.title = "toy attention";
    d.caption = "a toy";
    d.columns = 2;
    d.nodes = {{"q", "", "Q", "proj", 0, 0, DiagramNode::Kind::data, ""},
               {"k", "", "K", "proj", 0, 1, DiagramNode::Kind::data, ""},
               {"s", "softmax", "", "", 1, 0.5, DiagramNode::Kind::op, "of each row"},
               {"a", "weights", "A", "att", 2, 0.5, DiagramNode::Kind::data, ""}};
    d.edges = {{"q", "s", false}, {"k", "s", false}, {"s", "a", false}};
    d.groups = {{"attention", {"s", "a"}}};
    return d;
}

const DiagramBox& box(const DiagramLayout& l, const std::string& id) {
    const auto it = std::find_if(l.boxes.begin(), l.boxes.end(), [&](const DiagramBox& b) { return b.id == id; });
    REQUIRE(it != l.boxes.end());
    return *it;
}

std::size_t count(const std::string& text, const std::string& piece) {
    std::size_t n = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("a diagram's boxes carry the shapes the trace records", "[diagram]") {
    const DiagramLayout five = layout_diagram(small_diagram(), small_trace(5, 4));
    CHECK(box(five, "q").lines == std::vector<std::string>{"Q [5, 4]"});
    CHECK(box(five, "a").lines == std::vector<std::string>{"weights [5, 5]"});
    CHECK(box(five, "s").lines == std::vector<std::string>{"softmax", "of each row"});
    // another run of other sizes: the labels follow the trace, not the code
    const DiagramLayout seven = layout_diagram(small_diagram(), small_trace(7, 3));
    CHECK(box(seven, "q").lines == std::vector<std::string>{"Q [7, 3]"});
    CHECK(box(seven, "a").lines == std::vector<std::string>{"weights [7, 7]"});
    CHECK(fmt::format("{}", fmt::join(layout_problems(five), "; ")) == "");
    // rows go down: the softmax below Q and K, the weights below the softmax
    CHECK(box(five, "s").y > box(five, "q").y + box(five, "q").h);
    CHECK(box(five, "a").y > box(five, "s").y + box(five, "s").h);
    CHECK(box(five, "q").x + box(five, "q").w < box(five, "k").x);
    // the picture is as wide as what it draws, 10 units either side: one box alone is not 540 wide
    Diagram one;
    one.id = "one";
    one.nodes = {{"q", "", "Q", "proj", 0, 1, DiagramNode::Kind::data, ""}};
    const DiagramLayout alone = layout_diagram(one, small_trace());
    CHECK(box(alone, "q").x == 10);
    CHECK(alone.width == box(alone, "q").w + 20);
    CHECK(alone.width < 200);
}

TEST_CASE("a diagram naming a tensor or step the trace lacks is refused by name", "[diagram]") {
    Diagram d = small_diagram();
    d.nodes[3].tensor = "A_missing";
    CHECK_THROWS_AS(layout_diagram(d, small_trace()), DiagramError);
    CHECK_THROWS_WITH(layout_diagram(d, small_trace()), Catch::Contains("'A_missing'") && Catch::Contains("step 'att'"));
    // a tensor of that name in another step is not taken for it
    d = small_diagram();
    d.nodes[3].tensor = "Q";
    CHECK_THROWS_WITH(layout_diagram(d, small_trace()), Catch::Contains("no tensor 'Q' in step 'att'"));
    d = small_diagram();
    d.nodes[0].step = "projections";
    CHECK_THROWS_WITH(layout_diagram(d, small_trace()), Catch::Contains("no step 'projections'"));
    CHECK_THROWS_WITH(diagram_svg(d, small_trace(), "x"), Catch::Contains("no step 'projections'"));
    // and a diagram that names no node of its own
    d = small_diagram();
    d.edges.push_back({"q", "nowhere", false});
    CHECK_THROWS_WITH(layout_diagram(d, small_trace()), Catch::Contains("no node 'nowhere'"));
    d = small_diagram();
    d.nodes[1].id = "q";
    CHECK_THROWS_WITH(layout_diagram(d, small_trace()), Catch::Contains("two nodes are called 'q'"));
}

TEST_CASE("a diagram's SVG is XML with hostile labels escaped, named for screen readers", "[diagram]") {
    Trace t("toy", Config{});
    t.step("proj", "Projections", "", "");
    t.tensor("Q<script>&\"'", "", zeros(2, 3));
    Diagram d;
    d.id = "hostile";
    d.title = "a </title> & <svg>";
    d.nodes = {{"q", "", "Q<script>&\"'", "", 0, 0, DiagramNode::Kind::data, "]]> <!-- & -->"},
               {"o", "<b>bold</b>", "", "", 1, 0, DiagramNode::Kind::op, ""}};
    d.edges = {{"q", "o", false}};
    d.groups = {{"<g>&amp;", {"q", "o"}}};
    const std::string svg = diagram_svg(d, t, "l1-\"x\"", false);
    INFO(svg);
    CHECK(xml_problem(svg) == "");
    CHECK(svg.find("<script") == std::string::npos);
    CHECK(svg.find("<b>") == std::string::npos);
    CHECK(svg.find("<!--") == std::string::npos);
    CHECK(svg.find("Q&lt;script&gt;&amp;&quot;&apos; [2, 3]") != std::string::npos);
    CHECK(svg.find("&lt;g&gt;&amp;amp;") != std::string::npos);
    CHECK(svg.rfind("<svg ", 0) == 0);  // inline: no XML declaration
    CHECK(svg.find("role=\"img\"") != std::string::npos);
    CHECK(svg.find("aria-label=\"a &lt;/title&gt; &amp; &lt;svg&gt;\"") != std::string::npos);
    CHECK(count(svg, "<title") == 1);
    CHECK(svg.find("prefers-color-scheme: dark") != std::string::npos);
    CHECK(svg.find("fill=\"#fff") == std::string::npos);  // no white box: colours come from the classes
    const std::string file = diagram_svg(d, t, "x", true);
    CHECK(file.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0) == 0);
    CHECK(xml_problem(file) == "");
    // the same diagram and trace, the same bytes
    CHECK(diagram_svg(d, t, "l1-\"x\"", false) == svg);
}

TEST_CASE("the layout check finds overlapping boxes and arrows that miss or cross a box", "[diagram]") {
    const DiagramLayout good = layout_diagram(small_diagram(), small_trace());
    REQUIRE(fmt::format("{}", fmt::join(layout_problems(good), "; ")) == "");
    DiagramLayout moved = good;
    for (auto& b : moved.boxes)
        if (b.id == "k") b.x = box(good, "q").x + 10;
    CHECK_THAT(fmt::format("{}", fmt::join(layout_problems(moved), "\n")), Catch::Contains("boxes 'q' and 'k' overlap"));
    DiagramLayout short_arrow = good;
    short_arrow.arrows[2].y2 -= 12;  // the softmax's arrow stops short of the weights
    CHECK_THAT(fmt::format("{}", fmt::join(layout_problems(short_arrow), "\n")),
               Catch::Contains("does not end on the border of 'a'"));
    DiagramLayout across = good;
    const DiagramBox& s = box(good, "s");
    across.arrows[0].x1 = across.arrows[0].x2 = s.x + s.w / 2;  // straight down through s, to a
    across.arrows[0].y2 = box(good, "a").y;
    across.arrows[0].to = "a";
    CHECK_THAT(fmt::format("{}", fmt::join(layout_problems(across), "\n")),
               Catch::Contains("the arrow from 'q' to 'a' crosses 's'"));
    DiagramLayout wide = good;
    wide.boxes[1].x = wide.width - 10;
    CHECK_THAT(fmt::format("{}", fmt::join(layout_problems(wide), "\n")), Catch::Contains("box 'k' leaves the picture"));
}

// Every lesson's diagrams, drawn from the lesson's own trace at its quick configuration (run up to the
// last step a diagram reads: lessons 9, 12, 13, 14 and 15 train after their first steps).
TEST_CASE("every lesson has a diagram drawn from its own trace, laid out without overlaps", "[diagram]") {
    for (const Lesson& lesson : all_lessons()) {
        INFO("lesson " << lesson.number << " " << lesson.slug);
        const std::vector<Diagram> diagrams = lesson_diagrams(lesson.slug);
        REQUIRE(!diagrams.empty());
        std::size_t needed = 0;
        const auto need = [&](const std::string& step) {
            const auto it = std::find(lesson.steps.begin(), lesson.steps.end(), step);
            INFO("step " << step);
            REQUIRE(it != lesson.steps.end());
            needed = std::max(needed, static_cast<std::size_t>(it - lesson.steps.begin()) + 1);
        };
        std::vector<std::string> ids;
        for (const Diagram& d : diagrams) {
            if (!d.step.empty()) need(d.step);
            for (const auto& n : d.nodes)
                if (!n.tensor.empty()) {
                    INFO("tensor " << n.tensor << " names its step");
                    REQUIRE(!(n.step.empty() && d.step.empty()));
                    need(n.step.empty() ? d.step : n.step);
                }
            ids.push_back(d.id);
        }
        std::sort(ids.begin(), ids.end());
        CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
        Trace prepared(lesson.slug, lesson.quick);
        prepared.stop_after(needed);
        const LessonRun run = run_lesson(lesson, std::move(prepared), false);
        REQUIRE(run.error == "");
        for (const Diagram& d : diagrams) {
            INFO("diagram " << d.id);
            const DiagramLayout layout = layout_diagram(d, run.trace);
            CHECK(fmt::format("{}", fmt::join(layout_problems(layout), "\n")) == "");
            CHECK(layout.width <= diagram_width);
            // 16-unit text in at most 540 units: at least 10 px when drawn 350 px wide (a 390 px phone)
            CHECK(diagram_font * 350.0 / layout.width >= 10.0);
            CHECK(!d.caption.empty());
            const std::string svg = diagram_svg(d, run.trace, "l" + std::to_string(lesson.number) + "-" + d.id);
            CHECK(xml_problem(svg) == "");
            for (const auto& b : layout.boxes)
                for (const auto& line : b.lines) CHECK(svg.find(">" + xml_escaped(line) + "</text>") != std::string::npos);
            CHECK(count(svg, "<text") == [&] {
                std::size_t lines = layout.frames.size();
                for (const auto& b : layout.boxes) lines += b.lines.size();
                return lines;
            }());
        }
        // at least one box per lesson reads its shape from the trace
        std::size_t tensors = 0;
        for (const Diagram& d : diagrams)
            for (const auto& n : d.nodes) tensors += n.tensor.empty() ? 0 : 1;
        CHECK(tensors > 0);
    }
}

// The book's page places each diagram in a figure.diagram with its caption, in the step it names; a lesson
// stopped before a diagram's tensors leaves that diagram out, one that ran to its end cannot.
TEST_CASE("a lesson's page holds its diagrams in their steps", "[diagram]") {
    const Lesson* lesson = find_lesson("self-attention");
    REQUIRE(lesson != nullptr);
    const std::vector<Diagram> diagrams = lesson_diagrams(lesson->slug);
    REQUIRE(diagrams.size() == 1);
    REQUIRE(diagrams[0].step == "qkv");
    const auto qkv = std::find(lesson->steps.begin(), lesson->steps.end(), "qkv") - lesson->steps.begin();
    const std::size_t attention = static_cast<std::size_t>(std::find(lesson->steps.begin(), lesson->steps.end(), "attention") -
                                                           lesson->steps.begin());
    Trace prepared(lesson->slug, lesson->quick);
    prepared.stop_after(attention + 1);
    const LessonRun run = run_lesson(*lesson, std::move(prepared), false);
    REQUIRE(run.error == "");
    std::vector<BookLesson> pages(1);
    pages[0].number = lesson->number, pages[0].slug = lesson->slug, pages[0].title = lesson->title;
    pages[0].trace = &run.trace;
    const std::string page = lesson_page(pages, 0, BookInfo{});
    CHECK(count(page, "<figure class=\"diagram\">") == 1);
    const std::size_t figure = page.find("<figure class=\"diagram\">\n<svg ");
    const std::size_t section = page.find(fmt::format("<section class=\"step\" id=\"step-{}\">", qkv + 1));
    const std::size_t next = page.find(fmt::format("<section class=\"step\" id=\"step-{}\">", qkv + 2));
    REQUIRE(figure != std::string::npos);
    CHECK(section < figure);
    CHECK(figure < next);
    CHECK(page.find("<figcaption>" + xml_escaped(diagrams[0].caption) + "</figcaption>") != std::string::npos);
    // stopped before the step that records O: the page leaves the diagram out if the lesson says it stopped
    Trace early(lesson->slug, lesson->quick);
    early.stop_after(static_cast<std::size_t>(qkv) + 1);
    const LessonRun short_run = run_lesson(*lesson, std::move(early), false);
    pages[0].trace = &short_run.trace;
    CHECK_THROWS_WITH(lesson_page(pages, 0, BookInfo{}), Catch::Contains("no step 'attention'"));
    pages[0].stopped = "stopped by an exercise";
    CHECK(count(lesson_page(pages, 0, BookInfo{}), "<figure class=\"diagram\">") == 0);
}

}  // namespace test_diagram
