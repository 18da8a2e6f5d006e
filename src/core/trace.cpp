#include "core/trace.hpp"

#include <stdexcept>

namespace attn {

long long Config::get(const std::string& key) const {
    for (const auto& [k, v] : values)
        if (k == key) return v;
    throw std::out_of_range("lesson configuration has no setting '" + key + "'");
}

bool operator==(const Config& a, const Config& b) { return a.seed == b.seed && a.values == b.values; }

std::string config_text(const Config& c) {
    std::string out = "seed " + std::to_string(c.seed);
    for (const auto& [k, v] : c.values) out += ", " + k + "=" + std::to_string(v);
    return out;
}

Step& Trace::step(std::string id, std::string title, std::string equation, std::string explanation) {
    if (find_step(id)) throw std::logic_error("step id '" + id + "' is used twice in lesson " + lesson_);
    steps_.push_back(Step{std::move(id), std::move(title), std::move(equation), std::move(explanation), {}, {}});
    return steps_.back();
}

TensorRecord& Trace::tensor(std::string name, std::string equation, Array value,
                            std::vector<std::string> rows, std::vector<std::string> cols, View view) {
    if (steps_.empty()) throw std::logic_error("tensor '" + name + "' recorded before any step");
    const Shape shape = shape_of(value);
    if (!rows.empty() && (shape.empty() || rows.size() != shape[0]))
        throw ShapeError("tensor '" + name + "': " + std::to_string(rows.size()) +
                         " row labels for shape " + shape_string(shape));
    if (!cols.empty() && (shape.size() < 2 || cols.size() != shape[1]))
        throw ShapeError("tensor '" + name + "': " + std::to_string(cols.size()) +
                         " column labels for shape " + shape_string(shape));
    Step& s = steps_.back();
    for (const auto& t : s.tensors)
        if (t.name == name)
            throw std::logic_error("tensor '" + name + "' recorded twice in step '" + s.id + "'");
    s.tensors.push_back(TensorRecord{std::move(name), std::move(equation), std::move(value),
                                     std::move(rows), std::move(cols), view});
    return s.tensors.back();
}

bool Trace::check(std::string claim, double max_abs_error, double tolerance) {
    if (steps_.empty()) throw std::logic_error("check '" + claim + "' recorded before any step");
    // NaN compares false, so a NaN error never counts as holding.
    const bool holds = max_abs_error <= tolerance;
    steps_.back().checks.push_back(CheckRecord{std::move(claim), max_abs_error, tolerance, holds});
    return holds;
}

const Step* Trace::find_step(const std::string& id) const {
    for (const auto& s : steps_)
        if (s.id == id) return &s;
    return nullptr;
}

bool Trace::all_checks_hold() const {
    for (const auto& s : steps_)
        for (const auto& c : s.checks)
            if (!c.holds) return false;
    return true;
}

}  // namespace attn
