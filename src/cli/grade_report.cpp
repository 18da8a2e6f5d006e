// The report of `attn grade`: the console table, the wide and long CSV and the JSON.
#include "cli/grade.hpp"

#include "core/golden.hpp"
#include "core/names.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

namespace attn {

namespace {

// One CSV cell: on one line (line breaks become " | "), and never a formula: a cell that starts
// with =, +, -, @, a tab or a carriage return gets a leading ' and quotes, as OWASP's advice on
// CSV injection has it, since a spreadsheet would run it (a folder named "=cmd|' /C calc'!A0").
std::string csv_field(const std::string& text) {
    std::string s;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;
        s += text[i] == '\n' || text[i] == '\r' ? std::string(" | ") : std::string(1, text[i]);
    }
    // spreadsheets skip leading spaces before they look for a formula
    const std::size_t first = text.find_first_not_of(' ');
    const bool formula = first != std::string::npos && std::string("=+-@\t\r").find(text[first]) != std::string::npos;
    if (formula) s = "'" + s;
    if (!formula && s.find_first_of(",\"") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

// A student's points: the sum over the rows (GradeRow::points).
std::pair<int, int> points_of(const std::vector<GradeRow>& rows, std::size_t first, std::size_t count) {
    int points = 0, max_points = 0;
    for (std::size_t i = first; i < first + count; ++i) {
        points += rows[i].points;
        max_points += rows[i].max_points;
    }
    return {points, max_points};
}

// The teacher's table: one row per student, one column per exercise (its result), then the
// exercises passed, the points and the points possible.
std::string grade_csv_wide(const std::vector<GradeRow>& rows, const std::vector<const Exercise*>& exercises) {
    std::string out = "student";
    for (const Exercise* x : exercises) out += "," + csv_field(x->id);
    out += ",passed,points,max_points\n";
    for (std::size_t at = 0; at + exercises.size() <= rows.size() && !exercises.empty(); at += exercises.size()) {
        std::size_t passed = 0;
        out += csv_field(rows[at].student);
        for (std::size_t i = 0; i < exercises.size(); ++i) {
            out += "," + rows[at + i].result;
            passed += rows[at + i].result == "pass" ? 1 : 0;
        }
        const auto [points, max_points] = points_of(rows, at, exercises.size());
        out += fmt::format(",{},{},{}\n", passed, points, max_points);
    }
    return out;
}

// Every result with its message, one line each: for a script, or to see why.
std::string grade_csv_long(const std::vector<GradeRow>& rows) {
    std::string out = "student,lesson,exercise,result,points,max_points,first_diverging_step,message\n";
    for (const auto& r : rows)
        out += fmt::format("{},{},{},{},{},{},{},{}\n", csv_field(r.student), csv_field(r.lesson),
                           csv_field(r.exercise), r.result, r.points,
                           r.max_points, csv_field(r.step), csv_field(r.message));
    return out;
}

std::string grade_json(const std::vector<GradeRow>& rows, std::size_t per_student) {
    nlohmann::ordered_json results = nlohmann::ordered_json::array(), students = nlohmann::ordered_json::array();
    for (std::size_t at = 0; at + per_student <= rows.size() && per_student > 0; at += per_student) {
        std::size_t passed = 0;
        for (std::size_t i = at; i < at + per_student; ++i) {
            const GradeRow& r = rows[i];
            passed += r.result == "pass" ? 1 : 0;
            results.push_back({{"student", r.student}, {"lesson", r.lesson}, {"exercise", r.exercise},
                               {"result", r.result}, {"points", r.points}, {"max_points", r.max_points},
                               {"first_diverging_step", r.step},
                               {"message", r.message}});
        }
        const auto [total, max_total] = points_of(rows, at, per_student);
        students.push_back({{"student", rows[at].student}, {"passed", passed}, {"points", total},
                            {"max_points", max_total}});
    }
    const nlohmann::ordered_json doc = {{"students", students}, {"results", results}};
    return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string capped(const std::string& text, std::size_t limit) {
    if (text.size() <= limit) return text;
    std::size_t cut = limit - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    return text.substr(0, cut) + "…";
}

std::string student_name(const std::filesystem::path& dir) {
    return printable_utf8(dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string());
}

void print_grade_header() {
    fmt::print("{:<24} {:>5} {:>5} {:>6} {:>8} {:>7}\n", "student", "pass", "fail", "error", "missing", "points");
    std::fflush(stdout);
}

void print_grade_line(const std::vector<GradeRow>& rows, std::size_t first, std::size_t count) {
    if (count == 0 || first + count > rows.size()) return;
    std::map<std::string, int> tally;
    for (std::size_t i = first; i < first + count; ++i) ++tally[rows[i].result];
    const auto [points, max_points] = points_of(rows, first, count);
    fmt::print("{:<24} {:>5} {:>5} {:>6} {:>8} {:>7}\n", rows[first].student, tally["pass"], tally["fail"],
               tally["error"], tally["missing"], fmt::format("{}/{}", points, max_points));
    std::fflush(stdout);
}

int write_grade_reports(const std::vector<GradeRow>& given, const std::vector<const Exercise*>& exercises,
                        const std::filesystem::path& out) {
    // Every text of a row may come from a submission (a folder's name, a step, a message): each is
    // made printable here, whatever its writer did, so no report carries a terminal's escape
    // sequence or invalid UTF-8; and no row claims more points than it can have.
    std::vector<GradeRow> rows = given;
    for (auto& r : rows) {
        for (std::string* text : {&r.student, &r.lesson, &r.exercise, &r.result, &r.step, &r.message})
            *text = printable_utf8(*text);
        r.max_points = std::max(r.max_points, 0);
        r.points = std::clamp(r.points, 0, r.max_points);
    }
    const std::filesystem::path csv = out.string() + ".csv", long_csv = out.string() + ".long.csv",
                                json = out.string() + ".json";
    try {
        write_file_atomic(csv, grade_csv_wide(rows, exercises));
        write_file_atomic(long_csv, grade_csv_long(rows));
        write_file_atomic(json, grade_json(rows, exercises.size()));
    } catch (const std::exception& e) {
        fmt::print(stderr, "attn: {}\n", e.what());
        return exit_golden;
    }
    fmt::print("wrote {}, {} and {}\n", printable_utf8(csv.string()), printable_utf8(long_csv.string()),
               printable_utf8(json.string()));
    // as check does: 1 when anything is not a pass
    const bool all_pass = std::all_of(rows.begin(), rows.end(), [](const GradeRow& r) { return r.result == "pass"; });
    return all_pass ? exit_ok : exit_mismatch;
}

}  // namespace attn
