// The record a lesson writes: steps, named tensors and identity checks.
// Everything the user sees (attn run), the golden files (attn bless) and the
// comparisons (attn check, tests) come out of one Trace.
#pragma once

#include "tensor.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attn {

struct Param;

// How the renderer shows a tensor, in addition to its numbers.
enum class View {
    numbers,  // the numbers only
    heatmap,  // a matrix, also drawn as a shaded grid with its row/column labels
    bars,     // a vector, also drawn as a horizontal bar chart with its labels
    plot,     // a table whose rows are x values (labels) and columns series: also drawn as a log-log line plot
};

// How numbers that attn did not compute are compared with a tensor: a student's functions run in
// the lessons (attn-student check, attn grade --sources) or a peer's numbers (attn compare, attn
// grade). attn's own runs are compared at the tolerance asked whatever this says (attn check,
// bit for bit in the tests): the bits are attn's own promise.
struct ForeignComparison {
    enum class Kind {
        asked,      // at the tolerance asked (default rtol 1e-9, atol 1e-12): a right answer gets these bits
        tolerance,  // at least at rtol and atol (the looser of these and those asked): the quantity
                    // amplifies the last bits of a right answer written another way, by about this much
        shown,      // not compared: noise (a count of differing bits), or what a training run in the
                    // same process made of the last bits of everything before it
        trained,    // computed from models attn trained: compared at the tolerance asked where the program
                    // checked decodes with attn's own trained models, loaded (where a student's functions
                    // run); only shown for a peer's numbers, whose models its own training made
    };
    Kind kind = Kind::asked;
    double rtol = 0.0, atol = 0.0;  // kind tolerance
    std::string why;                // why, in a sentence a report quotes (kinds tolerance and shown)
};

inline bool operator==(const ForeignComparison& a, const ForeignComparison& b) {
    return a.kind == b.kind && a.rtol == b.rtol && a.atol == b.atol && a.why == b.why;
}
inline bool operator!=(const ForeignComparison& a, const ForeignComparison& b) { return !(a == b); }

struct TensorRecord {
    std::string name;      // "H", "alpha"
    std::string equation;  // "h_t = z_t * h_{t-1} + (1 - z_t) * h~_t"; may be empty
    Array value;           // rank 0, 1 or 2 (rank 3 and above print slice by slice)
    std::vector<std::string> rows;  // optional labels of axis 0 (empty or one per row)
    std::vector<std::string> cols;  // optional labels of axis 1 (empty or one per column)
    View view = View::numbers;
    // A measurement of this machine (a wall time): shown and exported, but never written to or
    // compared with a golden file.
    bool measured = false;
    // Data a lesson hands out for reproducing it elsewhere (a corpus, initial weights, the order of
    // the batches): written by `attn export` only (JSON: "export_only": true; npy: under DIR/data/),
    // never written to or compared with a golden file, never an --input, and shown by `attn run` as
    // one summary line per step. Often far too large for a golden file or a terminal.
    bool export_only = false;
    // A parameter the lesson drew at random (a weight matrix, an embedding table): its numbers are
    // recorded, exported and compared like any other, but `attn run` shows it as one summary line
    // (shape, mean, spread, range) unless asked for --show-params.
    bool drawn = false;
    // What the rows and the columns of a heatmap are ("target word", "source word"): the axis
    // titles of its SVG and a line under its terminal picture. Presentation only, like `view`.
    std::string row_axis{}, col_axis{};
    ForeignComparison foreign{};

    // Numbers not attn's are compared with this tensor at rtol and atol at least (ForeignComparison).
    TensorRecord& foreign_tolerance(double rtol, double atol, std::string why) {
        foreign = {ForeignComparison::Kind::tolerance, rtol, atol, std::move(why)};
        return *this;
    }
    // Numbers not attn's are not compared with this tensor, only shown (ForeignComparison).
    TensorRecord& foreign_shown(std::string why) {
        foreign = {ForeignComparison::Kind::shown, 0.0, 0.0, std::move(why)};
        return *this;
    }
    // Computed from attn's trained models: compared where those are loaded, else shown (ForeignComparison).
    TensorRecord& foreign_trained(std::string why) {
        foreign = {ForeignComparison::Kind::trained, 0.0, 0.0, std::move(why)};
        return *this;
    }

    TensorRecord& axes(std::string rows_are, std::string cols_are) {
        row_axis = std::move(rows_are);
        col_axis = std::move(cols_are);
        return *this;
    }

    Shape shape() const { return shape_of(value); }
    // Whether golden files hold this tensor: neither measured nor export-only.
    bool in_golden() const { return !measured && !export_only; }
};

struct CheckRecord {
    std::string claim;  // "the interpolation form equals the gate form"
    double max_abs_error = 0.0;
    double tolerance = 0.0;
    bool holds = false;  // max_abs_error <= tolerance (false when the error is NaN)
    // The tolerance where a student's functions ran (attn-student check, attn grade --sources), when
    // it is not `tolerance`: a claim of attn's own bits (equal bit for bit, exactly the largest)
    // holds there to the rounding of a right answer written another way; +inf when the claim is
    // attn's alone (a count of differing bits) and a companion check with a tolerance judges the rest.
    // NaN: the same as `tolerance`.
    double foreign_tolerance = std::numeric_limits<double>::quiet_NaN();

    double tolerance_for_others() const { return std::isnan(foreign_tolerance) ? tolerance : foreign_tolerance; }
};

struct Step {
    std::string id;           // "encoder": short, unique in the lesson, used by --step
    std::string title;        // "The encoder GRU"
    std::string equation;     // the step's main equation
    std::string explanation;  // a few sentences
    std::vector<TensorRecord> tensors;
    std::vector<CheckRecord> checks;
};

// A lesson's configuration: the seed and named integer settings, in a fixed order.
struct Config {
    std::uint64_t seed = 0;
    std::vector<std::pair<std::string, long long>> values;

    // The value of `key`; throws std::out_of_range naming the key when it is absent.
    long long get(const std::string& key) const;
    // The value of a lesson's parameter. Lessons read their parameters only this way, through the
    // Param they declare (core/settings.hpp), so that a misspelt parameter does not compile.
    std::size_t size(const Param& param) const;
};

// Same seed and the same settings in the same order.
bool operator==(const Config& a, const Config& b);
inline bool operator!=(const Config& a, const Config& b) { return !(a == b); }

// "seed 7, d=6, trials=8": how reports and the reproducibility line name a configuration.
std::string config_text(const Config& c);

// A tensor the user supplied with --input that does not fit the lesson: the message names the
// tensor and both shapes.
struct InputError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// Thrown by Trace::step when a trace told to stop after n steps is asked for step n + 1: the
// caller wanted only the first n (lessons/run.cpp catches it). Not a std::exception, so that no
// lesson's own handler of std::exception takes it for an error.
struct StepsEnough {};

class Trace {
public:
    Trace() = default;
    Trace(std::string lesson, Config config) : lesson_(std::move(lesson)), config_(std::move(config)) {}

    // Starts a new step; later tensor() and check() calls belong to it. Throws StepsEnough
    // instead when the steps recorded are all the caller wants (stop_after, stop_after_step).
    Step& step(std::string id, std::string title, std::string equation, std::string explanation);

    // Only the first n steps are wanted (0: all): a caller that needs no later step stops a lesson there.
    void stop_after(std::size_t n) { stop_after_ = n; }

    // No step after the one `enough` is true of is wanted: asked before each new step (and by
    // need_next_step) with the last step recorded, which is complete by then. A caller that judges
    // a run by its first step departing from a golden file stops the lesson there.
    void stop_after_step(std::function<bool(const Step&)> enough) { enough_ = std::move(enough); }

    // Throws StepsEnough when stop_after(n) was called and n steps are recorded (or the last step
    // recorded is one stop_after_step's test is true of), as step() would:
    // a lesson calls it before work that only later steps need (a training run), so that a caller
    // wanting the steps before it does not wait for that work.
    void need_next_step() const;

    // Records a tensor in the current step (a step must have been started).
    TensorRecord& tensor(std::string name, std::string equation, Array value,
                         std::vector<std::string> rows = {}, std::vector<std::string> cols = {},
                         View view = View::numbers);

    // Records a parameter drawn at random (TensorRecord::drawn): tensor(), summarised when shown.
    TensorRecord& parameter(std::string name, std::string equation, Array value, std::vector<std::string> rows = {},
                            std::vector<std::string> cols = {});

    // Records export-only data (TensorRecord::export_only): tensor(), never in a golden file.
    TensorRecord& export_only(std::string name, std::string equation, Array value, std::vector<std::string> rows = {},
                              std::vector<std::string> cols = {});

    // Records an identity check in the current step; returns whether it holds.
    bool check(std::string claim, double max_abs_error, double tolerance);
    // The same, with another tolerance where a student's functions ran (CheckRecord::foreign_tolerance).
    bool check(std::string claim, double max_abs_error, double tolerance, double foreign_tolerance);

    // --input: tensors the user supplies in place of the inputs and parameters the lesson would
    // draw, keyed "<tensor>" or "<step>.<tensor>" (the step is any step: it only tells apart
    // tensors of one name).
    void supply_inputs(std::map<std::string, Array> inputs) { supplied_ = std::move(inputs); }

    // An input or parameter of the lesson: the user's tensor `name` when one was supplied (its
    // shape must equal the drawn one's and its values be finite, else InputError), otherwise `drawn`. Draw it anyway, so
    // the other tensors of a seed do not depend on what was supplied.
    template <class T>
    T input(const std::string& name, T drawn) {
        if (const Array* given = supplied_input(name, shape_of(drawn))) drawn = *given;
        return drawn;
    }

    // Progress of a long measurement ("T = 1024, 5 of 7"); the command decides whether and where
    // to show it (a lesson never prints).
    void on_progress(std::function<void(const std::string&)> report) { progress_ = std::move(report); }
    void progress(const std::string& what) const {
        if (progress_) progress_(what);
    }

    // The same trace without the tensors golden files never hold (measured and export-only ones):
    // what golden files hold and compare.
    Trace for_golden() const;

    // The names the lesson takes as inputs, in the order it asked for them.
    const std::vector<std::string>& input_names() const { return input_names_; }
    // Keys of the supplied tensors, in order.
    std::vector<std::string> supplied_keys() const {
        std::vector<std::string> keys;
        for (const auto& entry : supplied_) keys.push_back(entry.first);
        return keys;
    }
    // Keys of supplied tensors the lesson never asked for (a typo, or a tensor it computes itself).
    std::vector<std::string> unused_inputs() const;
    // The step that takes each input the lesson asked for: the first step to record a tensor of the
    // input's name after the lesson asked for it (its value may differ from a tensor of that name in
    // another step: lesson 11's X of "inputs" and of "layer-norm").
    const std::map<std::string, std::string>& input_steps() const { return input_steps_; }
    // input_steps() of another run of the lesson (its quick configuration, whose steps are the
    // same): from then on a key "<step>.<tensor>" is the input <tensor> only for the step that
    // takes it, and a tensor of the name recorded in another step never collides with it.
    void take_inputs_in(std::map<std::string, std::string> steps) { known_input_steps_ = std::move(steps); }

    const std::string& lesson() const { return lesson_; }
    const Config& config() const { return config_; }
    const std::vector<Step>& steps() const { return steps_; }
    std::vector<Step>& steps() { return steps_; }

    // The step with this id, or nullptr.
    const Step* find_step(const std::string& id) const;
    // True when every identity check in every step holds.
    bool all_checks_hold() const;

private:
    const Array* supplied_input(const std::string& name, const Shape& drawn_shape);
    // Whether the supplied `key` stands for the input `name` ("X", or "<step>.X" of its step).
    bool key_names_input(const std::string& key, const std::string& name) const;

    std::string lesson_;
    Config config_;
    std::vector<Step> steps_;
    std::map<std::string, Array> supplied_;
    std::vector<std::string> input_names_;
    std::set<std::string> used_;
    std::set<std::string> asked_, not_yet_recorded_;               // inputs asked for; not yet recorded
    std::map<std::string, std::string> input_steps_, known_input_steps_;
    std::function<void(const std::string&)> progress_;
    std::size_t stop_after_ = 0;
    std::function<bool(const Step&)> enough_;
    // Whether the steps recorded so far are all the caller wants.
    bool steps_enough() const;
};

}  // namespace attn
