// The axes of a line plot (View::plot): x from a table's row labels, y from its values, each
// linear or logarithmic, with their ticks. Shared by the terminal's character plot
// (core/render.cpp) and the SVG plot (core/svg_plot.cpp), so both scale the same series alike.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace attn {

// The x values of a plot: the numbers in the row labels ("64" or "T=64", all with the same name
// before the '='), else the row numbers 1 .. n.
struct XValues {
    std::vector<double> values;
    std::vector<std::string> texts;  // the tick labels: the numbers as the labels write them
    std::string name;                // "T", or "row" without numeric labels, or "" for plain numbers
    bool from_labels = true;         // false for the row numbers
};

XValues x_values(const std::vector<std::string>& labels, std::size_t rows);

// One axis: values map to positions (their logarithm on a log axis), positions [low, high] to
// fractions 0 .. 1.
struct PlotAxis {
    bool log = false;
    double base = 10;  // of the logarithm
    double low = 0, high = 1;
    double position(double v) const;
    // Where v falls between low (0) and high (1), clamped; the middle when the axis has no extent
    // or its range overflows.
    double fraction(double v) const { return clamped_fraction((position(v) - low) / (high - low)); }
    double clamped_fraction(double f) const;
};

bool all_positive(const std::vector<double>& values);
// Each value twice the one before (at least two values).
bool doubling(const std::vector<double>& values);

// log2 spacing when the labels' numbers double (or span more than a factor 10), else linear.
PlotAxis x_axis(const XValues& values);

struct YTick {
    double value;      // a position on the axis (the exponent on a log axis)
    std::string text;  // "0.5", "1e-06"
};

// 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw);

// The y axis and its ticks for finite values from `low` to `high`: whole decades on a log scale
// when every value is positive and they span more than a factor 10 (at most about
// `max_log_ticks` of them: every k-th decade), else 1-2-5 steps.
PlotAxis y_axis(double low, double high, std::vector<YTick>& ticks, std::size_t max_log_ticks = 6);

// The x scale as the legends say it: "", ", doubling (log2 spacing)" or ", log scale".
std::string x_scale_text(const PlotAxis& axis, const XValues& x);

}  // namespace attn
