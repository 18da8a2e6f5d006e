// SVG line plots (View::plot) and bar charts (View::bars). Like the heatmap (svg.cpp), the
// layout comes from estimated text widths; the axes are the terminal plot's (plot_axes.hpp).
//
// The plot (sizes in px):
//   title                                   bold, 18
//   name [r, c] = equation                  grey, 12
//   y title | y ticks | plotting area       grid lines at the y ticks; series as lines and markers
//                       x ticks, x title
//   legend: one sample line and marker per series, then "x: T, doubling (log2 spacing) · y: log scale"
// The bar chart: one bar per element from a zero line, the label on the left, the value at its end.
#include "svg.hpp"

#include "plot_axes.hpp"
#include "render.hpp"
#include "svg_parts.hpp"
#include "xml_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace attn {
namespace {

using namespace svg_parts;
using SvgOut = std::back_insert_iterator<std::string>;

constexpr double plot_width = 640, plot_area_height = 280, tick_size = 12, legend_line = 20;
constexpr std::size_t plotted_series = 6;  // as in the terminal: the first six columns
constexpr std::size_t tick_label_limit = 24;  // code points of an x tick label shown

// Okabe and Ito (2008): told apart with every common colour-vision deficiency; the dashes and
// markers tell the series apart in a greyscale print.
constexpr const char* series_colours[plotted_series] = {"#0072b2", "#d55e00", "#009e73",
                                                        "#cc79a7", "#e69f00", "#56b4e9"};
constexpr const char* series_dashes[plotted_series] = {"", "7 4", "2 3", "9 3 2 3", "4 4", "12 4"};

// A marker of series `s` centred on (x, y): circle, square, triangle, diamond, cross, plus.
std::string marker(std::size_t s, double x, double y, const std::string& inside) {
    const char* colour = series_colours[s];
    const double r = 3.5;
    switch (s) {
        case 0:
            return fmt::format("<circle class=\"f{}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\">{}</circle>\n", s, px(x), px(y),
                               px(r), colour, inside);
        case 1:
            return fmt::format("<rect class=\"f{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">{}</rect>\n",
                               s, px(x - r), px(y - r), px(2 * r), px(2 * r), colour, inside);
        case 2:
            return fmt::format("<path class=\"f{}\" d=\"M{} {}L{} {}L{} {}Z\" fill=\"{}\">{}</path>\n", s, px(x), px(y - r - 0.5),
                               px(x + r + 0.5), px(y + r), px(x - r - 0.5), px(y + r), colour, inside);
        case 3:
            return fmt::format("<path class=\"f{}\" d=\"M{} {}L{} {}L{} {}L{} {}Z\" fill=\"{}\">{}</path>\n", s, px(x), px(y - r - 1),
                               px(x + r + 1), px(y), px(x), px(y + r + 1), px(x - r - 1), px(y), colour, inside);
        case 4:
            return fmt::format("<path class=\"k{}\" d=\"M{} {}L{} {}M{} {}L{} {}\" stroke=\"{}\" stroke-width=\"2\">{}</path>\n",
                               s, px(x - r), px(y - r), px(x + r), px(y + r), px(x - r), px(y + r), px(x + r), px(y - r),
                               colour, inside);
        default:
            return fmt::format("<path class=\"k{}\" d=\"M{} {}L{} {}M{} {}L{} {}\" stroke=\"{}\" stroke-width=\"2\">{}</path>\n",
                               s, px(x - r - 0.5), px(y), px(x + r + 0.5), px(y), px(x), px(y - r - 0.5), px(x),
                               px(y + r + 0.5), colour, inside);
    }
}

std::string dash_attribute(std::size_t s) {
    return *series_dashes[s] ? fmt::format(" stroke-dasharray=\"{}\"", series_dashes[s]) : "";
}

// The x ticks labelled: every k-th (k = 1, 2, 3, ...) for the smallest k at which neighbours
// keep 8 px apart.
// Taken from left to right, whatever the order of the rows (h = 0.1, 0.01, ... runs right to left).
std::vector<std::size_t> shown_ticks(const std::vector<double>& centres, const std::vector<double>& widths) {
    std::vector<std::size_t> order(centres.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return centres[a] < centres[b]; });
    for (std::size_t stride = 1;; ++stride) {
        std::vector<std::size_t> shown;
        double free_from = -std::numeric_limits<double>::infinity();
        bool fits = true;
        for (std::size_t k = 0; k < order.size(); k += stride) {
            const std::size_t i = order[k];
            fits = fits && centres[i] - widths[i] / 2 >= free_from;
            free_from = centres[i] + widths[i] / 2 + 8;
            shown.push_back(i);
        }
        if (fits || stride >= centres.size()) return shown;
    }
}

std::string empty_picture(const std::string& title, const std::u32string& subtitle, const char* why,
                          const SvgOptions& options) {
    const double width =
        std::ceil(std::max({text_width(title, title_size, true), text_width(subtitle, subtitle_size), 200.0}) + 2 * margin);
    const double height = margin + title_size + 8 + subtitle_size + 14 + caption_size + margin;
    return document_start(width, height, title, options.standalone) + headings(title, subtitle) +
           fmt::format("<text class=\"empty\" x=\"{}\" y=\"{}\" font-size=\"{}\" font-style=\"italic\" fill=\"#555555\">{}</text>\n</svg>\n",
                       px(margin), px(height - margin), px(caption_size), why);
}

// The word every row label starts with ("epoch 0", "epoch 1": "epoch"), the x axis's title when
// the labels are not numbers; "row" when they share none.
std::string shared_first_word(const std::vector<std::string>& labels, std::size_t rows) {
    if (labels.size() != rows || rows == 0) return "row";
    const std::string first = labels[0].substr(0, labels[0].find(' '));
    const bool shared = !first.empty() && first.size() < labels[0].size() &&
                        std::all_of(labels.begin(), labels.end(),
                                    [&](const std::string& l) { return l.compare(0, first.size() + 1, first + " ") == 0; });
    return shared ? first : "row";
}

// A value as the terminal's tables write it: whole numbers without decimals, else 4 decimals.
std::string value_text(double x, bool integers) { return format_number(x, integers ? 0 : 4); }

}  // namespace

std::string plot_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options) {
    const std::u32string subtitle = subtitle_of(t);
    const Shape shape = t.shape();
    if (shape.size() != 2 || t.value.size() == 0) return empty_picture(title, subtitle, "no values to plot", options);
    const std::size_t rows = shape[0], cols = shape[1], series = std::min(cols, plotted_series);
    const auto at = [&](std::size_t r, std::size_t c) { return t.value.data()[r * cols + c]; };
    double low = std::numeric_limits<double>::infinity(), high = -low;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < series; ++c)
            if (std::isfinite(at(r, c))) low = std::min(low, at(r, c)), high = std::max(high, at(r, c));
    if (!(low <= high)) return empty_picture(title, subtitle, "no finite values to plot", options);

    // axes as the terminal's; without numbers in the row labels the rows are in order, and their
    // labels (when there is one per row) are the tick labels
    const XValues x = x_values(t.rows, rows);
    const PlotAxis xa = x_axis(x);
    std::vector<YTick> ticks;
    const PlotAxis ya = y_axis(low, high, ticks, 8);
    std::vector<std::u32string> x_texts;
    for (std::size_t r = 0; r < rows; ++r)
        x_texts.push_back(shortened(
            code_points(!x.from_labels && t.rows.size() == rows ? t.rows[r] : x.texts[r]), tick_label_limit));

    // layout
    double y_label_w = 0;
    for (const auto& tick : ticks) y_label_w = std::max(y_label_w, text_width(tick.text, tick_size));
    const std::string y_title = t.col_axis.empty() ? t.name : t.col_axis;
    const std::string x_title = !t.row_axis.empty() ? t.row_axis
                                : x.from_labels     ? (x.name.empty() ? "x" : x.name)
                                                    : shared_first_word(t.rows, rows);
    const double area_left = margin + caption_size + 10 + y_label_w + 8;
    const double width = std::ceil(std::max({plot_width, margin + text_width(title, title_size, true) + margin,
                                             margin + text_width(subtitle, subtitle_size) + margin}));
    const double area_right = width - margin - 8;
    const double area_top = margin + title_size + 8 + subtitle_size + 20;
    const double area_bottom = area_top + plot_area_height;
    const double inset = 10;  // markers at the ends stay inside the area
    const auto x_of = [&](std::size_t r) {
        return area_left + inset + xa.fraction(x.values[r]) * (area_right - area_left - 2 * inset);
    };
    const auto y_at = [&](double position) {
        return area_bottom - ya.clamped_fraction((position - ya.low) / (ya.high - ya.low)) * plot_area_height;
    };

    // legend entries, flowed into lines of the picture's width
    struct Entry {
        std::u32string text;
        int series;  // -1: a note without sample
    };
    std::vector<Entry> entries;
    for (std::size_t c = 0; c < series; ++c)
        entries.push_back({code_points(c < t.cols.size() ? t.cols[c] : fmt::format("column {}", c + 1)),
                           static_cast<int>(c)});
    std::string scales = fmt::format("x: {}{} · y: {}", x.from_labels ? (x.name.empty() ? "x" : x.name) : "rows in order",
                                     x_scale_text(xa, x), ya.log ? "log scale" : "linear scale");
    if (cols > series) scales += fmt::format(" · first {} of {} columns", series, cols);
    entries.push_back({code_points(scales), -1});
    const double sample_w = 34, entry_gap = 18;
    std::vector<std::pair<double, double>> entry_at;  // (x, line) of each entry
    double line_x = margin, line = 0;
    for (const auto& e : entries) {
        const double w = (e.series >= 0 ? sample_w : 0) + text_width(e.text, caption_size);
        if (line_x > margin && (line_x + w > width - margin || e.series < 0)) line_x = margin, line += 1;
        entry_at.emplace_back(line_x, line);
        line_x += w + entry_gap;
    }
    const double legend_top = area_bottom + tick_size + 10 + caption_size + 16;
    const double height = std::ceil(legend_top + (line + 1) * legend_line + margin);

    std::string svg = document_start(width, height, title, options.standalone);
    const SvgOut out(svg);
    svg += headings(title, subtitle);
    // grid lines and y ticks
    fmt::format_to(out, "<g class=\"y-ticks\" font-size=\"{}\" text-anchor=\"end\" fill=\"#222222\">\n", px(tick_size));
    for (const auto& tick : ticks) {
        const double y = y_at(tick.value);
        fmt::format_to(out, "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#e3e3e3\"/>\n", px(area_left),
                       px(y), px(area_right));
        fmt::format_to(out, "<text x=\"{}\" y=\"{}\">{}</text>\n", px(area_left - 6), px(y + 0.35 * tick_size),
                       xml_escaped(tick.text));
    }
    fmt::format_to(out, "</g>\n");
    // axes
    fmt::format_to(out,
                   "<path class=\"axes\" d=\"M{0} {1}V{2}H{3}\" fill=\"none\" stroke=\"#444444\" stroke-width=\"1\"/>\n",
                   px(area_left), px(area_top), px(area_bottom), px(area_right));
    // x ticks
    std::vector<double> centres, widths;
    for (std::size_t r = 0; r < rows; ++r) centres.push_back(x_of(r)), widths.push_back(text_width(x_texts[r], tick_size));
    fmt::format_to(out, "<g class=\"x-ticks\" font-size=\"{}\" text-anchor=\"middle\" fill=\"#222222\">\n", px(tick_size));
    for (const std::size_t r : shown_ticks(centres, widths)) {
        fmt::format_to(out, "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444444\"/>\n", px(centres[r]),
                       px(area_bottom), px(area_bottom + 5));
        fmt::format_to(out, "<text x=\"{}\" y=\"{}\">{}</text>\n", px(centres[r]), px(area_bottom + 6 + tick_size),
                       xml_escaped(x_texts[r]));
    }
    fmt::format_to(out, "</g>\n");
    // axis titles
    const std::string caption_style =
        fmt::format("font-size=\"{}\" font-style=\"italic\" fill=\"#555555\"", px(caption_size));
    fmt::format_to(out, "<text class=\"x-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\" {}>{}</text>\n",
                   px((area_left + area_right) / 2), px(area_bottom + tick_size + 10 + caption_size), caption_style,
                   xml_escaped(shortened(code_points(x_title), 80)));
    fmt::format_to(out,
                   "<text class=\"y-title\" transform=\"translate({} {}) rotate(-90)\" text-anchor=\"middle\" {}>{}</text>\n",
                   px(margin + caption_size), px((area_top + area_bottom) / 2), caption_style,
                   xml_escaped(shortened(code_points(y_title), 40)));
    // series: lines broken where a value is not finite, then the markers over them
    for (std::size_t c = 0; c < series; ++c) {
        fmt::format_to(out, "<g class=\"series\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}>\n", series_colours[c],
                       dash_attribute(c));
        std::vector<std::string> points;
        const auto flush = [&] {
            if (points.size() > 1) fmt::format_to(out, "<polyline class=\"k{}\" points=\"{}\"/>\n", c, fmt::join(points, " "));
            points.clear();
        };
        for (std::size_t r = 0; r < rows; ++r) {
            if (!std::isfinite(at(r, c))) {
                flush();
                continue;
            }
            points.push_back(px(x_of(r)) + "," + px(y_at(ya.position(at(r, c)))));
        }
        flush();
        fmt::format_to(out, "</g>\n<g class=\"markers\" stroke=\"none\">\n");
        for (std::size_t r = 0; r < rows; ++r)
            if (std::isfinite(at(r, c)))
                svg += marker(c, x_of(r), y_at(ya.position(at(r, c))),
                              "<title>" + xml_escaped(entries[c].text) + " · " + xml_escaped(x_texts[r]) + ": " +
                                  format_number(at(r, c), 4) + "</title>");
        fmt::format_to(out, "</g>\n");
    }
    // legend
    fmt::format_to(out, "<g class=\"legend\" font-size=\"{}\" fill=\"#222222\">\n", px(caption_size));
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto [ex, el] = entry_at[i];
        const double y = legend_top + el * legend_line;
        double text_x = ex;
        if (entries[i].series >= 0) {
            const auto s = static_cast<std::size_t>(entries[i].series);
            fmt::format_to(out, "<line class=\"k{}\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>\n",
                           s, px(ex), px(y - 4), px(ex + sample_w - 6), px(y - 4), series_colours[s], dash_attribute(s));
            svg += marker(s, ex + (sample_w - 6) / 2, y - 4, "");
            text_x += sample_w;
        }
        fmt::format_to(out, "<text x=\"{}\" y=\"{}\"{}>{}</text>\n", px(text_x), px(y),
                       entries[i].series < 0 ? " class=\"scales\" fill=\"#555555\"" : " class=\"series-name\"",
                       xml_escaped(entries[i].text));
    }
    fmt::format_to(out, "</g>\n");
    return svg + "</svg>\n";
}

std::string bars_svg(const TensorRecord& t, const std::string& title, const SvgOptions& options) {
    const std::u32string subtitle = subtitle_of(t);
    const std::size_t n = t.value.size();
    const Shape shape = t.shape();
    if (n == 0 || !(shape.size() == 1 || (shape.size() == 2 && shape[1] == 1)))
        return empty_picture(title, subtitle, n == 0 ? "empty tensor: no bars to draw" : "not a vector: no bars", options);
    const double* v = t.value.data();
    const bool integers = all_integers(t.value);
    double low = 0, high = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (std::isfinite(v[i])) low = std::min(low, v[i]), high = std::max(high, v[i]);
    if (low == high) high = 1;  // all zero (or none finite): bars of length 0 on a scale to 1

    constexpr double bar_h = 18, bar_gap = 6, bar_area = 340, label_size = 12;
    std::vector<std::u32string> labels, values;
    double label_w = 0, value_w = 0;
    for (std::size_t i = 0; i < n; ++i) {
        labels.push_back(shortened(code_points(t.rows.size() == n ? t.rows[i] : std::to_string(i)), 40));
        values.push_back(code_points(value_text(v[i], integers)));
        label_w = std::max(label_w, text_width(labels.back(), label_size));
        value_w = std::max(value_w, text_width(values.back(), label_size));
    }
    const double left = margin + label_w + 10;
    const double zero = left + (0 - low) / (high - low) * bar_area;
    const double top = margin + title_size + 8 + subtitle_size + 20;
    const double width = std::ceil(std::max({left + bar_area + 8 + value_w + margin,
                                             margin + text_width(title, title_size, true) + margin,
                                             margin + text_width(subtitle, subtitle_size) + margin}));
    // a row that repeats the one before it (the same label and value: a lesson's "step 400" that is also
    // its last step) is one bar, not two
    std::vector<std::size_t> drawn;
    for (std::size_t i = 0; i < n; ++i)
        if (i == 0 || labels[i] != labels[i - 1] || !(v[i] == v[i - 1] || (std::isnan(v[i]) && std::isnan(v[i - 1]))))
            drawn.push_back(i);
    const double height = std::ceil(top + static_cast<double>(drawn.size()) * (bar_h + bar_gap) + margin);

    std::string svg = document_start(width, height, title, options.standalone);
    const SvgOut out(svg);
    svg += headings(title, subtitle);
    fmt::format_to(out, "<g class=\"bars\" font-size=\"{}\" fill=\"#222222\">\n", px(label_size));
    for (std::size_t k = 0; k < drawn.size(); ++k) {
        const std::size_t i = drawn[k];
        const double y = top + static_cast<double>(k) * (bar_h + bar_gap);
        const double baseline = y + bar_h / 2 + 0.35 * label_size;
        fmt::format_to(out, "<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", px(left - 10),
                       px(baseline), xml_escaped(labels[i]));
        double end = zero;
        if (std::isfinite(v[i])) {
            end = left + (v[i] - low) / (high - low) * bar_area;
            fmt::format_to(out, "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
                           v[i] < 0 ? "neg" : "pos", px(std::min(zero, end)), px(y), px(std::fabs(end - zero)), px(bar_h),
                           v[i] < 0 ? "#d55e00" : "#0072b2", xml_escaped(labels[i]), xml_escaped(values[i]));
        }
        fmt::format_to(out, "<text class=\"value\" x=\"{}\" y=\"{}\">{}</text>\n", px(std::max(end, zero) + 6),
                       px(baseline), xml_escaped(values[i]));
    }
    fmt::format_to(out, "</g>\n<line class=\"zero\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#444444\"/>\n",
                   px(zero), px(top - 4), px(height - margin + 4 - bar_gap));
    return svg + "</svg>\n";
}

}  // namespace attn
