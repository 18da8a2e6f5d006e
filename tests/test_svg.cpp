// Tests for core/svg: the document is well-formed UTF-8 XML whatever the labels hold, special
// values (-inf, NaN, a constant matrix) are drawn without arithmetic on them, big matrices thin
// their labels, and the files are named, numbered and written as the header promises.
// tests/svg_check.py parses every lesson's pictures with a real XML parser and renders them.
#include "core/svg.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <string>
#include <vector>

#include <unistd.h>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_svg {

using namespace attn;
using test::valid_utf8;
using test::xml_problem;
namespace fs = std::filesystem;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

TensorRecord heatmap(Array value, std::vector<std::string> rows = {}, std::vector<std::string> cols = {},
                     std::string name = "alpha") {
    TensorRecord t;
    t.name = std::move(name);
    t.equation = "softmax of each row";
    t.value = std::move(value);
    t.rows = std::move(rows);
    t.cols = std::move(cols);
    t.view = View::heatmap;
    return t;
}

Array matrix(std::size_t rows, std::size_t cols) {
    Array a = xt::zeros<double>({rows, cols});
    for (std::size_t i = 0; i < a.size(); ++i) a.data()[i] = 0.1 * static_cast<double>(i % 10);
    return a;
}

void require_well_formed(const std::string& svg) { REQUIRE(xml_problem(svg) == ""); }

std::size_t count(const std::string& text, const std::string& piece) {
    std::size_t n = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + piece.size())) ++n;
    return n;
}

// The number in attribute `name` of the <svg> root element.
double root_attribute(const std::string& svg, const std::string& name) {
    const std::size_t root = svg.find("<svg ");
    const std::string head = svg.substr(root, svg.find('>', root) - root);
    const std::size_t at = head.find(" " + name + "=\"");
    REQUIRE(at != std::string::npos);
    return std::stod(head.substr(at + name.size() + 3));
}

// The inside of <g class="...">...</g>, or "" when the group is absent.
std::string group(const std::string& svg, const std::string& cls) {
    const std::size_t start = svg.find("<g class=\"" + cls + "\"");
    if (start == std::string::npos) return "";
    return svg.substr(start, svg.find("</g>", start) - start);
}

// The values of attribute `name` in the elements of `group_text` that start with `element`.
std::vector<std::string> attributes(const std::string& group_text, const std::string& element,
                                    const std::string& name) {
    std::vector<std::string> values;
    for (std::size_t at = group_text.find(element); at != std::string::npos; at = group_text.find(element, at + 1)) {
        const std::string tag = group_text.substr(at, group_text.find('>', at) - at);
        const std::size_t value = tag.find(" " + name + "=\"");
        if (value == std::string::npos) continue;
        const std::size_t start = value + name.size() + 3;
        values.push_back(tag.substr(start, tag.find('"', start) - start));
    }
    return values;
}

// The fill of every cell, in row-major order.
std::vector<std::string> cell_fills(const std::string& svg) {
    return attributes(group(svg, "cells"), "<rect ", "fill");
}

// The y of each <text> in a group.
std::vector<double> text_ys(const std::string& svg, const std::string& cls) {
    std::vector<double> ys;
    for (const auto& y : attributes(group(svg, cls), "<text ", "y")) ys.push_back(std::stod(y));
    return ys;
}

// Every test's files go under one directory of this process, removed when the program ends, also
// after a failed test (Catch2 returns from main then; only a crash would leave it).
fs::path temp_root() { return fs::temp_directory_path() / ("attn_test_svg_" + std::to_string(::getpid())); }

struct RemoveTempRootAtExit {
    ~RemoveTempRootAtExit() {
        std::error_code ignored;
        fs::remove_all(temp_root(), ignored);
    }
} remove_temp_root_at_exit;

fs::path temp_dir(const std::string& name) {
    const fs::path dir = temp_root() / name;
    fs::remove_all(dir);
    return dir;
}

std::string read_file(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

const std::vector<std::string> hindi_rows = {"लाइट", "बंद", "करो"};
const std::vector<std::string> english_cols = {"turn", "off", "the", "lights"};

}  // namespace

TEST_CASE("the well-formedness check of these tests catches what it should", "[svg]") {
    CHECK(xml_problem("<a x=\"1\"><b/>&amp;&lt;</a>") == "");
    CHECK(xml_problem("<a>&x</a>") != "");
    CHECK(xml_problem("<a>1 < 2</a>") != "");
    CHECK(xml_problem("<a x=\"<\"></a>") != "");
    CHECK(xml_problem("<a><b></a></b>") != "");
    CHECK(xml_problem("<a>") != "");
    CHECK(xml_problem("<a>\xFF</a>") != "");
    CHECK(xml_problem("<a>\xED\xA0\x80</a>") != "");  // a surrogate
    CHECK(xml_problem("<a>\x01</a>") != "");
}

TEST_CASE("a heatmap is a standalone SVG 1.1 document with title, labels, values and colour bar", "[svg]") {
    const std::string svg = heatmap_svg(heatmap(matrix(3, 4), hindi_rows, english_cols), "Lesson 2 · weights · alpha");
    require_well_formed(svg);
    CHECK(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(svg.find("version=\"1.1\"") != std::string::npos);
    const double width = root_attribute(svg, "width"), height = root_attribute(svg, "height");
    CHECK(svg.find(fmt::format("viewBox=\"0 0 {} {}\"", width, height)) != std::string::npos);
    CHECK(svg.find("font-family=\"DejaVu Sans, Noto Sans Devanagari, Lohit Devanagari, sans-serif\"") !=
          std::string::npos);
    CHECK(svg.find("<title>Lesson 2 · weights · alpha</title>") != std::string::npos);
    CHECK(svg.find(">Lesson 2 · weights · alpha</text>") != std::string::npos);
    CHECK(svg.find(">alpha [3, 4] = softmax of each row</text>") != std::string::npos);
    for (const auto& label : hindi_rows) CHECK(count(group(svg, "row-labels"), ">" + label + "</text>") == 1);
    for (const auto& label : english_cols) CHECK(count(group(svg, "col-labels"), ">" + label + "</text>") == 1);
    CHECK(cell_fills(svg).size() == 12);
    CHECK(count(group(svg, "values"), "<text ") == 12);
    CHECK(svg.find(">0.90</text>") != std::string::npos);
    // the ends of the scale: viridis' first and last colours, from the table in svg.cpp
    CHECK(cell_fills(svg).front() == "#440154");
    CHECK(cell_fills(svg)[9] == "#fde725");
    CHECK(svg.find(">max 0.9000</text>") != std::string::npos);
    CHECK(svg.find(">min 0.0000</text>") != std::string::npos);
    CHECK(svg.find(">axis 0 · 3 rows</text>") != std::string::npos);
    CHECK(svg.find(">axis 1 · 4 columns</text>") != std::string::npos);
}

TEST_CASE("a heatmap's axis titles say what its rows and columns are, when the lesson says", "[svg]") {
    TensorRecord t = heatmap(matrix(3, 4), hindi_rows, english_cols);
    t.axes("target word", "source word");
    const std::string svg = heatmap_svg(t, "Lesson 2 · Attention weights · alpha");
    require_well_formed(svg);
    CHECK(svg.find(">target word</text>") != std::string::npos);
    CHECK(svg.find(">source word</text>") != std::string::npos);
    CHECK(svg.find("axis 0") == std::string::npos);
    CHECK(svg.find("axis 1") == std::string::npos);
}

TEST_CASE("a tensor without labels is labelled by index", "[svg]") {
    const std::string svg = heatmap_svg(heatmap(matrix(2, 3)), "t");
    CHECK(count(group(svg, "row-labels"), "<text ") == 2);
    CHECK(group(svg, "row-labels").find(">1</text>") != std::string::npos);
    CHECK(group(svg, "col-labels").find(">2</text>") != std::string::npos);
}

TEST_CASE("XML specials in labels, names and titles are escaped", "[svg]") {
    const std::string nasty = "a<b & \"c\" 'd'>";
    const std::string escaped = "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;";
    const std::string svg = heatmap_svg(heatmap(matrix(2, 2), {nasty, "<sos>"}, {"x&y", "]]>"}, "A<1>"), "T & <T>");
    require_well_formed(svg);
    CHECK(svg.find(nasty) == std::string::npos);
    CHECK(svg.find(">" + escaped + "</text>") != std::string::npos);
    CHECK(svg.find(">&lt;sos&gt;</text>") != std::string::npos);
    CHECK(svg.find(">x&amp;y</text>") != std::string::npos);
    CHECK(svg.find("]]&gt;") != std::string::npos);
    CHECK(svg.find("<title>T &amp; &lt;T&gt;</title>") != std::string::npos);
    CHECK(svg.find(">A&lt;1&gt; [2, 2] = softmax of each row</text>") != std::string::npos);
}

TEST_CASE("bytes that are not UTF-8 become U+FFFD and the file stays well-formed", "[svg]") {
    const std::string replacement = "\xEF\xBF\xBD";  // U+FFFD
    // a stray continuation byte, a lead byte cut short, an overlong '/', a UTF-16 surrogate,
    // a code point past U+10FFFF, a control character XML forbids, and a lone 0xFF
    const std::string bad =
        std::string("a\x80") + "b\xE0\xA4" + "c\xC0\xAF" + "d\xED\xA0\x80" + "e\xF4\x90\x80\x80" + "f\x01" + "g\xFF";
    const std::string svg = heatmap_svg(heatmap(matrix(2, 2), {bad, "लाइट"}, {"ok", "\xC3"}, "x\xFE"), "title \xFF");
    require_well_formed(svg);
    // one U+FFFD per byte that starts no valid sequence: "\xE0\xA4" is 2, "\xF4\x90\x80\x80" is 4
    const std::string r = replacement;
    CHECK(svg.find(">a" + r + "b" + r + r + "c" + r + r + "d" + r + r + r + "e" + r + r + r + r + "f" + r + "g" + r +
                   "</text>") != std::string::npos);
    CHECK(svg.find(">लाइट</text>") != std::string::npos);  // valid Devanagari passes untouched
    CHECK(svg.find("<title>title " + r + "</title>") != std::string::npos);
}

TEST_CASE("text widths count code points, not bytes", "[svg]") {
    // "लाइट" is 4 code points in 12 bytes: its column must be narrower than 12 Latin letters'
    const double devanagari = root_attribute(heatmap_svg(heatmap(matrix(1, 1), {"लाइट"}), "t"), "width");
    const double latin12 = root_attribute(heatmap_svg(heatmap(matrix(1, 1), {"abcdefghijkl"}), "t"), "width");
    const double latin4 = root_attribute(heatmap_svg(heatmap(matrix(1, 1), {"abcd"}), "t"), "width");
    CHECK(devanagari < latin12);
    CHECK(devanagari < latin4 + 15);
}

TEST_CASE("-inf cells are hatched and named in a legend; +inf and NaN have their own marks", "[svg]") {
    Array s = matrix(3, 3);
    s(0, 1) = s(0, 2) = s(1, 2) = -inf;  // a causal mask
    SECTION("masked") {
        const std::string svg = heatmap_svg(heatmap(s), "causal");
        require_well_formed(svg);
        const auto fills = cell_fills(svg);
        REQUIRE(fills.size() == 9);
        CHECK(std::count(fills.begin(), fills.end(), "url(#attn-minus-inf)") == 3);
        CHECK(svg.find("<pattern id=\"attn-minus-inf\"") != std::string::npos);
        CHECK(svg.find(">−∞ (masked)</text>") != std::string::npos);
        CHECK(count(group(svg, "values"), ">−∞</text>") == 3);
        // the scale spans the finite values only: 0.0 (top left) .. 0.8 (bottom right)
        CHECK(svg.find(">max 0.8000</text>") != std::string::npos);
        CHECK(svg.find(">min 0.0000</text>") != std::string::npos);
        CHECK(fills.front() == "#440154");
        CHECK(fills.back() == "#fde725");
        CHECK(svg.find("NaN") == std::string::npos);
        CHECK(svg.find("+∞") == std::string::npos);
        CHECK(svg.find("=\"inf") == std::string::npos);  // no coordinate computed from infinity
        CHECK(svg.find("=\"-inf") == std::string::npos);
        CHECK(svg.find("nan") == std::string::npos);
    }
    SECTION("+inf and NaN") {
        s(2, 0) = inf;
        s(2, 1) = std::nan("");
        const std::string svg = heatmap_svg(heatmap(s), "t");
        require_well_formed(svg);
        const auto fills = cell_fills(svg);
        CHECK(std::count(fills.begin(), fills.end(), "url(#attn-plus-inf)") == 1);
        CHECK(svg.find(">+∞</text>") != std::string::npos);
        CHECK(svg.find(">NaN (not a number)</text>") != std::string::npos);
        CHECK(svg.find("nan") == std::string::npos);
    }
    SECTION("nothing finite") {
        const std::string svg = heatmap_svg(heatmap(Array(xt::ones<double>({2, 2}) * -inf)), "t");
        require_well_formed(svg);
        CHECK(svg.find(">no finite values</text>") != std::string::npos);
        CHECK(svg.find("nan") == std::string::npos);
    }
}

TEST_CASE("rows of probabilities are drawn on the fixed scale 0 to 1, other tensors on their own range", "[svg]") {
    // weights between 0.2 and 0.3 (each row sums to 1): pale cells, not the whole ramp
    const Array weights{{0.2, 0.3, 0.25, 0.25}, {0.3, 0.2, 0.25, 0.25}};
    const std::string svg = heatmap_svg(heatmap(weights), "weights");
    require_well_formed(svg);
    CHECK(svg.find(">fixed scale 0 to 1: probabilities</text>") != std::string::npos);
    CHECK(svg.find(">max ") == std::string::npos);
    const Array scores = weights * 3.0;  // rows sum to 3, columns to 1.5: not probabilities
    const std::string own = heatmap_svg(heatmap(scores), "scores");
    CHECK(own.find(">max 0.9000</text>") != std::string::npos);
    CHECK(own.find("fixed scale") == std::string::npos);
    // on the fixed scale 0.3 is a third of the way, on its own range 0.9 is the top
    CHECK(cell_fills(svg)[1] != cell_fills(own)[1]);
}

TEST_CASE("a constant matrix is drawn in one colour without dividing by zero", "[svg]") {
    const std::string svg = heatmap_svg(heatmap(Array(xt::ones<double>({3, 4}) * 0.3)), "flat");
    require_well_formed(svg);
    const auto fills = cell_fills(svg);
    REQUIRE(fills.size() == 12);
    CHECK(std::set<std::string>(fills.begin(), fills.end()).size() == 1);
    // the middle of the scale, as the middle cell of 0, 0.5, 1 has it
    const Array ramp = xt::linspace<double>(0, 1, 3);
    CHECK(fills.front() == cell_fills(heatmap_svg(heatmap(ramp), "ramp"))[1]);
    CHECK(svg.find(">max 0.3000 (all equal)</text>") != std::string::npos);
    CHECK(svg.find(">min 0.3000</text>") != std::string::npos);
    CHECK(svg.find("nan") == std::string::npos);
}

TEST_CASE("a range as wide as the doubles spans the whole scale without overflow", "[svg]") {
    const double most = std::numeric_limits<double>::max();
    const std::string svg = heatmap_svg(heatmap(Array(xt::xarray<double>({-most, 0.0, most}))), "wide");
    CHECK(cell_fills(svg) == std::vector<std::string>{"#440154", cell_fills(svg)[1], "#fde725"});
    CHECK(cell_fills(svg)[1] != "#440154");
    CHECK(svg.find("nan") == std::string::npos);
}

TEST_CASE("a rank-1 tensor is one row labelled along its length; rank 0 is one cell", "[svg]") {
    const std::string svg =
        heatmap_svg(heatmap(Array(xt::linspace<double>(0, 1, 5)), {"a", "b", "c", "d", "e"}, {}, "w"), "t");
    require_well_formed(svg);
    CHECK(cell_fills(svg).size() == 5);
    CHECK(count(group(svg, "col-labels"), "<text ") == 5);
    CHECK(group(svg, "row-labels").find(">w</text>") != std::string::npos);
    CHECK(svg.find(">axis 0 · 5 elements</text>") != std::string::npos);
    CHECK(cell_fills(heatmap_svg(heatmap(Array(0.5)), "t")).size() == 1);
}

TEST_CASE("a tensor of rank 3 is drawn as its slices, one below the other", "[svg]") {
    Array heads = xt::zeros<double>({2, 3, 4});
    const std::string svg = heatmap_svg(heatmap(heads, {"head 1", "head 2"}, {"x", "y", "z"}), "t");
    require_well_formed(svg);
    CHECK(cell_fills(svg).size() == 24);
    CHECK(group(svg, "row-labels").find(">head 2 · z</text>") != std::string::npos);
    CHECK(count(svg, "class=\"slice-rule\"") == 1);
}

TEST_CASE("an empty tensor gives a valid document that says so", "[svg]") {
    const std::string svg = heatmap_svg(heatmap(Array(xt::zeros<double>({0, 3}))), "t");
    require_well_formed(svg);
    CHECK(svg.find("empty tensor") != std::string::npos);
}

TEST_CASE("a 64 x 64 matrix has no cell text and thinned labels that do not overlap", "[svg]") {
    std::vector<std::string> tokens;
    for (int i = 0; i < 64; ++i) tokens.push_back("token_" + std::to_string(i));
    const std::string svg = heatmap_svg(heatmap(matrix(64, 64), tokens, tokens), "big");
    require_well_formed(svg);
    CHECK(cell_fills(svg).size() == 64 * 64);
    CHECK(group(svg, "values").empty());
    const auto ys = text_ys(svg, "row-labels");
    REQUIRE(ys.size() >= 2);
    CHECK(ys.size() < 64);
    for (std::size_t k = 1; k < ys.size(); ++k) CHECK(ys[k] - ys[k - 1] >= 10 + 2);  // 10 px labels
    // columns are rotated and thinned; each label says how many are left out
    CHECK(group(svg, "col-labels").find("rotate(-45)") != std::string::npos);
    CHECK(count(group(svg, "col-labels"), "<text ") < 64);
    CHECK(svg.find("labelled</text>") != std::string::npos);
    // a thinned-out label is still in the tooltip of its cells
    CHECK(svg.find("<title>token_1 · token_3: ") != std::string::npos);
}

TEST_CASE("long labels are cut in the picture and kept whole in a tooltip", "[svg]") {
    const std::string long_label(60, 'x');
    const std::string svg = heatmap_svg(heatmap(matrix(2, 2), {long_label, "b"}), "t");
    require_well_formed(svg);
    CHECK(svg.find(">" + std::string(27, 'x') + "…<title>" + long_label + "</title></text>") != std::string::npos);
}

TEST_CASE("svg_file_name keeps [A-Za-z0-9_.-] and writes one '_' per other code point", "[svg]") {
    CHECK(svg_file_name(2, "weights", "alpha") == "02-weights-alpha.svg");
    CHECK(svg_file_name(12, "head-1", "A_1") == "12-head-1-A_1.svg");
    CHECK(svg_file_name(4, "causal", "S + M") == "04-causal-S___M.svg");
    CHECK(svg_file_name(1, "x/y", "लाइट") == "01-x_y-____.svg");  // 4 code points, 12 bytes
    CHECK(svg_file_name(1, "..", "a\xFF") == "01-..-a_.svg");
}

TEST_CASE("write_svgs writes every picture (heatmaps, plots, bars), uniquely named, in trace order", "[svg]") {
    Trace trace("demo", Config{});
    trace.step("weights", "Weights", "", "");
    trace.tensor("E", "scores", matrix(2, 2));  // numbers only: no picture
    trace.tensor("A", "", matrix(2, 2), {}, {}, View::heatmap);
    trace.tensor("a", "", matrix(2, 2), {}, {}, View::heatmap);  // the same name but for case
    trace.tensor("A?", "", matrix(2, 2), {}, {}, View::heatmap);
    trace.tensor("A_", "", matrix(2, 2), {}, {}, View::heatmap);  // "A?" has taken its name
    trace.tensor("a?", "", matrix(2, 2), {}, {}, View::heatmap);  // and "A_" the next one
    trace.step("other", "Other", "", "");
    trace.tensor("bars", "", Array(xt::ones<double>({3})), {}, {}, View::bars);
    trace.tensor("wide", "", matrix(3, 2), {}, {}, View::bars);  // bars of two columns: no picture
    trace.tensor("curve", "", matrix(3, 2), {}, {}, View::plot);

    const fs::path dir = temp_dir("write") / "nested" / "svg";
    const auto written = write_svgs(trace, 2, dir);
    std::vector<std::string> names;
    for (const auto& p : written) names.push_back(p.filename().string());
    CHECK(names == std::vector<std::string>{"02-weights-A.svg", "02-weights-a-2.svg", "02-weights-A_.svg",
                                            "02-weights-A_-2.svg", "02-weights-a_-3.svg", "02-other-bars.svg",
                                            "02-other-curve.svg"});
    std::size_t files = 0;
    for (const auto& entry : fs::directory_iterator(dir)) files += entry.path().extension() == ".svg";
    CHECK(files == 7);  // and no temporary file left behind
    CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 7);
    REQUIRE(written.size() == 7);
    CHECK(written[0].parent_path() == dir);
    CHECK(read_file(written[1]) == heatmap_svg(trace.steps()[0].tensors[2], "Lesson 2 · Weights · a"));  // the step's title
    CHECK(read_file(written[5]) == bars_svg(trace.steps()[1].tensors[0], "Lesson 2 · Other · bars"));
    CHECK(read_file(written[6]) == plot_svg(trace.steps()[1].tensors[2], "Lesson 2 · Other · curve"));

    // a second run overwrites the same files
    CHECK(write_svgs(trace, 2, dir) == written);
    fs::remove_all(dir.parent_path().parent_path());
}

TEST_CASE("write_svgs names the path it cannot write", "[svg]") {
    Trace trace("demo", Config{});
    trace.step("s", "S", "", "");
    trace.tensor("A", "", matrix(2, 2), {}, {}, View::heatmap);
    const fs::path base = temp_dir("errors");
    fs::create_directories(base);
    const fs::path file = base / "not_a_directory";
    std::ofstream(file) << "x";

    const auto message = [&](const fs::path& dir) -> std::string {
        try {
            write_svgs(trace, 1, dir);
        } catch (const std::runtime_error& e) {
            return e.what();
        }
        return "(no error)";
    };
    SECTION("the directory is a file") {
        const std::string m = message(file);
        CHECK_THAT(m, Catch::Contains(file.string()) && Catch::Contains("not a directory"));
    }
    SECTION("a parent is a file") {
        const std::string m = message(file / "svg");
        CHECK_THAT(m, Catch::Contains((file / "svg").string()));
    }
    fs::remove_all(base);
}

}  // namespace test_svg

namespace test_svg {

namespace {

TensorRecord curves(Array value, std::vector<std::string> rows, std::vector<std::string> cols) {
    TensorRecord t;
    t.name = "losses";
    t.equation = "nats per word";
    t.value = std::move(value);
    t.rows = std::move(rows);
    t.cols = std::move(cols);
    t.view = View::plot;
    return t;
}

// The texts of <text> elements inside the group of class `cls`.
std::vector<std::string> texts_of(const std::string& svg, const std::string& cls) {
    const std::string g = group(svg, cls);
    std::vector<std::string> out;
    for (std::size_t at = g.find("<text"); at != std::string::npos; at = g.find("<text", at + 1)) {
        const std::size_t start = g.find('>', at) + 1;
        out.push_back(g.substr(start, g.find("</text>", start) - start));
    }
    return out;
}

}  // namespace

TEST_CASE("a line plot draws every series with its name, on the terminal's axes", "[svg]") {
    // four series over doubling x: log2 spacing on x; values spanning four decades: log y
    Array v = xt::zeros<double>({5, 4});
    for (std::size_t r = 0; r < 5; ++r)
        for (std::size_t c = 0; c < 4; ++c) v(r, c) = std::pow(10.0, -static_cast<double>(r)) * static_cast<double>(c + 1);
    const std::string svg = plot_svg(curves(v, {"T=4", "T=8", "T=16", "T=32", "T=64"},
                                            {"without, train", "without, test", "with <train>", "with & test"}),
                                     "Lesson 9 · The loss curves · losses");
    require_well_formed(svg);
    CHECK(count(svg, "<polyline") == 4);
    CHECK(count(svg, "<g class=\"series\"") == 4);
    const auto legend = texts_of(svg, "legend");
    REQUIRE(legend.size() == 5);
    CHECK(legend[0] == "without, train");
    CHECK(legend[2] == "with &lt;train&gt;");
    CHECK(legend[3] == "with &amp; test");
    CHECK(legend[4] == "x: T, doubling (log2 spacing) · y: log scale");
    CHECK(texts_of(svg, "x-ticks") == std::vector<std::string>{"4", "8", "16", "32", "64"});
    const auto y = texts_of(svg, "y-ticks");
    CHECK(std::find(y.begin(), y.end(), "0.0001") != y.end());
    CHECK(std::find(y.begin(), y.end(), "1") != y.end());
    // the same points at equal x distances, as log2 spacing puts doubling values
    const auto xs = attributes(group(svg, "x-ticks"), "<line", "x1");
    REQUIRE(xs.size() == 5);
    CHECK(std::stod(xs[2]) - std::stod(xs[1]) == Approx(std::stod(xs[1]) - std::stod(xs[0])).margin(0.11));
}

TEST_CASE("a line plot breaks a series where a value is not finite and names its row labels as ticks", "[svg]") {
    Array v = {{1.0, 2.0}, {std::nan(""), 3.0}, {2.0, inf}, {3.0, 1.0}};
    const std::string svg = plot_svg(curves(v, {"epoch 0", "epoch 1", "epoch 2", "epoch 3"}, {"a", "b"}), "t");
    require_well_formed(svg);
    // series a: points 0 | 2, 3 (one line: 2-3); series b: 0, 1 | 3 (one line: 0-1)
    CHECK(count(svg, "<polyline") == 2);
    CHECK(texts_of(svg, "x-ticks").front() == "epoch 0");
    CHECK(svg.find(">epoch</text>") != std::string::npos);  // the x title: the labels' shared word
    CHECK(texts_of(svg, "legend").back() == "x: rows in order · y: linear scale");
    // more than six columns: the first six, said so
    const std::string wide = plot_svg(curves(matrix(3, 8), {}, {}), "t");
    CHECK(count(wide, "<g class=\"series\"") == 6);
    CHECK(texts_of(wide, "legend").back().find("first 6 of 8 columns") != std::string::npos);
    CHECK(plot_svg(curves(Array{{std::nan(""), inf}}, {}, {}), "t").find("no finite values") != std::string::npos);
}

TEST_CASE("a bar chart draws one bar per element from zero, names non-finite values and escapes labels", "[svg]") {
    TensorRecord t;
    t.name = "alpha_1";
    t.value = Array{0.5, -0.25, std::nan(""), 1.0};
    t.rows = {"turn", "<off>", "the", "लाइट"};
    t.view = View::bars;
    const std::string svg = bars_svg(t, "Lesson 2 · first word · alpha_1");
    require_well_formed(svg);
    CHECK(count(group(svg, "bars"), "<rect") == 3);  // no bar for NaN
    const auto texts = texts_of(svg, "bars");
    CHECK(std::find(texts.begin(), texts.end(), "&lt;off&gt;") != texts.end());
    CHECK(std::find(texts.begin(), texts.end(), "लाइट") != texts.end());
    CHECK(std::find(texts.begin(), texts.end(), "nan") != texts.end());
    CHECK(std::find(texts.begin(), texts.end(), "-0.2500") != texts.end());
    // the negative bar ends left of the zero line, the positive ones start on it
    const auto xs = attributes(group(svg, "bars"), "<rect", "x");
    const auto zero = attributes(svg.substr(svg.find("class=\"zero\"") - 6), "<line", "x1");
    REQUIRE(xs.size() == 3);
    REQUIRE(!zero.empty());
    CHECK(std::stod(xs[0]) == Approx(std::stod(zero[0])));
    CHECK(std::stod(xs[1]) < std::stod(zero[0]));
    // whole numbers without decimals; inline pictures without the XML declaration and with their own ids
    t.value = Array{3.0, 1.0, 0.0, 2.0};
    CHECK(bars_svg(t, "t").find(">3</text>") != std::string::npos);
    SvgOptions inline_picture;
    inline_picture.standalone = false;
    inline_picture.ids = "p7";
    const std::string inside = heatmap_svg(heatmap(Array{{-inf, 1.0}}), "t", inline_picture);
    CHECK(inside.rfind("<svg ", 0) == 0);
    CHECK(inside.find("id=\"p7-scale\"") != std::string::npos);
    CHECK(inside.find("url(#p7-minus-inf)") != std::string::npos);
    CHECK(inside.find("attn-") == std::string::npos);
}

TEST_CASE("the x ticks of a plot whose rows run right to left are labelled like any others (issue 44)", "[svg]") {
    // lesson 8's fd_curve: h = 1e-01, 1e-02, ..., 1e-10 down the rows, on a log x axis; before, the
    // labels were taken in row order, each left of the one before, so only the first was shown
    std::vector<std::string> h;
    Array v = xt::zeros<double>({10, 2});
    for (std::size_t r = 0; r < 10; ++r) {
        h.push_back(fmt::format("{:.0e}", std::pow(10.0, -static_cast<double>(r + 1))));
        v(r, 0) = std::pow(10.0, -static_cast<double>(r));
        v(r, 1) = std::pow(10.0, -static_cast<double>(9 - r));
    }
    TensorRecord t = curves(v, h, {"|error|", "eps |L| / h"});
    t.name = "fd_curve";
    const std::string svg = plot_svg(t, "Lesson 8 · fd_curve");
    require_well_formed(svg);
    const auto ticks = texts_of(svg, "x-ticks");
    CHECK(ticks.size() >= 5);  // a label at least every other decade of the nine
    // left to right: from 1e-10 up to 1e-01, every label at its own place
    const auto xs = attributes(group(svg, "x-ticks"), "<text", "x");
    REQUIRE(xs.size() == ticks.size());
    for (std::size_t k = 1; k < xs.size(); ++k) CHECK(std::stod(xs[k]) > std::stod(xs[k - 1]) + 20);
    CHECK(ticks.front() == "1e-10");
    CHECK(ticks.back() == "1e-01");
}

TEST_CASE("a bar chart draws a row that repeats the one before it once (issue 44)", "[svg]") {
    // lesson 12's schedule: its fourth warm-up length and its last step are both step 400
    TensorRecord t;
    t.name = "learning_rate";
    t.value = Array{0.0002, 0.0177, 0.0088, 0.0088, 0.0050};
    t.rows = {"step 1", "step 100", "step 400", "step 400", "step 900"};
    t.view = View::bars;
    const std::string svg = bars_svg(t, "Lesson 12 · schedule · learning_rate");
    require_well_formed(svg);
    const auto texts = texts_of(svg, "bars");
    CHECK(std::count(texts.begin(), texts.end(), "step 400") == 1);
    CHECK(std::count(texts.begin(), texts.end(), "step 900") == 1);
    CHECK(count(group(svg, "bars"), "<rect") == 4);
    // the same label with another value is another row, drawn
    t.value = Array{0.0002, 0.0177, 0.0088, 0.0087, 0.0050};
    const auto both = texts_of(bars_svg(t, "t"), "bars");
    CHECK(std::count(both.begin(), both.end(), "step 400") == 2);
}

TEST_CASE("a colour bar's ends are its numbers; the fixed scale is said once, not split across them (issue 44)",
          "[svg]") {
    const std::string svg = heatmap_svg(heatmap(Array{{0.25, 0.75}, {0.5, 0.5}}), "weights");
    require_well_formed(svg);
    const auto bar = texts_of(svg, "colour-bar");
    REQUIRE(bar.size() == 3);
    CHECK(bar[0] == "1");
    CHECK(bar[1] == "0");
    CHECK(bar[2] == "fixed scale 0 to 1: probabilities");
    // below the bar, not beside its top or bottom end
    const auto ys = text_ys(svg, "colour-bar");
    CHECK(ys[2] > ys[1]);
    for (const auto& text : bar) CHECK(text.find('(') == std::string::npos);
}

TEST_CASE("every picture has a dark palette: in its own <style> when standalone, from the page inline", "[svg]") {
    TensorRecord bars;
    bars.name = "b";
    bars.value = Array{1.0, -2.0};
    bars.view = View::bars;
    const std::vector<std::string> pictures = {
        heatmap_svg(heatmap(Array{{-inf, 1.0}, {2.0, 3.0}}), "h"),
        plot_svg(curves(Array{{1.0, 2.0}, {3.0, 4.0}}, {"1", "2"}, {"a", "b"}), "p"), bars_svg(bars, "b")};
    for (const std::string& svg : pictures) {
        require_well_formed(svg);
        CHECK(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" class=\"fig\"") != std::string::npos);
        CHECK(svg.find("<style>\n@media (prefers-color-scheme: dark)") != std::string::npos);
        CHECK(svg.find("<rect class=\"bg\" ") != std::string::npos);
    }
    const std::string css(svg_dark_css());
    CHECK(css.find("svg.fig .bg { fill: #1c1f24; }") != std::string::npos);
    // the hatching of masked cells and every series' line and marker have a dark colour by class
    CHECK(pictures[0].find("<rect class=\"hatch-bg\"") != std::string::npos);
    CHECK(pictures[1].find("<polyline class=\"k1\"") != std::string::npos);
    CHECK(pictures[1].find("<rect class=\"f1\"") != std::string::npos);
    CHECK(pictures[2].find("<rect class=\"neg\"") != std::string::npos);
    for (const std::string cls : {".k0", ".f0", ".k5", ".f5", ".neg", ".pos", ".hatch-bg", ".title", ".x-ticks"})
        CHECK(css.find("svg.fig " + cls) != std::string::npos);
    SvgOptions inline_picture;
    inline_picture.standalone = false;
    CHECK(heatmap_svg(heatmap(Array{{1.0, 2.0}}), "t", inline_picture).find("<style>") == std::string::npos);
}

}  // namespace test_svg
