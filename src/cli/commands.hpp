// The commands of `attn`; main.cpp parses the arguments and calls one of these (or one of the
// exercise commands, exercises/commands.hpp).
// Each returns the process exit code.
#pragma once

#include "core/compare.hpp"
#include "core/render.hpp"
#include "exercises/command_support.hpp"
#include "exercises/commands.hpp"
#include "lesson_setup.hpp"

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attn {

struct RunOptions {
    std::vector<std::string> lessons;  // numbers or slugs, or "all"
    std::string step;                  // show only this step (--step)
    bool pause = false;                // wait for Enter between steps when stdin is a terminal
    RenderOptions render;
    LessonSetup setup;                 // --seed, --set, --input
    std::filesystem::path svg_dir;     // --svg: write every heatmap, plot and bar chart there as an SVG file
    std::filesystem::path book_dir;    // --book: also write the lessons run as web pages there, as `book --out`
    bool help = false;                 // --help: the options, and the named lessons' parameters
    bool kept_race = false;            // --kept-race: lessons 12 and 13 load the race the build kept (use_kept_race)
    std::size_t width = 0;             // --width N: draw in N columns (0: the terminal's, or 78 when not a terminal)
};

struct BookOptions {
    std::vector<std::string> lessons;  // numbers or slugs, or "all" (empty: every lesson)
    std::filesystem::path out;         // --out DIR: index.html and one page per lesson
    LessonSetup setup;                 // --seed, --set, --input
    bool kept_race = false;            // --kept-race, as RunOptions'
};

struct GoldenOptions {
    std::vector<std::string> lessons;  // empty: every lesson
    std::filesystem::path golden_dir;
    Tolerance tolerance;
    bool force = false;  // bless even when CI is set
};

struct ExportOptions {
    std::vector<std::string> lessons;  // numbers or slugs, or "all"
    std::string format = "json";  // json: one golden-format file; npy: <step>.<tensor>.npy per tensor
    std::filesystem::path out;
    LessonSetup setup;  // --seed, --set, --input
};

struct CompareOptions {
    std::filesystem::path submission;  // relaxed golden JSON, or a directory of .npy files
    std::string lesson;
    std::string step;  // compare only this step
    std::filesystem::path golden_dir;
    Tolerance tolerance;
};

struct GradeOptions {
    std::vector<std::filesystem::path> submissions;  // one directory per student
    std::filesystem::path out;                       // writes <out>.csv, <out>.long.csv and <out>.json
    std::filesystem::path golden_dir;
    Tolerance tolerance;
    std::vector<std::string> exercises;  // --exercise: grade only these (empty: every exercise)
    bool sources = false;                // --sources: the folders hold exercise .cpp files to build and run
    double cpu_limit = 300;              // --cpu-limit: CPU seconds per student (building and running), sources only
    std::size_t memory_limit_mib = 2048;  // --memory-limit: MiB of address space per process, sources only
    std::filesystem::path work_dir;      // --keep-builds DIR: build there and keep it (default: a temporary folder)
    std::size_t jobs = 0;                // --jobs: students graded at once, sources only (0: one per core)
    std::filesystem::path points_file;   // --points FILE: what each exercise is worth in the report
    std::map<std::string, double> points;       // read from points_file
    std::vector<std::string> command_line;      // for the report's metadata
    bool slurm = false;       // --slurm: one Slurm array task per student, then the reports (sources only)
    long slurm_task = -1;     // --slurm-task I: grade student I into OUT.slurm/results/I.json (a task of --slurm)
};

int cmd_list();
// attn run: every lesson's steps on stdout; with --book also their pages, from the same runs (the bytes
// `attn book` writes for them), written after the last lesson; exit 3 when they cannot be written.
int cmd_run(const RunOptions& options);
int cmd_run_help(const std::string& usage, const std::vector<std::string>& lessons);  // run --help
// attn book: runs the lessons once and writes their pages (core/html.hpp); exit 1 when a check
// fails or a lesson stops early (the pages are written all the same), 2 for bad arguments, 3
// when the pages cannot be written (--out a file, or a folder that cannot be made or written).
int cmd_book(const BookOptions& options);
int cmd_check(const GoldenOptions& options);
int cmd_bless(const GoldenOptions& options);
// attn export: each lesson's run written as a golden-format JSON file, or as .npy files (into a folder per
// lesson when there are several); a lesson that stops early is said and skipped (exit 1 at the end).
int cmd_export(const ExportOptions& options);
int cmd_compare(const CompareOptions& options);
int cmd_grade(const GradeOptions& options);
// keep-race --out FILE [--from OTHER]: lesson 12's race at its defaults in `file` (transformer_race.hpp).
// When `file` already holds this code's race only its time is refreshed (for the build); else it gets
// OTHER's bytes when OTHER holds this code's race (another build of the same sources kept it); else the
// race is trained and written.
int cmd_keep_race(const std::filesystem::path& file, const std::filesystem::path& from);

}  // namespace attn
