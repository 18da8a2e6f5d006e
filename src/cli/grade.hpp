// `attn grade`: the rows of the report (one per student and exercise), the report files, and
// grading from sources (grade_sources.cpp), which builds and runs each student's files in a sandbox.
#pragma once

#include "cli/commands.hpp"
#include "exercises/table.hpp"

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attn {

struct GradeRow {
    std::string student, lesson, exercise;
    std::string result;   // pass, fail, error or missing
    std::string step;     // the first diverging step, or the unit case that failed
    std::string message;  // at most max_message_bytes (the JSON report has it whole, the CSV cut)
    // Graded from numbers: 1 point for a pass, of 1. From sources: one per unit case passed and one
    // for the lesson's steps, of 1 + the exercise's unit cases (ExerciseStatus::points).
    int points = 0, max_points = 1;
    // What the exercise is worth in the report (--points), or 0: max_points. The report shows
    // worth * points / max_points.
    double worth = 0;
};

inline constexpr std::size_t max_message_bytes = 20000;

// What row `r` earns and is worth in the report, --points applied (rounded to hundredths).
double score_of(const GradeRow& r);
double worth_of(const GradeRow& r);

// The worth --points gives `exercise`, or 0 (its own points).
double worth_in(const GradeOptions& o, const std::string& exercise);

// Reads a --points file: one "exercise points" pair a line (a comma or spaces between), '#' starts
// a comment. Returns false after printing what is wrong (a line, an unknown exercise, a number).
bool read_points_file(const std::filesystem::path& file, std::map<std::string, double>& points);

// At most `limit` bytes, cut on a UTF-8 character boundary, with "…" when cut.
std::string capped(const std::string& text, std::size_t limit);

// The student's name as reports show it: the folder's last component, printable.
std::string student_name(const std::filesystem::path& dir);

// The console table: its header, then one line per student (that student's rows).
void print_grade_header();
void print_grade_line(const std::vector<GradeRow>& rows, std::size_t first, std::size_t count);

// Writes OUT.csv (wide: one row per student, a result and the points per exercise), OUT.long.csv,
// OUT.json (with the report's metadata, and every message whole) and OUT.feedback/<student>.md (one
// file per student, to hand back) for `rows`, which hold `exercises.size()` rows per student in
// the order of `exercises`. Returns exit_ok when every row passed, exit_mismatch when any did not,
// exit_golden when a file cannot be written.
int write_grade_reports(const std::vector<GradeRow>& rows, const std::vector<const Exercise*>& exercises,
                        const GradeOptions& o);

// Grading from sources: each student's folder of exercise .cpp files built and checked in a sandbox.
int grade_from_sources(const GradeOptions& o, const std::vector<const Exercise*>& exercises);

}  // namespace attn
