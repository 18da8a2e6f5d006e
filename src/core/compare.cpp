#include "compare.hpp"

#include "golden.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace attn {

namespace {

std::vector<std::size_t> unravel(std::size_t flat, const Shape& shape) {
    std::vector<std::size_t> index(shape.size());
    for (std::size_t axis = shape.size(); axis-- > 0;) {
        index[axis] = flat % shape[axis];
        flat /= shape[axis];
    }
    return index;
}

const TensorRecord* find_tensor(const Step& s, const std::string& name) {
    for (const auto& t : s.tensors)
        if (t.name == name) return &t;
    return nullptr;
}

std::string join_labels(const std::vector<std::string>& labels) {
    return labels.empty() ? "(none)" : fmt::format("{}", fmt::join(labels, ", "));
}

// Everything wrong with one step, or "" when it matches.
std::string compare_step(const Step& actual, const Step& golden, const Tolerance& asked, Whose whose,
                         LessonComparison& counts) {
    const bool partial = whose != Whose::attn;
    std::string report;
    // The tensors that differ, listed by where they first differ: the row of their first mismatch
    // (the position or time step a lesson computes row by row), then the order the step records
    // them in. So a wrong reset gate shows the candidate state it spoils before the update gate
    // that goes wrong only a row later.
    std::vector<std::pair<std::size_t, std::string>> differing;
    for (const auto& g : golden.tensors) {
        if (!g.in_golden()) continue;  // a timing or export-only data in a hand-made file: never compared
        const TensorRecord* a = find_tensor(actual, g.name);
        if (!a && partial) continue;  // a student may hand in any subset
        if (!a) {
            report += fmt::format("  tensor '{}' {} is in the golden file but the lesson no longer records it\n", g.name,
                                  shape_string(g.shape()));
            continue;
        }
        const bool own_rule = partial && g.foreign.kind == ForeignComparison::Kind::tolerance;
        if (!compared(g.foreign, whose)) {
            // noise, or the fruit of a training run, whose shape may follow it too (a translation's length)
            ++counts.tensors_shown;
            continue;
        }
        ++counts.tensors_compared;
        const Tolerance tol = partial ? foreign_tolerance(g.foreign, asked) : asked;
        const TensorDiff d = compare_tensor(a->value, g.value, tol);
        if (!d.ok()) {
            const std::size_t row = d.shape_matches && !d.first.empty() && !d.first.front().index.empty()
                                        ? d.first.front().index.front()
                                        : 0;
            differing.emplace_back(row, fmt::format("  tensor '{}' {}{}\n{}\n", g.name, shape_string(g.shape()),
                                                    own_rule ? " (its tolerance: " + g.foreign.why + ")" : "",
                                                    tensor_diff_report(d, tol)));
        }
        if (!partial && a->rows != g.rows)
            report += fmt::format("  tensor '{}': row labels are [{}], golden has [{}]\n", g.name, join_labels(a->rows),
                                  join_labels(g.rows));
        if (!partial && a->cols != g.cols)
            report += fmt::format("  tensor '{}': column labels are [{}], golden has [{}]\n", g.name,
                                  join_labels(a->cols), join_labels(g.cols));
    }
    std::stable_sort(differing.begin(), differing.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    if (differing.size() > 1)
        report += fmt::format("  {} tensors differ; the first listed differs earliest (row {}, in the order of "
                              "computation)\n",
                              differing.size(), differing.front().first);
    for (const auto& [row, text] : differing) report += text;
    for (const auto& a : actual.tensors) {
        // timings and export-only data (a corpus, initial weights) are never compared
        if (!a.in_golden() || find_tensor(golden, a.name)) continue;
        if (partial) {
            std::vector<std::string> names;
            for (const auto& g : golden.tensors) names.push_back(g.name);
            report += fmt::format("  tensor '{}' is not a tensor of this step; its tensors are: {}\n", a.name,
                                  fmt::join(names, ", "));
        } else {
            report += fmt::format("  tensor '{}' {} is new: the golden file does not have it (attn bless updates it)\n",
                                  a.name, shape_string(a.shape()));
        }
    }
    return report;
}

}  // namespace

void validate_tolerance(const Tolerance& tol) {
    if (!std::isfinite(tol.rtol) || tol.rtol < 0)
        throw std::invalid_argument(fmt::format("--rtol must be a finite number >= 0, got {}", tol.rtol));
    if (!std::isfinite(tol.atol) || tol.atol < 0)
        throw std::invalid_argument(fmt::format("--atol must be a finite number >= 0, got {}", tol.atol));
}

bool close(double actual, double expected, const Tolerance& tol) {
    if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
    if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
    return std::abs(actual - expected) <= tol.atol + tol.rtol * std::abs(expected);
}

TensorDiff compare_tensor(const Array& actual, const Array& expected, const Tolerance& tol) {
    TensorDiff d;
    d.actual_shape = shape_of(actual);
    d.expected_shape = shape_of(expected);
    d.total = expected.size();
    if (d.actual_shape != d.expected_shape) {
        d.shape_matches = false;
        return d;
    }
    std::size_t flat = 0;
    auto a = actual.begin();
    for (auto e = expected.begin(); e != expected.end(); ++a, ++e, ++flat) {
        if (std::isfinite(*a) && std::isfinite(*e)) {
            const double diff = std::abs(*a - *e);
            d.max_abs = std::max(d.max_abs, diff);
            if (*e != 0.0) d.max_rel = std::max(d.max_rel, diff / std::abs(*e));
            else if (diff > 0.0) d.max_rel = std::numeric_limits<double>::infinity();
        }
        if (close(*a, *e, tol)) continue;
        ++d.mismatched;
        if (!std::isfinite(*a) || !std::isfinite(*e)) ++d.non_finite;
        if (d.first.size() < 5) d.first.push_back({unravel(flat, d.expected_shape), *a, *e});
    }
    return d;
}

std::string tensor_diff_report(const TensorDiff& d, const Tolerance& tol) {
    if (!d.shape_matches)
        return fmt::format("    Shapes differ: actual {}, expected {}", shape_string(d.actual_shape),
                           shape_string(d.expected_shape));
    std::string out = fmt::format("    Not equal to tolerance rtol={:g}, atol={:g}\n", tol.rtol, tol.atol);
    out += fmt::format("    Mismatched elements: {} / {} ({:.3g}%)\n", d.mismatched, d.total,
                       100.0 * static_cast<double>(d.mismatched) / static_cast<double>(d.total));
    for (const auto& m : d.first)
        out += fmt::format("    at {:<10} actual {:<24.17g} expected {:.17g}\n", index_text(m.index), m.actual,
                           m.expected);
    if (d.mismatched > d.first.size()) out += fmt::format("    … and {} more\n", d.mismatched - d.first.size());
    if (d.non_finite > 0) {
        // a NaN where a number belongs is no small difference: say how many, and of what the maxima speak
        out += fmt::format("    Non-finite mismatches: {} of the {} (NaN or an infinity against another value)\n",
                           d.non_finite, d.mismatched);
        if (d.non_finite == d.mismatched) {
            out += "    Max differences: none to show, every mismatch is NaN or infinite";
            return out;
        }
        out += fmt::format("    Max absolute difference: {:.3g} (over the elements finite on both sides)\n", d.max_abs);
        out += fmt::format("    Max relative difference: {:.3g} (likewise)", d.max_rel);
        return out;
    }
    out += fmt::format("    Max absolute difference: {:.3g}\n", d.max_abs);
    out += fmt::format("    Max relative difference: {:.3g}", d.max_rel);
    return out;
}

std::string foreign_rule(const ForeignComparison& f) {
    switch (f.kind) {
        case ForeignComparison::Kind::tolerance: return fmt::format("at rtol {:g}, atol {:g} at least", f.rtol, f.atol);
        case ForeignComparison::Kind::shown: return "never, only shown";
        case ForeignComparison::Kind::trained: return "only where attn's trained models are loaded";
        case ForeignComparison::Kind::asked: break;
    }
    return "at the tolerance asked";
}

bool compared(const ForeignComparison& f, Whose whose) {
    switch (f.kind) {
        case ForeignComparison::Kind::shown: return whose == Whose::attn;
        case ForeignComparison::Kind::trained: return whose != Whose::peer;
        case ForeignComparison::Kind::asked:
        case ForeignComparison::Kind::tolerance: break;
    }
    return true;
}

Tolerance foreign_tolerance(const ForeignComparison& f, const Tolerance& asked) {
    if (f.kind != ForeignComparison::Kind::tolerance) return asked;
    return {std::max(f.rtol, asked.rtol), std::max(f.atol, asked.atol)};
}

LessonComparison compare_traces(const Trace& actual, const Trace& golden, const Tolerance& tol, Whose whose) {
    const bool partial = whose != Whose::attn;
    LessonComparison result;
    const std::string lesson = golden.lesson();
    if (!partial && actual.lesson() != golden.lesson()) {
        result.ok = false;
        result.report = fmt::format("{}: the golden file is for lesson '{}', not '{}'\n", lesson, golden.lesson(),
                                    actual.lesson());
        return result;
    }
    if (!partial && actual.config() != golden.config()) {
        result.ok = false;
        result.report = fmt::format("{}: configuration differs: the lesson ran with {}, the golden file has {}\n",
                                    lesson, config_text(actual.config()), config_text(golden.config()));
        return result;
    }
    const auto& steps = golden.steps();
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& g = steps[i];
        const Step* a = actual.find_step(g.id);
        if (!a && partial) continue;
        std::string why = a ? compare_step(*a, g, tol, whose, result)
                            : "  the lesson no longer has this step\n";
        if (why.empty()) {
            ++result.steps_compared;
            continue;
        }
        result.ok = false;
        result.diverging_step = g.id;
        result.report = fmt::format("{}: diverges at step {}/{} '{}' ({})\n{}", lesson, i + 1, steps.size(), g.id,
                                    g.title, why);
        if (i + 1 < steps.size()) {
            std::vector<std::string> later;
            for (std::size_t k = i + 1; k < steps.size(); ++k) later.push_back(steps[k].id);
            result.report += fmt::format("  not reached: {}\n", fmt::join(later, ", "));
        }
        return result;
    }
    std::vector<std::string> extra;
    for (const auto& a : actual.steps())
        if (!golden.find_step(a.id)) extra.push_back(a.id);
    if (!extra.empty()) {
        result.ok = false;
        std::vector<std::string> ids;
        for (const auto& g : steps) ids.push_back(g.id);
        result.report = partial ? fmt::format("{}: {} not steps of this lesson; its steps are: {}\n", lesson,
                                              fmt::join(extra, ", "), fmt::join(ids, ", "))
                                : fmt::format("{}: new steps not in the golden file: {} (attn bless updates it)\n",
                                              lesson, fmt::join(extra, ", "));
    }
    return result;
}

std::vector<std::string> describe_changes(const Trace& old, const Trace& now) {
    std::vector<std::string> out;
    if (old.config() != now.config())
        out.push_back(fmt::format("configuration: {} -> {}", config_text(old.config()), config_text(now.config())));
    const Tolerance exact{0.0, 0.0};
    for (const auto& o : old.steps()) {
        const Step* n = now.find_step(o.id);
        if (!n) {
            out.push_back(fmt::format("step '{}' removed", o.id));
            continue;
        }
        bool text_changed = o.title != n->title || o.equation != n->equation || o.explanation != n->explanation ||
                            o.checks.size() != n->checks.size();
        for (std::size_t i = 0; !text_changed && i < o.checks.size(); ++i)
            text_changed = o.checks[i].claim != n->checks[i].claim || o.checks[i].tolerance != n->checks[i].tolerance ||
                           o.checks[i].tolerance_for_others() != n->checks[i].tolerance_for_others();
        for (const auto& ot : o.tensors) {
            const TensorRecord* nt = find_tensor(*n, ot.name);
            if (!nt) {
                out.push_back(fmt::format("{}.{}: removed", o.id, ot.name));
                continue;
            }
            const TensorDiff d = compare_tensor(nt->value, ot.value, exact);
            if (!d.shape_matches)
                out.push_back(fmt::format("{}.{}: shape {} -> {}", o.id, ot.name, shape_string(d.expected_shape),
                                          shape_string(d.actual_shape)));
            else if (d.mismatched > 0)
                out.push_back(fmt::format("{}.{}: {} / {} elements changed{}, max |change| {:.3g}, max relative {:.3g}",
                                          o.id, ot.name, d.mismatched, d.total,
                                          d.non_finite ? fmt::format(" ({} to or from NaN or infinity)", d.non_finite)
                                                       : "",
                                          d.max_abs, d.max_rel));
            text_changed = text_changed || ot.equation != nt->equation || ot.rows != nt->rows || ot.cols != nt->cols ||
                           ot.view != nt->view;
            if (ot.foreign != nt->foreign)
                out.push_back(fmt::format("{}.{}: numbers not attn's compared {} (was {})", o.id, ot.name,
                                          foreign_rule(nt->foreign), foreign_rule(ot.foreign)));
        }
        for (const auto& nt : n->tensors)
            if (!find_tensor(o, nt.name))
                out.push_back(fmt::format("{}.{}: new, shape {}", o.id, nt.name, shape_string(nt.shape())));
        if (text_changed) out.push_back(fmt::format("step '{}': text changed (title, equation, explanation, labels or checks)", o.id));
    }
    for (const auto& n : now.steps())
        if (!old.find_step(n.id)) out.push_back(fmt::format("step '{}' new, {} tensors", n.id, n.tensors.size()));
    return out;
}

}  // namespace attn
