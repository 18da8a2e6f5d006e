// Tests for core/render: exact text with colour off, display widths, alignment of
// Devanagari labels, summarising, number formatting and colour escapes.
#include "core/render.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_render {

using namespace attn;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::string> lines_starting_with(const std::string& text, const std::string& prefix) {
    std::vector<std::string> found;
    for (const auto& line : lines_of(text))
        if (line.rfind(prefix, 0) == 0) found.push_back(line);
    return found;
}

// The part of a table line before its first number: indent, label and padding.
std::string prefix_before_number(const std::string& line, const std::string& label) {
    const std::size_t after_label = line.find(label) + label.size();
    return line.substr(0, line.find_first_not_of(' ', after_label));
}

bool has_escape(const std::string& text) { return text.find('\x1b') != std::string::npos; }

const std::vector<std::string> hindi_rows = {"लाइट", "बंद", "करो"};
const std::vector<std::string> english_cols = {"turn", "off", "the", "lights"};

// Attention-like weights over "turn off the lights" for the queries "लाइट बंद करो".
TensorRecord hindi_heatmap() {
    return TensorRecord{"alpha", "softmax_j(e_ij)",
                        Array{{0.70, 0.10, 0.05, 0.15}, {0.05, 0.80, 0.05, 0.10}, {0.60, 0.20, 0.05, 0.15}},
                        hindi_rows, english_cols, View::heatmap};
}

TensorRecord grid_30x30() {
    Array value = Array::from_shape({30, 30});
    for (std::size_t i = 0; i < 30; ++i)
        for (std::size_t j = 0; j < 30; ++j) value(i, j) = 100.0 * i + j + 0.25;
    return TensorRecord{"big", "", value, {}, {}, View::heatmap};
}

}  // namespace

TEST_CASE("a labelled 2x3 matrix renders exactly", "[render]") {
    const TensorRecord e{"e", "e_ij = q_i · k_j", Array{{1.5, -0.25, 0.0}, {-10.125, 3.0, 0.0001}},
                         {"a", "bb"}, {"x", "long", "z"}, View::numbers};
    // Cells are 8 wide ("-10.1250"), labels padded to 2 ("bb"), two spaces between columns.
    const std::string expected = R"(e  [2, 3]  = e_ij = q_i · k_j
             x      long         z
  a     1.5000   -0.2500    0.0000
  bb  -10.1250    3.0000    0.0001
)";
    CHECK(render_tensor(e, RenderOptions{}) == expected);
}

TEST_CASE("scalars and vectors render exactly", "[render]") {
    SECTION("a scalar has shape [] and one indented number") {
        const TensorRecord s{"scale", "1 / sqrt(d_k)", Array(0.5), {}, {}, View::numbers};
        CHECK(render_tensor(s, RenderOptions{}) == "scale  []  = 1 / sqrt(d_k)\n  0.5000\n");
    }
    SECTION("an unlabelled vector is one row") {
        const TensorRecord v{"b", "", Array{0.1, -0.2, 0.3}, {}, {}, View::numbers};
        CHECK(render_tensor(v, RenderOptions{}) == "b  [3]\n   0.1000  -0.2000   0.3000\n");
    }
    SECTION("a labelled vector is a column") {
        const TensorRecord v{"z", "", Array{0.25, -1.0}, {"t=1", "t=2"}, {}, View::numbers};
        CHECK(render_tensor(v, RenderOptions{}) == "z  [2]\n  t=1   0.2500\n  t=2  -1.0000\n");
    }
}

TEST_CASE("a drawn parameter is one summary line unless --show-params", "[render]") {
    // entries 1, 2, 3, 6: mean 3, population sd sqrt(((-2)^2 + (-1)^2 + 0 + 3^2) / 4) = sqrt(3.5) = 1.87
    TensorRecord w{"W", "weights", Array{{1.0, 2.0}, {3.0, 6.0}}, {}, {}, View::numbers};
    w.drawn = true;
    CHECK(render_tensor(w, RenderOptions{}) ==
          "W  [2, 2]  = weights\n  drawn: mean 3, sd 1.87, from 1 to 6; --show-params prints all 4\n");
    RenderOptions full;
    full.show_params = true;
    CHECK(render_tensor(w, full) == "W  [2, 2]  = weights\n  1  2\n  3  6\n");
    SECTION("a constant one says so instead of a zero spread") {
        TensorRecord b{"b_z", "bias", Array{2.0, 2.0, 2.0}, {}, {}, View::numbers};
        b.drawn = true;
        CHECK(render_tensor(b, RenderOptions{}) == "b_z  [3]  = bias\n  all 3 entries 2; --show-params prints them\n");
    }
    SECTION("a tensor that is not drawn is printed in full whatever the option") {
        w.drawn = false;
        CHECK(render_tensor(w, RenderOptions{}) == render_tensor(w, full));
    }
}

TEST_CASE("display_width counts terminal columns, not bytes", "[render]") {
    CHECK(display_width("") == 0);
    CHECK(display_width("attention") == 9);
    CHECK(display_width("लाइट") == 4);  // ा is a spacing vowel sign: 1 column
    CHECK(display_width("बंद") == 2);   // anusvara ं does not advance
    CHECK(display_width("करो") == 3);   // ो is a spacing vowel sign
    CHECK(display_width("e\u0301") == 1);
    CHECK(display_width("中") == 2);
    CHECK(display_width("a中b") == 4);
    SECTION("invalid UTF-8 counts one column per byte and never reads past the end") {
        CHECK(display_width("\xff") == 1);
        CHECK(display_width("\xc0\xaf") == 2);     // overlong '/'
        CHECK(display_width("a\xe0\x80") == 3);    // truncated 3-byte sequence
        CHECK(display_width("\xe4\xb8") == 2);     // 中 cut short at the end of the string
        CHECK(display_width("\xed\xa0\x80") == 3);  // UTF-16 surrogate
    }
}

TEST_CASE("pad fills to a display width and never truncates", "[render]") {
    CHECK(pad("बंद", 4) == "बंद  ");
    CHECK(pad("बंद", 4, true) == "  बंद");
    CHECK(pad("lights", 3) == "lights");
}

TEST_CASE("format_number follows numpy's fixed and scientific choices", "[render]") {
    CHECK(format_number(0.12345, 4) == "0.1235");
    CHECK(format_number(-1.0, 4) == "-1.0000");
    CHECK(format_number(-0.0, 4) == "0.0000");
    CHECK(format_number(0.0, 2) == "0.00");
    // Small non-zero values stay visible instead of rounding to 0.0000.
    CHECK(format_number(-0.00001, 4) == "-1.0000e-05");
    CHECK(format_number(3e-9, 4) == "3.0000e-09");
    CHECK(format_number(1e7, 4) == "1.0000e+07");
    CHECK(format_number(12345678.0, 4) == "1.2346e+07");
    CHECK(format_number(999999.0, 1) == "999999.0");
    CHECK(format_number(std::numeric_limits<double>::infinity(), 4) == "inf");
    CHECK(format_number(-std::numeric_limits<double>::infinity(), 4) == "-inf");
    CHECK(format_number(std::nan(""), 4) == "nan");
}

TEST_CASE("Devanagari row labels stay aligned", "[render]") {
    const std::string text = render_tensor(hindi_heatmap(), RenderOptions{});
    std::vector<std::size_t> number_prefixes, number_widths, grid_widths;
    for (const auto& label : hindi_rows) {
        const auto lines = lines_starting_with(text, "  " + label);
        REQUIRE(lines.size() == 2);  // one line of numbers, one line of the grid
        number_prefixes.push_back(display_width(prefix_before_number(lines[0], label)));
        number_widths.push_back(display_width(lines[0]));
        grid_widths.push_back(display_width(lines[1]));
    }
    for (std::size_t r = 1; r < hindi_rows.size(); ++r) {
        CHECK(number_prefixes[r] == number_prefixes[0]);
        CHECK(number_widths[r] == number_widths[0]);
        CHECK(grid_widths[r] == grid_widths[0]);
    }
    // Label column (4) + two spaces + four cells as wide as the longest column label ("lights") plus one.
    CHECK(grid_widths[0] == 2 + 4 + 2 + 4 * 7);
    CHECK(text.find("           turn    off    the lights\n") != std::string::npos);  // the words above the cells
    CHECK(text.find("1 turn") == std::string::npos);  // so no numbered legend
    CHECK(text.find("scale: ░ 0 … █ 1, fixed (probabilities)") != std::string::npos);  // alpha's rows
}

TEST_CASE("a heatmap of probabilities is shaded on the fixed scale 0 to 1", "[render]") {
    // lesson 1's P: rows of weights between 0.14 and 0.26, which the own range would paint from
    // blank to solid
    Trace trace("demo", Config{});
    trace.step("p", "P", "", "");
    trace.tensor("P", "", Array{{0.14, 0.26, 0.3, 0.3}, {0.26, 0.14, 0.3, 0.3}}, {}, {}, View::heatmap);
    RenderOptions opt;
    opt.color = false;
    const std::string text = render_tensor(trace.steps()[0].tensors[0], opt);
    CHECK(text.find("scale: ░ 0 … █ 1, fixed (probabilities)") != std::string::npos);
    CHECK(text.find("█") == text.find("█ 1, fixed"));  // no solid cell: 0.3 is far from 1
    // the same weights one column per query (as lessons 2 and 3 show them): columns sum to 1
    trace.tensor("P_T", "", Array{{0.14, 0.26}, {0.26, 0.14}, {0.3, 0.3}, {0.3, 0.3}}, {}, {}, View::heatmap);
    CHECK_THAT(render_tensor(trace.steps()[0].tensors[1], opt), Catch::Contains("fixed (probabilities)"));
    // scores are not probabilities: their own range, said so
    trace.tensor("S", "", Array{{-1.0, 2.0}, {0.5, 0.0}}, {}, {}, View::heatmap);
    CHECK_THAT(render_tensor(trace.steps()[0].tensors[2], opt),
               Catch::Contains("scale of this tensor's own range: ░ low = -1.0000 … █ high = 2.0000"));
}

TEST_CASE("large tensors are summarised, never cut silently", "[render]") {
    const std::string text = render_tensor(grid_30x30(), RenderOptions{});
    const auto lines = lines_of(text);
    // Header, 6 + 1 + 6 number rows, 13 grid rows, the scale line.
    CHECK(lines.size() <= 30);
    const std::string first_row = lines.at(1), ellipsis_row = lines.at(7);
    CHECK(first_row.find("0.2500") != std::string::npos);
    CHECK(first_row.find("29.2500") != std::string::npos);
    CHECK(first_row.find("…") != std::string::npos);  // the hidden columns
    CHECK(ellipsis_row.find("0.") == std::string::npos);
    CHECK(ellipsis_row.find("…") != std::string::npos);  // the hidden rows
    CHECK(text.find("2900.2500") != std::string::npos);
    CHECK(text.find("2929.2500") != std::string::npos);
    CHECK(text.find("1500.2500") == std::string::npos);  // row 15 is hidden
    CHECK(text.find("15.2500") == std::string::npos);    // column 15 is hidden
}

TEST_CASE("rank-3 tensors are shown slice by slice", "[render]") {
    Array heads = Array::from_shape({2, 2, 2});
    for (std::size_t k = 0; k < heads.size(); ++k) heads.flat(k) = 0.5 * static_cast<double>(k);
    const TensorRecord t{"A", "", heads, {"head 1", "head 2"}, {"q1", "q2"}, View::numbers};
    const std::string expected = R"(A  [2, 2, 2]
  [0, :, :]  head 1
    q1  0.0000  0.5000
    q2  1.0000  1.5000
  [1, :, :]  head 2
    q1  2.0000  2.5000
    q2  3.0000  3.5000
)";
    CHECK(render_tensor(t, RenderOptions{}) == expected);
}

TEST_CASE("bar charts scale the largest magnitude to 40 columns", "[render]") {
    const TensorRecord t{"w", "", Array{1.0, -0.5, 0.0}, {"लाइट", "बंद", "करो"}, {}, View::bars};
    const auto bars = lines_starting_with(render_tensor(t, RenderOptions{}), "  ");
    REQUIRE(bars.size() == 6);  // three lines of numbers, three bars
    std::string full_bar;
    for (int i = 0; i < 40; ++i) full_bar += "█";
    CHECK(bars[3] == "  लाइट  " + full_bar + "   1.0000");
    CHECK(bars[4].find("  बंद    ████████████████████  ") == 0);  // half of 40
    CHECK(bars[4].find("-0.5000") != std::string::npos);
    CHECK(display_width(bars[3]) == display_width(bars[4]));
    CHECK(display_width(bars[4]) == display_width(bars[5]));
}

TEST_CASE("colour escapes appear only when colour is on", "[render]") {
    RenderOptions plain;
    RenderOptions colored;
    colored.color = true;
    const Step step{"scores", "Alignment scores", "e_ij = a(s_{i-1}, h_j)",
                    "How well the input around j matches the output at i.",
                    {hindi_heatmap(), grid_30x30()},
                    {CheckRecord{"rows of alpha sum to 1", 2.2e-16, 1e-12, true}}};
    CHECK_FALSE(has_escape(render_step(step, 1, 3, plain)));
    CHECK(has_escape(render_tensor(hindi_heatmap(), colored)));
    CHECK(has_escape(render_step(step, 1, 3, colored)));
}

TEST_CASE("use_color honours the mode", "[render]") {
    CHECK(use_color(ColorMode::always, false));
    CHECK_FALSE(use_color(ColorMode::never, true));
    CHECK_FALSE(use_color(ColorMode::auto_, false));
}

TEST_CASE("checks show their verdict and numbers", "[render]") {
    const RenderOptions opt;
    CHECK(render_check(CheckRecord{"rows of alpha sum to 1", 2.2e-16, 1e-12, true}, opt) ==
          "  ✓ rows of alpha sum to 1  (max |error| 2.2e-16 <= tolerance 1e-12)\n");
    CHECK(render_check(CheckRecord{"the closed form holds", 0.3, 1e-12, false}, opt) ==
          "  ✗ the closed form holds  (max |error| 0.3 > tolerance 1e-12)\n");
    CHECK(render_check(CheckRecord{"nan is caught", std::nan(""), 1e-12, false}, opt).find("✗") !=
          std::string::npos);
}

TEST_CASE("a step has a 78-column rule naming its id, and wrapped text", "[render]") {
    std::string explanation;
    for (int i = 0; i < 30; ++i) explanation += "attention ";
    explanation += "\nसंदर्भ वेक्टर";
    const Step step{"encoder", "The encoder GRU", "h_t = GRU(x_t, h_{t-1})", explanation, {}, {}};
    const auto lines = lines_of(render_step(step, 2, 5, RenderOptions{}));
    REQUIRE(lines.size() >= 5);
    CHECK(lines[0].rfind("── Step 2/5 · The encoder GRU ", 0) == 0);
    CHECK(lines[0].find("[encoder]") != std::string::npos);
    CHECK(display_width(lines[0]) == 78);
    CHECK(lines[1] == "  h_t = GRU(x_t, h_{t-1})");
    CHECK(lines[2].empty());
    for (std::size_t i = 3; i < lines.size(); ++i) CHECK(display_width(lines[i]) <= 78);
    CHECK(lines.back() == "  संदर्भ वेक्टर");  // the explicit '\n' starts a new line
}

TEST_CASE("a step's export-only data is one summary line, never its numbers", "[render]") {
    Step step{"corpus", "The corpus", "", "", {}, {}};
    step.tensors.push_back(TensorRecord{"lengths", "", Array{3.0, 5.0}, {}, {}, View::numbers});
    const auto data = [&](const std::string& name, Array value) {
        step.tensors.push_back(TensorRecord{name, "", std::move(value), {}, {}, View::numbers});
        step.tensors.back().export_only = true;
    };
    data("train_src", Array{{123456.0, 2.0, -1.0}, {4.0, 5.0, 6.0}});
    data("words", Array{0.0, 1.0});
    // the summary's lines joined again (it is wrapped at 78 columns like an explanation)
    const auto unwrapped = [](std::string text) {
        for (std::size_t at; (at = text.find("\n  ")) != std::string::npos;) text.replace(at, 3, " ");
        return text;
    };
    const std::string text = render_step(step, 1, 1, RenderOptions{});
    INFO(text);
    CHECK_THAT(text, Catch::Contains("lengths  [2]"));  // the other tensors as ever
    CHECK_THAT(unwrapped(text), Catch::Contains(" Export-only data, not shown: 2 tensors of 8 numbers in all "
                                                "(train_src 2x3, words 2); attn export writes them.\n"));
    CHECK(text.find("123456") == std::string::npos);
    CHECK(text.find("train_src  [") == std::string::npos);
    SECTION("more than six are named by the first three and the last") {
        for (int k = 0; k < 6; ++k) data("w" + std::to_string(k), Array{{1.0, 2.0}});
        const std::string many = render_step(step, 1, 1, RenderOptions{});
        CHECK_THAT(unwrapped(many), Catch::Contains("8 tensors of 20 numbers in all (train_src 2x3, words 2, w0 1x2, …, w5 1x2)"));
        for (const auto& line : lines_of(many)) CHECK(display_width(line) <= 78);
    }
}

TEST_CASE("tensors of whole numbers (token ids, counts) are shown without decimals", "[render]") {
    const TensorRecord ids{"ids", "", Array{{12.0, 3.0}, {-4.0, 0.0}}, {}, {}, View::numbers};
    CHECK(render_tensor(ids, RenderOptions{}) == "ids  [2, 2]\n  12   3\n  -4   0\n");
    const TensorRecord mixed{"m", "", Array{12.0, 0.5}, {}, {}, View::numbers};
    CHECK(render_tensor(mixed, RenderOptions{}).find("12.0000") != std::string::npos);
}

namespace {

// Times that double (a) and quadruple (b) with T: a log-log plot shows two straight lines.
TensorRecord doubling_times() {
    return TensorRecord{"time", "ms", Array{{1.0, 1.0}, {2.0, 4.0}, {4.0, 16.0}, {8.0, 64.0}},
                        {"T=1", "T=2", "T=4", "T=8"}, {"a", "b"}, View::plot};
}

}  // namespace

TEST_CASE("a plot view draws a line plot under the numbers, exactly", "[render][plot]") {
    RenderOptions opt;
    opt.line_width = 48;
    const auto lines = lines_of(render_tensor(doubling_times(), opt));
    // Reviewed by eye: x doubles, so T = 1, 2, 4, 8 sit equally far apart; y spans a factor 64, so
    // decades 1, 10, 100 are equally far apart and both series are straight, b twice as steep.
    // The first points coincide ("@"); "·" joins the points of a series.
    const std::vector<std::string> expected = {
        "time  [4, 2]  = ms",
        "        a   b",
        "  T=1   1   1",
        "  T=2   2   4",
        "  T=4   4  16",
        "  T=8   8  64",
        "  100 ┤",
        "      │                                     ··*",
        "      │                                 ····",
        "      │                             ····",
        "      │                         ·*··",
        "      │                      ···",
        "   10 ┤                   ···              ···o",
        "      │                ···           ······",
        "      │            ··*·     ·····o···",
        "      │        ······o······",
        "      │    ·······",
        "    1 ┤ @···",
        "      └─┬────────────┬───────────┬────────────┬─",
        "        1            2           4            8",
        "  o a · * b · @ several",
        "  x: T, doubling (log2 spacing) · y: log scale",
    };
    CHECK(lines == expected);
    for (const auto& line : lines) CHECK(display_width(line) <= 48);
}

TEST_CASE("a plot without numeric labels uses row numbers and a linear scale; NaN breaks a line", "[render][plot]") {
    const TensorRecord t{"lin", "", Array{{0.5, 1.5}, {1.0, 1.25}, {std::nan(""), 1.0}, {2.0, 0.75}, {2.5, 0.5}},
                         {"a", "b", "c", "d", "e"}, {"up", "down"}, View::plot};
    const std::string text = render_tensor(t, RenderOptions{});
    const auto lines = lines_of(text);
    CHECK_THAT(text, Catch::Contains("  o up · * down · x: row · y: linear scale\n"));
    CHECK(lines_starting_with(text, "  2.5 ┤").size() == 1);  // ticks in steps of 0.5
    CHECK(lines_starting_with(text, "  0.5 ┤ o").size() == 1);
    for (const auto& line : lines) CHECK(display_width(line) <= 78);
    // "up" has no value in row 3: nothing is drawn between its points at x = 2 and x = 4
    const auto at_two = lines_starting_with(text, "  1.0 ┤");
    REQUIRE(at_two.size() == 1);
    CHECK(at_two[0].find("o    ") != std::string::npos);
}

TEST_CASE("plots stay within the line width, and colour only when asked", "[render][plot]") {
    RenderOptions opt;
    const std::string plain = render_tensor(doubling_times(), opt);
    CHECK(plain == render_tensor(doubling_times(), opt));  // deterministic
    CHECK_FALSE(has_escape(plain));
    for (const auto& line : lines_of(plain)) CHECK(display_width(line) <= 78);
    opt.color = true;
    const std::string coloured = render_tensor(doubling_times(), opt);
    CHECK(has_escape(coloured));
    CHECK_THAT(coloured, Catch::Contains("\x1b[34mo\x1b[0m a"));

    SECTION("a single point, and no finite value at all") {
        const TensorRecord one{"one", "", Array(Mat{{3.0}}), {"T=64"}, {"only"}, View::plot};
        CHECK_THAT(render_tensor(one, RenderOptions{}), Catch::Contains("  3 ┤") && Catch::Contains("x: T ·"));
        const TensorRecord none{"none", "", Array(Mat{{std::nan("")}}), {}, {}, View::plot};
        CHECK_THAT(render_tensor(none, RenderOptions{}), Catch::EndsWith("  plot: no finite values\n"));
    }
}

}  // namespace test_render

namespace test_render_formats {

TEST_CASE("one number format per table: scientific for all when some entries need it", "[render]") {
    attn::RenderOptions opt;
    const attn::TensorRecord mixed{"g", "", attn::Array{0.5, 9.2943e-06, 0.0}, {}, {}, attn::View::numbers};
    const std::string text = attn::render_tensor(mixed, opt);
    CHECK_THAT(text, Catch::Contains("5.0000e-01"));
    CHECK_THAT(text, Catch::Contains("9.2943e-06"));
    CHECK(text.find("0.5000") == std::string::npos);
    const attn::TensorRecord plain{"h", "", attn::Array{0.5, 0.25}, {}, {}, attn::View::numbers};
    CHECK_THAT(attn::render_tensor(plain, opt), Catch::Contains("0.5000"));
}

TEST_CASE("heatmap columns carry their labels even when the table shows only some columns", "[render]") {
    std::vector<std::string> cols;
    for (int k = 1; k <= 8; ++k) cols.push_back("a-rather-long-word-" + std::to_string(k));
    attn::Array value = attn::Array::from_shape({2, 8});
    for (std::size_t i = 0; i < value.size(); ++i) value.data()[i] = static_cast<double>(i);
    const attn::TensorRecord wide{"E", "", value, {"a", "b"}, cols, attn::View::heatmap};
    const std::string text = attn::render_tensor(wide, attn::RenderOptions{});
    // the number table shows the first and last columns; the grid below has the same columns, named
    const auto first = text.find("a-rather-long-word-8");
    REQUIRE(first != std::string::npos);
    CHECK(text.find("a-rather-long-word-8", first + 1) != std::string::npos);  // above the table and above the grid
    CHECK(text.find("1 a-rather-long-word-1") == std::string::npos);
}

}  // namespace test_render_formats
