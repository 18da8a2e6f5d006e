#include "exercises/observations.hpp"

#include "core/golden.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace attn {

namespace {

using json = nlohmann::json;

constexpr int format_version = 1;
constexpr std::size_t max_depth = 8;              // the schema nests five deep
constexpr std::size_t max_trace_depth = 12;       // a trace: steps, tensors, and up to 4 axes of data
constexpr std::size_t max_rank = 4;
constexpr std::size_t max_elements = 1u << 20;    // a unit case's result has a few dozen
constexpr std::size_t max_outcomes = 64;          // an exercise has at most a few unit cases
constexpr std::size_t max_text_bytes = 2000;      // an exception's message, as shown

// A non-finite number as a string: JSON has none.
json number(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    return x;
}

json tensor_json(const Array& a) {
    json shape = json::array(), data = json::array();
    for (const auto n : a.shape()) shape.push_back(n);
    for (const double x : a) data.push_back(number(x));
    return {{"shape", shape}, {"data", data}};
}

[[noreturn]] void wrong(const std::string& what) { throw ObservationError("the check's report is wrong: " + what); }

const json& field(const json& object, const char* name, json::value_t type, const std::string& where) {
    const auto found = object.find(name);
    if (found == object.end()) wrong(fmt::format("{} has no \"{}\"", where, name));
    if (found->type() != type) wrong(fmt::format("\"{}\" of {} has the wrong type", name, where));
    return *found;
}

std::string text_field(const json& object, const char* name, const std::string& where) {
    return field(object, name, json::value_t::string, where).get<std::string>();
}

// The function of a starter that stopped a case or a lesson: a C++ name, at most 64 bytes, or ""
// (a student's program may say anything; only a name is shown).
std::string function_field(const json& object, const char* name, const std::string& where) {
    const std::string f = text_field(object, name, where);
    const bool is_name = f.size() <= 64 && (f.empty() || !std::isdigit(static_cast<unsigned char>(f[0]))) &&
                         std::all_of(f.begin(), f.end(), [](char c) {
                             return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                         });
    if (!is_name) wrong(fmt::format("\"{}\" of {} is not the name of a function", name, where));
    return f;
}

double number_of(const json& x, const std::string& where) {
    if (x.is_number()) return x.get<double>();
    if (x.is_string()) {
        const auto& s = x.get_ref<const std::string&>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    wrong(where + " holds something that is not a number");
}

Array tensor_of(const json& t, const std::string& where) {
    if (!t.is_object()) wrong(where + " is not an object");
    const json& shape_json = field(t, "shape", json::value_t::array, where);
    const json& data = field(t, "data", json::value_t::array, where);
    if (shape_json.size() > max_rank) wrong(where + " has more than 4 axes");
    std::vector<std::size_t> shape;
    std::size_t elements = 1;
    for (const auto& n : shape_json) {
        if (!n.is_number_unsigned() || n.get<std::size_t>() > max_elements) wrong(where + " has a bad shape");
        shape.push_back(n.get<std::size_t>());
        elements *= shape.back();
        if (elements > max_elements) wrong(where + " is too large");
    }
    if (data.size() != elements) wrong(where + ": its data does not fill its shape");
    Array out = Array::from_shape(shape);
    std::size_t i = 0;
    for (const auto& x : data) out.data()[i++] = number_of(x, where);
    return out;
}

UnitOutcome outcome_of(const json& o, const std::string& where) {
    if (!o.is_object()) wrong(where + " is not an object");
    const std::string kind = text_field(o, "kind", where);
    UnitOutcome out;
    if (kind == "value") {
        out.kind = UnitOutcome::Kind::value;
        out.actual = tensor_of(field(o, "actual", json::value_t::object, where), where + "'s result");
    } else if (kind == "not_done") {
        out.kind = UnitOutcome::Kind::not_done;
        out.text = text_field(o, "exercise", where);
        if (!find_exercise(out.text)) wrong(where + " names an exercise that does not exist");
        out.function = function_field(o, "function", where);
    } else if (kind == "out_of_memory") {
        out.kind = UnitOutcome::Kind::out_of_memory;
    } else if (kind == "threw" || kind == "wrong_shape") {
        out.kind = kind == "threw" ? UnitOutcome::Kind::threw : UnitOutcome::Kind::wrong_shape;
        out.text = printable_utf8(text_field(o, "message", where).substr(0, max_text_bytes));
    } else {
        wrong(where + " has an unknown kind");
    }
    return out;
}

// How deep the arrays and objects of a JSON text nest, strings skipped: the golden reader builds
// every level, so a text of nothing but brackets must be refused before it is parsed.
std::size_t nesting(std::string_view text) {
    std::size_t depth = 0, deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

LessonRun run_of(const json& r, const Lesson& lesson) {
    const std::string where = "lesson " + lesson.slug;
    if (!r.is_object()) wrong(where + " is not an object");
    LessonRun run;
    const std::string trace = text_field(r, "trace", where);
    if (nesting(trace) > max_trace_depth) wrong("the trace of " + where + " nests too deep");
    try {
        run.trace = parse_golden_json(trace, "the trace of " + where);
    } catch (const GoldenError& e) {
        wrong(e.what());
    }
    if (run.trace.lesson() != lesson.slug) wrong(where + " holds the trace of another lesson");
    run.not_done = text_field(r, "not_done", where);
    if (!run.not_done.empty() && !find_exercise(run.not_done)) wrong(where + " names an exercise that does not exist");
    run.not_done_function = function_field(r, "not_done_function", where);
    run.error = printable_utf8(text_field(r, "error", where).substr(0, max_text_bytes));
    return run;
}

}  // namespace

std::string observations_json(const ExerciseObservations& seen) {
    json unit = json::object(), lessons = json::object();
    for (const auto& [id, outcomes] : seen.unit) {
        json list = json::array();
        for (const auto& o : outcomes) {
            switch (o.kind) {
                case UnitOutcome::Kind::value: list.push_back({{"kind", "value"}, {"actual", tensor_json(o.actual)}}); break;
                case UnitOutcome::Kind::not_done:
                    list.push_back({{"kind", "not_done"}, {"exercise", o.text}, {"function", o.function}});
                    break;
                case UnitOutcome::Kind::out_of_memory: list.push_back({{"kind", "out_of_memory"}}); break;
                case UnitOutcome::Kind::threw: list.push_back({{"kind", "threw"}, {"message", o.text}}); break;
                case UnitOutcome::Kind::wrong_shape: list.push_back({{"kind", "wrong_shape"}, {"message", o.text}}); break;
            }
        }
        unit[id] = list;
    }
    // what golden files hold is all a comparison reads: a lesson's export-only data (lesson 9's
    // corpus and weights) would only swell the report towards its size limit
    for (const auto& [slug, run] : seen.lessons)
        lessons[slug] = {{"trace", to_golden_json(run.trace.for_golden())}, {"not_done", run.not_done},
                         {"not_done_function", run.not_done_function}, {"error", run.error}};
    const json out = {{"format", "attn-observations"}, {"version", format_version}, {"unit", unit}, {"lessons", lessons}};
    // invalid UTF-8 in a message (an exception's text) is replaced, not a reason to fail
    return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

ExerciseObservations parse_observations(std::string_view text) {
    if (text.empty()) wrong("it is empty");
    if (text.size() > max_observations_bytes) wrong("it is larger than 8 MiB");
    json doc;
    try {
        doc = json::parse(text, [](int depth, json::parse_event_t, json&) {
            if (depth > static_cast<int>(max_depth)) wrong("it nests too deep");
            return true;
        });
    } catch (const json::exception& e) {
        wrong(std::string("not JSON (") + e.what() + ")");
    }
    if (!doc.is_object()) wrong("it is not an object");
    if (text_field(doc, "format", "the report") != "attn-observations") wrong("its format is not attn-observations");
    const json& version = field(doc, "version", json::value_t::number_unsigned, "the report");
    if (version.get<long long>() != format_version) wrong("its version is not 1");
    ExerciseObservations seen;
    for (const auto& [id, outcomes] : field(doc, "unit", json::value_t::object, "the report").items()) {
        if (!find_exercise(id)) wrong("it names an exercise that does not exist");
        if (!outcomes.is_array() || outcomes.size() > max_outcomes) wrong("the unit cases of " + id + " are not a short list");
        auto& list = seen.unit[id];
        for (const auto& o : outcomes) list.push_back(outcome_of(o, fmt::format("unit case {} of {}", list.size() + 1, id)));
    }
    for (const auto& [slug, run] : field(doc, "lessons", json::value_t::object, "the report").items()) {
        const Lesson* lesson = find_lesson(slug);
        if (!lesson || lesson->slug != slug) wrong("it names a lesson that does not exist");
        seen.lessons[slug] = run_of(run, *lesson);
    }
    return seen;
}

}  // namespace attn
