// The axes of a line plot: see plot_axes.hpp.
#include "plot_axes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace attn {

double PlotAxis::position(double v) const { return log ? std::log(v) / std::log(base) : v; }

double PlotAxis::clamped_fraction(double f) const {
    return high == low || !std::isfinite(f) ? 0.5 : std::clamp(f, 0.0, 1.0);
}

XValues x_values(const std::vector<std::string>& labels, std::size_t rows) {
    XValues x;
    bool parsed = labels.size() == rows;
    for (std::size_t r = 0; parsed && r < rows; ++r) {
        const std::size_t eq = labels[r].rfind('=');
        const std::string name = eq == std::string::npos ? "" : labels[r].substr(0, eq);
        const std::string number = eq == std::string::npos ? labels[r] : labels[r].substr(eq + 1);
        char* end = nullptr;
        const double value = number.empty() ? 0.0 : std::strtod(number.c_str(), &end);
        parsed = !number.empty() && end == number.c_str() + number.size() && std::isfinite(value) &&
                 (r == 0 || name == x.name);
        x.name = name;
        x.values.push_back(value);
        x.texts.push_back(number);
    }
    if (parsed) return x;
    x = XValues{{}, {}, "row", false};
    for (std::size_t r = 0; r < rows; ++r) {
        x.values.push_back(static_cast<double>(r + 1));
        x.texts.push_back(std::to_string(r + 1));
    }
    return x;
}

bool all_positive(const std::vector<double>& values) {
    return std::all_of(values.begin(), values.end(), [](double v) { return v > 0; });
}

bool doubling(const std::vector<double>& values) {
    for (std::size_t i = 1; i < values.size(); ++i)
        if (values[i] != 2 * values[i - 1]) return false;
    return values.size() > 1;
}

// log2 spacing when the labels' numbers double (or span more than a factor 10), else linear.
PlotAxis x_axis(const XValues& values) {
    const std::vector<double>& x = values.values;
    PlotAxis axis;
    const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
    axis.log = values.from_labels && all_positive(x) && (doubling(x) || *hi > 10 * *lo);
    axis.base = 2;
    axis.low = axis.position(*lo);
    axis.high = axis.position(*hi);
    return axis;
}

// 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw) {
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0})
        if (m * magnitude >= raw * (1 - 1e-12)) return m * magnitude;
    return 10 * magnitude;
}

// The y axis and its ticks for finite values from `low` to `high`: whole decades on a log scale
// when every value is positive and they span more than a factor 10, else 1-2-5 steps.
PlotAxis y_axis(double low, double high, std::vector<YTick>& ticks, std::size_t max_log_ticks) {
    PlotAxis axis;
    axis.log = low > 0 && high > 10 * low;
    if (axis.log) {
        axis.low = std::floor(std::log10(low));
        axis.high = std::ceil(std::log10(high));
        const double decades = axis.high - axis.low;
        const double every = std::ceil(decades / static_cast<double>(std::max<std::size_t>(max_log_ticks, 1)));
        for (double k = axis.low; k <= axis.high; k += every) ticks.push_back({k, fmt::format("{:g}", std::pow(10.0, k))});
        return axis;
    }
    if (high == low) {
        const double half = std::max(std::fabs(low), 1.0) / 2;
        low -= half, high += half;
    }
    const double step = nice_step((high - low) / 4);
    axis.low = std::floor(low / step) * step;
    axis.high = std::ceil(high / step) * step;
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
    const auto count = static_cast<long>(std::lround((axis.high - axis.low) / step));
    for (long k = 0; k <= count; ++k) {
        const double value = axis.low + static_cast<double>(k) * step;
        ticks.push_back({value, fmt::format("{:.{}f}", std::fabs(value) < step / 2 ? 0.0 : value, decimals)});
    }
    return axis;
}

std::string x_scale_text(const PlotAxis& axis, const XValues& x) {
    return !axis.log ? "" : doubling(x.values) ? ", doubling (log2 spacing)" : ", log scale";
}

}  // namespace attn
