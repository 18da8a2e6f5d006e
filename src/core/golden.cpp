#include "golden.hpp"

#include "npy.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn {

// ordered_json keeps the keys in file order: a lesson's configuration is an ordered list.
using json = nlohmann::ordered_json;

namespace {

// ---- writing ---------------------------------------------------------------

std::string json_quoted(const std::string& s) {
    // replace invalid UTF-8 instead of throwing: a label must never stop a bless
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string number_text(double x) {
    if (std::isnan(x)) return "\"nan\"";
    if (std::isinf(x)) return x > 0 ? "\"inf\"" : "\"-inf\"";
    return json(x).dump();  // shortest representation that round-trips (Grisu2)
}

std::string string_list(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_quoted(items[i]);
    return out + "]";
}

std::string shape_list(const Shape& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

// Nested row-major lists; the innermost axis stays on one line.
void write_data(std::ostringstream& out, const double*& p, const Shape& shape, std::size_t axis,
                const std::string& indent) {
    if (axis == shape.size()) {
        out << number_text(*p++);
        return;
    }
    out << "[";
    const bool innermost = axis + 1 == shape.size();
    for (std::size_t i = 0; i < shape[axis]; ++i) {
        if (i) out << (innermost ? ", " : ",");
        if (!innermost) out << "\n" << indent << "  ";
        write_data(out, p, shape, axis + 1, indent + "  ");
    }
    if (!innermost && shape[axis] > 0) out << "\n" << indent;
    out << "]";
}

const char* view_name(View v) {
    switch (v) {
        case View::heatmap: return "heatmap";
        case View::bars: return "bars";
        case View::plot: return "plot";
        case View::numbers: break;
    }
    return "numbers";
}

// "foreign": how numbers not attn's are compared with the tensor, when not at the tolerance asked.
void write_foreign(std::ostringstream& out, const ForeignComparison& f, const std::string& in) {
    using Kind = ForeignComparison::Kind;
    if (f.kind == Kind::asked) return;
    out << in << "  \"foreign\": {";
    if (f.kind == Kind::shown) out << "\"shown\": true";
    else if (f.kind == Kind::trained) out << "\"trained\": true";
    else out << "\"rtol\": " << number_text(f.rtol) << ", \"atol\": " << number_text(f.atol);
    out << ", \"why\": " << json_quoted(f.why) << "},\n";
}

void write_tensor(std::ostringstream& out, const TensorRecord& t) {
    const std::string in = "        ";
    out << in << "{\n";
    out << in << "  \"name\": " << json_quoted(t.name) << ",\n";
    out << in << "  \"equation\": " << json_quoted(t.equation) << ",\n";
    out << in << "  \"shape\": " << shape_list(t.shape()) << ",\n";
    if (!t.rows.empty()) out << in << "  \"rows\": " << string_list(t.rows) << ",\n";
    if (!t.cols.empty()) out << in << "  \"cols\": " << string_list(t.cols) << ",\n";
    if (t.view != View::numbers) out << in << "  \"view\": \"" << view_name(t.view) << "\",\n";
    if (t.measured) out << in << "  \"measured\": true,\n";
    if (t.export_only) out << in << "  \"export_only\": true,\n";
    write_foreign(out, t.foreign, in);
    out << in << "  \"data\": ";
    const Array contiguous = t.value;  // row-major copy, whatever the source layout
    const double* p = contiguous.data();
    write_data(out, p, t.shape(), 0, in + "  ");
    out << "\n" << in << "}";
}

void write_check(std::ostringstream& out, const CheckRecord& c) {
    out << "        {\"claim\": " << json_quoted(c.claim) << ", \"max_abs_error\": " << number_text(c.max_abs_error)
        << ", \"tolerance\": " << number_text(c.tolerance) << ", \"holds\": " << (c.holds ? "true" : "false");
    if (!std::isnan(c.foreign_tolerance)) out << ", \"foreign_tolerance\": " << number_text(c.foreign_tolerance);
    out << "}";
}

// ---- reading ---------------------------------------------------------------

// "64 MiB", "200.5 MiB"
std::string mib_text(std::uintmax_t bytes) {
    char text[32];
    if (bytes % (1 << 20) == 0)
        std::snprintf(text, sizeof text, "%ju MiB", bytes >> 20);
    else
        std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
    return text;
}

const json& member(const json& obj, const char* key, const std::string& where, const std::string& source) {
    if (!obj.is_object()) fail_reading(source, where + " is not a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) fail_reading(source, where + " has no \"" + key + "\"");
    return *it;
}

std::string string_member(const json& obj, const char* key, const std::string& where, const std::string& source,
                          bool optional = false) {
    if (optional && obj.find(key) == obj.end()) return {};
    const json& v = member(obj, key, where, source);
    if (!v.is_string()) fail_reading(source, where + ": \"" + key + "\" must be a string");
    // names, ids and texts are shown on terminals: a control character there (ESC starts an
    // escape sequence) is refused, line breaks and tabs of an explanation aside
    const auto& text = v.get_ref<const std::string&>();
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 || c == 0x7F) && c != '\n' && c != '\t') {
            char code[8];
            std::snprintf(code, sizeof code, "\\x%02X", c);
            fail_reading(source, where + ": \"" + key + "\" holds the control character " + code +
                                     ", which a terminal would act on");
        }
    }
    return text;
}

double number_value(const json& v, const std::string& where, const std::string& source) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const auto& s = v.get_ref<const std::string&>();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    fail_reading(source, where + ": expected a number (or \"inf\", \"-inf\", \"nan\"), found " + v.dump());
}

void read_data(const json& v, const Shape& shape, std::vector<std::size_t>& index, std::vector<double>& out,
               const std::string& where, const std::string& source) {
    const std::size_t axis = index.size();
    if (axis == shape.size()) {
        out.push_back(number_value(v, where + " data" + index_text(index), source));
        return;
    }
    if (!v.is_array() || v.size() != shape[axis])
        fail_reading(source, where + ": data" + index_text(index) + " should be a list of " + std::to_string(shape[axis]) +
                         " entries for shape " + shape_string(shape) + ", found " +
                         (v.is_array() ? std::to_string(v.size()) + " entries" : std::string(v.type_name())));
    for (std::size_t i = 0; i < shape[axis]; ++i) {
        index.push_back(i);
        read_data(v[i], shape, index, out, where, source);
        index.pop_back();
    }
}

std::vector<std::string> labels(const json& t, const char* key, const std::string& where, const std::string& source) {
    auto it = t.find(key);
    if (it == t.end()) return {};
    if (!it->is_array()) fail_reading(source, where + ": \"" + key + "\" must be a list of strings");
    std::vector<std::string> out;
    for (const auto& s : *it) {
        if (!s.is_string()) fail_reading(source, where + ": \"" + key + "\" must be a list of strings");
        out.push_back(s.get<std::string>());
    }
    return out;
}

View parse_view(const std::string& s, const std::string& where, const std::string& source) {
    if (s.empty() || s == "numbers") return View::numbers;
    if (s == "heatmap") return View::heatmap;
    if (s == "bars") return View::bars;
    if (s == "plot") return View::plot;
    fail_reading(source, where + ": unknown view \"" + s + "\"");
}

// The shape a nested list spells out, following first elements (read_data checks the rest).
json inferred_shape(const json& data) {
    json shape = json::array();
    for (const json* level = &data; level->is_array(); level = &(*level)[0]) {
        shape.push_back(level->size());
        if (level->empty() || shape.size() > 8) break;
    }
    return shape;
}

ForeignComparison parse_foreign(const json& f, const std::string& where, const std::string& source) {
    const std::string here = where + ", \"foreign\"";
    if (!f.is_object()) fail_reading(source, here + " must be an object");
    ForeignComparison out;
    out.why = string_member(f, "why", here, source);
    for (const auto& [key, kind] : {std::pair<const char*, ForeignComparison::Kind>{"shown", ForeignComparison::Kind::shown},
                                    std::pair<const char*, ForeignComparison::Kind>{"trained", ForeignComparison::Kind::trained}}) {
        if (!f.contains(key)) continue;
        if (f.size() != 2 || f[key] != true)
            fail_reading(source, here + ": \"" + key + "\" must be true, with nothing but \"why\" beside it");
        out.kind = kind;
        return out;
    }
    out.kind = ForeignComparison::Kind::tolerance;
    out.rtol = number_value(member(f, "rtol", here, source), here + " rtol", source);
    out.atol = number_value(member(f, "atol", here, source), here + " atol", source);
    if (!(out.rtol >= 0 && out.atol >= 0 && std::isfinite(out.rtol) && std::isfinite(out.atol)) || f.size() != 3)
        fail_reading(source, here + ": \"rtol\" and \"atol\" must be finite numbers >= 0, with \"why\" beside them");
    return out;
}

TensorRecord parse_tensor(const json& t, const std::string& where, const std::string& source, bool partial) {
    TensorRecord rec;
    rec.name = string_member(t, "name", where, source);
    const std::string here = where + ", tensor '" + rec.name + "'";
    rec.equation = string_member(t, "equation", here, source, true);
    const bool infer = partial && t.is_object() && t.find("shape") == t.end();
    const json shape_json = infer ? inferred_shape(member(t, "data", here, source)) : member(t, "shape", here, source);
    if (!shape_json.is_array()) fail_reading(source, here + ": \"shape\" must be a list of sizes");
    Shape shape;
    // The product of the non-zero sizes is bounded too: [0, 2^31, 2^31, 2^31] holds no number,
    // but its strides would overflow.
    std::size_t span = 1;
    for (const auto& s : shape_json) {
        if (!s.is_number_unsigned()) fail_reading(source, here + ": \"shape\" must hold non-negative integers");
        const auto n = s.get<std::uint64_t>();
        if (n > (std::uint64_t{1} << 31) || (n > 0 && span > (std::size_t{1} << 31) / n))
            fail_reading(source, here + ": shape " + shape_json.dump() + " is too large");
        shape.push_back(static_cast<std::size_t>(n));
        if (n > 0) span *= static_cast<std::size_t>(n);
    }
    if (shape.size() > 8) fail_reading(source, here + ": rank " + std::to_string(shape.size()) + " is above 8");
    // No reserve() for the size the shape claims: the data, checked entry by entry, may be far shorter.
    std::vector<double> flat;
    std::vector<std::size_t> index;
    read_data(member(t, "data", here, source), shape, index, flat, here, source);
    rec.value = xt::empty<double>(shape);
    std::copy(flat.begin(), flat.end(), rec.value.begin());
    rec.rows = labels(t, "rows", here, source);
    rec.cols = labels(t, "cols", here, source);
    if (!rec.rows.empty() && (shape.empty() || rec.rows.size() != shape[0]))
        fail_reading(source, here + ": " + std::to_string(rec.rows.size()) + " row labels for shape " + shape_string(shape));
    if (!rec.cols.empty() && (shape.size() < 2 || rec.cols.size() != shape[1]))
        fail_reading(source, here + ": " + std::to_string(rec.cols.size()) + " column labels for shape " + shape_string(shape));
    rec.view = parse_view(string_member(t, "view", here, source, true), here, source);
    // A golden file's own word on how others' numbers are compared; a submission's is never read (its
    // author would declare its tensors shown).
    if (!partial && t.contains("foreign")) rec.foreign = parse_foreign(t["foreign"], here, source);
    for (const auto& [key, flag] : {std::pair<const char*, bool*>{"measured", &rec.measured},
                                    std::pair<const char*, bool*>{"export_only", &rec.export_only}}) {
        if (!t.contains(key)) continue;
        if (!t[key].is_boolean()) fail_reading(source, here + ": \"" + key + "\" must be true or false");
        *flag = t[key].get<bool>();
    }
    return rec;
}

CheckRecord parse_check(const json& c, const std::string& where, const std::string& source) {
    CheckRecord rec;
    rec.claim = string_member(c, "claim", where, source);
    rec.max_abs_error = number_value(member(c, "max_abs_error", where, source), where + " max_abs_error", source);
    rec.tolerance = number_value(member(c, "tolerance", where, source), where + " tolerance", source);
    const json& holds = member(c, "holds", where, source);
    if (!holds.is_boolean()) fail_reading(source, where + ": \"holds\" must be true or false");
    rec.holds = holds.get<bool>();
    // as Trace::check decides it, so a NaN error never holds
    if (rec.holds != (rec.max_abs_error <= rec.tolerance))
        fail_reading(source, where + ": \"holds\" is " + (rec.holds ? "true" : "false") + ", but max_abs_error " +
                         number_text(rec.max_abs_error) + " <= tolerance " + number_text(rec.tolerance) + " is " +
                         (rec.holds ? "false" : "true"));
    if (c.contains("foreign_tolerance")) {
        rec.foreign_tolerance = number_value(c["foreign_tolerance"], where + " foreign_tolerance", source);
        if (!(rec.foreign_tolerance >= 0))  // NaN too
            fail_reading(source, where + ": \"foreign_tolerance\" must be a number >= 0 (or \"inf\")");
    }
    return rec;
}

Config parse_config(const json& c, const std::string& source) {
    if (!c.is_object()) fail_reading(source, "\"config\" must be an object");
    Config config;
    for (const auto& [key, value] : c.items()) {
        if (!value.is_number_integer()) fail_reading(source, "config \"" + key + "\" must be an integer");
        if (key != "seed" && value.is_number_unsigned() &&
            value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<long long>::max()))
            fail_reading(source, "config \"" + key + "\" is " + value.dump() + ", above the largest setting " +
                             std::to_string(std::numeric_limits<long long>::max()));
        if (key == "seed") {
            if (!value.is_number_unsigned()) fail_reading(source, "config \"seed\" must be a non-negative integer");
            config.seed = value.get<std::uint64_t>();
        } else {
            config.values.emplace_back(key, value.get<long long>());
        }
    }
    return config;
}

// "line L, column C" for a byte offset (1-based, as editors count).
std::string position_text(std::string_view text, std::size_t byte) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

[[noreturn]] void fail_reading(const std::string& source, const std::string& what) {
    throw GoldenError(printable_utf8(source + ": " + what));
}

std::string index_text(const std::vector<std::size_t>& index) {
    std::string out = "[";
    for (std::size_t i = 0; i < index.size(); ++i) out += (i ? ", " : "") + std::to_string(index[i]);
    return out + "]";
}

std::string printable_utf8(std::string_view text) {
    const auto at = [&](std::size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        // the length of the well-formed sequence at i (Unicode 15, table 3-7), or 0
        const unsigned c = at(i);
        std::size_t n = c < 0x80 ? 1 : c < 0xC2 ? 0 : c <= 0xDF ? 2 : c <= 0xEF ? 3 : c <= 0xF4 ? 4 : 0;
        const unsigned low = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
        const unsigned high = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
        if (n > 1 && (at(i + 1) < low || at(i + 1) > high)) n = 0;
        for (std::size_t k = 2; k < n; ++k)
            if (at(i + k) < 0x80 || at(i + k) > 0xBF) n = 0;
        // a control character (ESC starts a terminal's escape sequences) is shown, not sent; a line
        // break and a tab stay, since messages are laid out with them
        if (n == 1 && (c < 0x20 || c == 0x7F) && c != '\n' && c != '\t') n = 0;
        if (n == 0) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02X", c);
            out += escaped;
            ++i;
        } else {
            out.append(text.substr(i, n));
            i += n;
        }
    }
    return out;
}

std::string golden_file_name(int number, const std::string& slug) {
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%02d_", number);
    return prefix + slug + ".json";
}

std::string to_golden_json(const Trace& trace) {
    std::ostringstream out;
    out << "{\n";
    out << "  \"format\": \"attn-golden\",\n";
    out << "  \"version\": " << golden_format_version << ",\n";
    out << "  \"lesson\": " << json_quoted(trace.lesson()) << ",\n";
    out << "  \"config\": {\"seed\": " << trace.config().seed;
    for (const auto& [key, value] : trace.config().values) out << ", " << json_quoted(key) << ": " << value;
    out << "},\n";
    out << "  \"steps\": [";
    const auto& steps = trace.steps();
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& s = steps[i];
        out << (i ? ",\n" : "\n") << "    {\n";
        out << "      \"id\": " << json_quoted(s.id) << ",\n";
        out << "      \"title\": " << json_quoted(s.title) << ",\n";
        out << "      \"equation\": " << json_quoted(s.equation) << ",\n";
        out << "      \"explanation\": " << json_quoted(s.explanation) << ",\n";
        out << "      \"tensors\": [";
        for (std::size_t k = 0; k < s.tensors.size(); ++k) {
            out << (k ? ",\n" : "\n");
            write_tensor(out, s.tensors[k]);
        }
        out << (s.tensors.empty() ? "],\n" : "\n      ],\n");
        out << "      \"checks\": [";
        for (std::size_t k = 0; k < s.checks.size(); ++k) {
            out << (k ? ",\n" : "\n");
            write_check(out, s.checks[k]);
        }
        out << (s.checks.empty() ? "]\n" : "\n      ]\n");
        out << "    }";
    }
    out << (steps.empty() ? "]\n" : "\n  ]\n");
    out << "}\n";
    return out.str();
}

namespace {

// Reads golden JSON; `partial` relaxes it to what a student's file needs: format, version,
// lesson, config, titles, shapes and checks become optional (validated when present).
Submission parse_json(std::string_view text, const std::string& source, bool partial) {
    // Copying, comparing and dump() of a JSON value recurse once per level of nesting (so does the
    // parser, for an object member that is not the last): deeper than any golden file, refused.
    const int max_depth = 64;
    const auto limit_depth = [&](int depth, json::parse_event_t, json&) {
        if (depth > max_depth)
            fail_reading(source, "not a golden file: nested deeper than " + std::to_string(max_depth) + " levels");
        return true;
    };
    if (text.substr(0, 6) == std::string_view("\x93NUMPY", 6))
        fail_reading(source, "this is a .npy file, not JSON: .npy files go in a directory, named <step>.<tensor>.npy");
    json doc;
    try {
        doc = json::parse(text.begin(), text.end(), limit_depth);
    } catch (const json::parse_error& e) {
        // e.what() is "[json...] parse error at line L, column C: <why>" with L and C counted in bytes;
        // keep <why> (whose quoted token may itself hold ": ") and count columns in characters
        std::string why = e.what();
        const auto colon = why.find(": ");
        if (colon != std::string::npos) why = why.substr(colon + 2);
        // Python's json module writes NaN and Infinity bare
        if (why.find("invalid literal") != std::string::npos)
            why += " (NaN and Infinity are not JSON: write \"nan\", \"inf\" or \"-inf\")";
        fail_reading(source, "not valid JSON at " + position_text(text, e.byte == 0 ? 0 : e.byte - 1) + ": " + why);
    } catch (const json::out_of_range& e) {
        // a number beyond the range of a double (1e400) is an out_of_range error, not a parse_error
        std::string why = e.what();
        const auto bracket = why.find("] ");
        if (bracket != std::string::npos) why = why.substr(bracket + 2);
        fail_reading(source, "not valid JSON: " + why + " (a number must fit a double; infinity is written \"inf\")");
    }
    if (!doc.is_object()) fail_reading(source, "the top level must be a JSON object");
    const auto has = [&](const char* key) { return doc.find(key) != doc.end(); };
    if ((!partial || has("format")) && string_member(doc, "format", "the file", source) != "attn-golden")
        fail_reading(source, "\"format\" must be \"attn-golden\"");
    if (!partial || has("version")) {
        const json& version = member(doc, "version", "the file", source);
        if (!version.is_number_integer() || version.get<long long>() != golden_format_version)
            fail_reading(source, "golden format version " + version.dump() + " is not supported (this attn reads version " +
                             std::to_string(golden_format_version) + ")");
    }
    Submission sub;
    sub.has_lesson = !partial || has("lesson");
    sub.has_config = !partial || has("config");
    sub.trace = Trace(sub.has_lesson ? string_member(doc, "lesson", "the file", source) : std::string(),
                      sub.has_config ? parse_config(member(doc, "config", "the file", source), source) : Config{});
    Trace& trace = sub.trace;
    const json& steps = member(doc, "steps", "the file", source);
    if (!steps.is_array()) fail_reading(source, "\"steps\" must be a list");
    for (const auto& s : steps) {
        const std::string id = string_member(s, "id", "a step", source);
        const std::string where = "step '" + id + "'";
        if (trace.find_step(id)) fail_reading(source, where + " appears twice");
        Step& step = trace.step(id, string_member(s, "title", where, source, partial),
                                string_member(s, "equation", where, source, true),
                                string_member(s, "explanation", where, source, true));
        const json& tensors = member(s, "tensors", where, source);
        if (!tensors.is_array()) fail_reading(source, where + ": \"tensors\" must be a list");
        for (const auto& t : tensors) {
            TensorRecord rec = parse_tensor(t, where, source, partial);
            for (const auto& other : step.tensors)
                if (other.name == rec.name) fail_reading(source, where + ": tensor '" + rec.name + "' appears twice");
            step.tensors.push_back(std::move(rec));
        }
        if (partial && s.find("checks") == s.end()) continue;
        const json& checks = member(s, "checks", where, source);
        if (!checks.is_array()) fail_reading(source, where + ": \"checks\" must be a list");
        for (const auto& c : checks) step.checks.push_back(parse_check(c, where + ", a check", source));
    }
    return sub;
}

std::string file_text(const std::filesystem::path& file) {
    std::string text = read_file_bytes(file, "golden file");
    if (text.empty()) fail_reading(file.string(), "the file is empty");
    return text;
}

// A directory of "<step>.<tensor>.npy" files as a partial trace.
Submission read_npy_directory(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        if (entry.path().extension() == ".npy") files.push_back(entry.path());
    if (files.empty()) fail_reading(dir.string(), "has no <step>.<tensor>.npy files");
    std::sort(files.begin(), files.end());
    Submission sub;
    sub.trace = Trace("", Config{});
    for (const auto& file : files) {
        const std::string stem = file.stem().string();
        const auto dot = stem.find('.');
        if (dot == std::string::npos || dot == 0 || dot + 1 == stem.size())
            fail_reading(file.string(), "is not named <step>.<tensor>.npy");
        // the names reach reports and the terminal
        if (printable_utf8(stem) != stem) fail_reading(file.string(), "the name is not valid UTF-8");
        const std::string step_id = stem.substr(0, dot), name = stem.substr(dot + 1);
        auto& steps = sub.trace.steps();
        if (steps.empty() || steps.back().id != step_id) {
            if (sub.trace.find_step(step_id)) fail_reading(file.string(), "step '" + step_id + "' is split");
            sub.trace.step(step_id, "", "", "");
        }
        sub.trace.tensor(name, "", read_npy(file));
    }
    return sub;
}

}  // namespace

// "FIFO (named pipe)", "character device", ...: what a path that is not a regular file is.
static std::string file_kind(mode_t mode) {
    if (S_ISFIFO(mode)) return "FIFO (named pipe)";
    if (S_ISCHR(mode)) return "character device";
    if (S_ISBLK(mode)) return "block device";
    if (S_ISSOCK(mode)) return "socket";
    return "special file";
}

std::string read_file_bytes(const std::filesystem::path& file, const std::string& kind, std::uintmax_t max_bytes) {
    const std::string limit = "the " + mib_text(max_bytes) + " limit for a " + kind;
    // Opened without blocking, then judged by the descriptor: an ordinary open of a FIFO waits for
    // a writer forever, and a check by name before the open could be fooled by a file swapped in
    // between. Only a regular file is read (a device such as /dev/zero never ends).
    const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fail_reading(file.string(), std::string("cannot open: ") + std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) fail_reading(file.string(), std::string("cannot read: ") + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) fail_reading(file.string(), "is a directory, not a " + kind);
    if (!S_ISREG(st.st_mode))
        fail_reading(file.string(), "is a " + file_kind(st.st_mode) + ", not a regular file; a " + kind +
                                        " must be a regular file");
    // Refused before reading: a 200 MB file would otherwise be read and parsed for seconds.
    const auto size = static_cast<std::uintmax_t>(st.st_size);
    if (size > max_bytes) fail_reading(file.string(), "the file is " + mib_text(size) + ", above " + limit);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::string bytes;
    bytes.reserve(static_cast<std::size_t>(size));
    char piece[1 << 16];
    for (;;) {
        const ssize_t n = ::read(fd, piece, sizeof piece);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail_reading(file.string(), std::string("read error: ") + std::strerror(errno));
        }
        if (n == 0) break;
        bytes.append(piece, static_cast<std::size_t>(n));
        // checked again: a file that grows while it is read
        if (bytes.size() > max_bytes) fail_reading(file.string(), "the file goes on beyond " + limit);
    }
    return bytes;
}

Trace parse_golden_json(std::string_view text, const std::string& source) {
    return parse_json(text, source, false).trace;
}

Submission parse_submission_json(std::string_view text, const std::string& source) {
    return parse_json(text, source, true);
}

Submission read_submission(const std::filesystem::path& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return read_npy_directory(path);
    return parse_submission_json(file_text(path), path.string());
}

Trace read_golden(const std::filesystem::path& file) {
    return parse_golden_json(file_text(file), file.string());
}

namespace {

// The temporary files of `name` (".<name>.tmp.<pid>.XXXXXX") that a process killed while writing
// left in `dir`: those whose process is gone are removed. A live process's are left alone.
void remove_stale_temporaries(const std::filesystem::path& dir, const std::string& name) {
    const std::string prefix = "." + name + ".tmp.";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string other = entry.path().filename().string();
        if (other.rfind(prefix, 0) != 0) continue;
        const std::string rest = other.substr(prefix.size());
        const auto dot = rest.find('.');
        if (dot == std::string::npos || dot == 0 || rest.find_first_not_of("0123456789") != dot) continue;
        const long pid = std::strtol(rest.substr(0, dot).c_str(), nullptr, 10);
        if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            std::filesystem::remove(entry.path(), ec);
    }
}

}  // namespace

void write_file_atomic(const std::filesystem::path& given, const std::string& content) {
    // a symlink is written through: its target gets the new content and the link stays a link
    std::error_code ec;
    std::filesystem::path file = given;
    if (std::filesystem::is_symlink(given, ec)) {
        const std::filesystem::path target = std::filesystem::read_symlink(given, ec);
        if (ec) throw std::runtime_error("cannot write " + given.string() + ": cannot read the symlink");
        file = target.is_absolute() ? target : given.parent_path() / target;
    }
    // only a regular file is ever replaced: the rename below would put a regular file in place of
    // a device node, a FIFO or a socket (reached through a link or named directly)
    struct stat existing {};
    if (::stat(file.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
        const char* kind = S_ISDIR(existing.st_mode)                                 ? "a directory"
                           : S_ISCHR(existing.st_mode) || S_ISBLK(existing.st_mode) ? "a device"
                           : S_ISFIFO(existing.st_mode)                               ? "a FIFO"
                           : S_ISSOCK(existing.st_mode)                               ? "a socket"
                                                                                      : "not a regular file";
        throw std::runtime_error(printable_utf8("cannot write " + given.string() + ": " +
                                                (file == given ? std::string("it") : file.string()) + " is " + kind +
                                                ", and attn replaces only regular files; it is left as it is"));
    }
    const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
    remove_stale_temporaries(dir, file.filename().string());
    std::string tmpl =
        (dir / ("." + file.filename().string() + ".tmp." + std::to_string(::getpid()) + ".XXXXXX")).string();
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error("cannot write " + given.string() + ": " + std::strerror(errno));
    auto give_up = [&](const char* what) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmpl.c_str());
        throw std::runtime_error("cannot write " + given.string() + " (" + what + "): " + std::strerror(err));
    };
    const char* p = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            give_up("write");
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) give_up("fsync");
    // the mode of the file replaced (a read-only golden file stays read-only); a new file gets
    // 0644, an ordinary readable file (mkstemp makes it 0600)
    struct stat old {};
    const mode_t mode = ::stat(file.c_str(), &old) == 0 ? (old.st_mode & 07777) : 0644;
    if (::fchmod(fd, mode) != 0) give_up("chmod");
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(tmpl.c_str());
        throw std::runtime_error("cannot write " + given.string() + " (close): " + std::strerror(err));
    }
    if (std::rename(tmpl.c_str(), file.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmpl.c_str());
        throw std::runtime_error("cannot write " + given.string() + " (rename): " + std::strerror(err));
    }
}

}  // namespace attn
