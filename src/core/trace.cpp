#include "trace.hpp"

#include <algorithm>
#include <cmath>
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

bool Trace::steps_enough() const {
    if (stop_after_ > 0 && steps_.size() >= stop_after_) return true;
    return enough_ && !steps_.empty() && enough_(steps_.back());
}

void Trace::need_next_step() const {
    if (steps_enough()) throw StepsEnough{};
}

Step& Trace::step(std::string id, std::string title, std::string equation, std::string explanation) {
    if (steps_enough()) throw StepsEnough{};
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
    if (not_yet_recorded_.erase(name) > 0) input_steps_.emplace(name, s.id);
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

bool Trace::check(std::string claim, double max_abs_error, double tolerance, double foreign_tolerance) {
    const bool holds = check(std::move(claim), max_abs_error, tolerance);
    steps_.back().checks.back().foreign_tolerance = foreign_tolerance;
    return holds;
}

bool Trace::key_names_input(const std::string& key, const std::string& name) const {
    if (key == name) return true;
    const bool qualified = key.size() > name.size() && key[key.size() - name.size() - 1] == '.' &&
                           key.compare(key.size() - name.size(), name.size(), name) == 0;
    if (!qualified) return false;
    const auto known = known_input_steps_.find(name);
    return known == known_input_steps_.end() || key == known->second + "." + name;
}

const Array* Trace::supplied_input(const std::string& name, const Shape& drawn_shape) {
    if (std::find(input_names_.begin(), input_names_.end(), name) == input_names_.end()) input_names_.push_back(name);
    if (asked_.insert(name).second) not_yet_recorded_.insert(name);
    const Array* chosen = nullptr;
    std::string chosen_key;
    for (const auto& [key, value] : supplied_) {
        if (!key_names_input(key, name)) continue;
        if (chosen && !(shape_of(*chosen) == shape_of(value) && *chosen == value))
            throw InputError("--input: tensor '" + name + "' is given twice with different values ('" + chosen_key +
                             "' and '" + key + "'); give it once");
        chosen = &value, chosen_key = key;
        used_.insert(key);
    }
    if (!chosen) return nullptr;
    const Shape given = shape_of(*chosen);
    if (given != drawn_shape)
        throw InputError("--input: tensor '" + name + "' has shape " + shape_string(given) + ", but the lesson (" +
                         config_text(config_) + ") needs shape " + shape_string(drawn_shape));
    const Array& value = *chosen;
    const auto bad = std::find_if(value.begin(), value.end(), [](double x) { return !std::isfinite(x); });
    if (bad != value.end()) {
        std::size_t flat = static_cast<std::size_t>(bad - value.begin());
        Shape index(given.size());
        for (std::size_t k = given.size(); k-- > 0; flat /= given[k]) index[k] = flat % given[k];
        throw InputError("--input: tensor '" + name + "' holds " + (std::isnan(*bad) ? "NaN" : "an infinity") +
                         " at " + shape_string(index) + "; inputs and parameters must be finite numbers");
    }
    return &value;
}

TensorRecord& Trace::parameter(std::string name, std::string equation, Array value, std::vector<std::string> rows,
                               std::vector<std::string> cols) {
    TensorRecord& t = tensor(std::move(name), std::move(equation), std::move(value), std::move(rows), std::move(cols));
    t.drawn = true;
    return t;
}

TensorRecord& Trace::export_only(std::string name, std::string equation, Array value, std::vector<std::string> rows,
                                 std::vector<std::string> cols) {
    TensorRecord& t = tensor(std::move(name), std::move(equation), std::move(value), std::move(rows), std::move(cols));
    t.export_only = true;
    return t;
}

Trace Trace::for_golden() const {
    Trace out = *this;
    for (auto& s : out.steps_)
        s.tensors.erase(std::remove_if(s.tensors.begin(), s.tensors.end(),
                                       [](const TensorRecord& t) { return !t.in_golden(); }),
                        s.tensors.end());
    return out;
}

std::vector<std::string> Trace::unused_inputs() const {
    std::vector<std::string> out;
    for (const auto& [name, value] : supplied_)
        if (!used_.count(name)) out.push_back(name);
    return out;
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
