// attn: derives attention mechanisms step by step in the terminal.
// This file only parses the command line (CLI11) and dispatches to src/cli/commands.cpp.
#include "attn_config.hpp"
#include "exercises/command_support.hpp"
#include "commands.hpp"
#include "core/allocator.hpp"
#include "core/golden.hpp"
#include "nn/kernels.hpp"
#include "exercises/program.hpp"
#include "transformer_race.hpp"
#include "translator.hpp"
#include "text/bible.hpp"
#include "text/sentencepiece.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <limits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

namespace {

using namespace attn;

const std::map<std::string, ColorMode> color_modes = {
    {"auto", ColorMode::auto_}, {"always", ColorMode::always}, {"never", ColorMode::never}};

// The columns attn run draws in on a terminal `columns` wide (0: not a terminal): drawing_width, saying on
// standard error when the terminal is narrower than a table needs.
std::size_t run_width(std::size_t columns) {
    if (columns > 0 && columns < min_line_width)
        fmt::print(stderr, "{} run: this terminal is {} columns wide and a table needs {}: drawing at {} (widen it, "
                           "or pipe into 'less -S')\n",
                   this_program().name, columns, min_line_width, min_line_width);
    return drawing_width(columns);
}

void add_golden_options(CLI::App& cmd, GoldenOptions& o) {
    cmd.add_option("--golden", o.golden_dir, "Directory of the golden files (default: the source tree's golden/)");
}

void add_setup_options(CLI::App& cmd, LessonSetup& setup) {
    // an empty --seed "" is a seed given and refused, not the default
    cmd.add_option("--seed", setup.seed, "Seed of the lesson's random numbers (default 7, as in the golden files)")
        ->each([&setup](const std::string&) { setup.seed_given = true; });
    cmd.add_option("--set", setup.settings, "key=value: change a parameter (repeat for several); "
                                            "'attn run <lesson> --help' lists them")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd.add_option("--input", setup.input, "Your tensors in place of the lesson's inputs and parameters: a "
                                           "golden-format JSON file, or a directory of <tensor>.npy files");
}

void add_tolerance_options(CLI::App& cmd, Tolerance& tol) {
    cmd.add_option("--rtol", tol.rtol, "Relative tolerance, |a - e| <= atol + rtol * |e| (default 1e-9)");
    cmd.add_option("--atol", tol.atol, "Absolute tolerance (default 1e-12)");
}

std::string version_text(const Program& p) {
    std::string text = p.name + " " + ATTN_VERSION + " (golden format " + std::to_string(ATTN_GOLDEN_FORMAT_VERSION);
    if (p.exercise_build) text += "; exercise files from " + p.exercises_dir.string();
    return text + ")";
}

// fmt::print's error when a write to stdout or stderr fails (closed, full, a broken pipe).
bool is_write_failure(const std::system_error& e) {
    return dynamic_cast<const std::filesystem::filesystem_error*>(&e) == nullptr &&
           std::string_view(e.what()).find("cannot write to file") != std::string_view::npos;
}

// Output that cannot be written: exit 3, with a message on stderr when stderr still works (written
// without stdio, whose stderr may be the stream that failed), and none for a reader that went away.
int output_failed(int error) {
    if (error != EPIPE) {
        const std::string text =
            this_program().name + ": cannot write the output: " + std::strerror(error) + "\n";
        [[maybe_unused]] const auto ignored = ::write(STDERR_FILENO, text.data(), text.size());
    }
    return exit_golden;
}

// watch --runs N: a whole number from 1 up, digits only ("-1", "x", "0", "1.5" and "" are refused).
bool parse_runs(const std::string& text, std::size_t& runs) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return false;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), runs);
    return error == std::errc() && end == text.data() + text.size() && runs > 0;
}

constexpr const char* kept_race_help =
    "Lessons 12 and 13 at their defaults load lesson 12's race (its three models as trained, with their curves) "
    "from the file the build kept for this code, instead of training it again: the same numbers in seconds "
    "(a stale or damaged file is refused)";

// --kept-race: from here on, lessons 12 and 13 at their defaults load the race the build trained (attn
// keep-race, build/transformer-race.bin) instead of training: the same bits (the file names the code that
// trained it, and a stale one is refused: RaceFileError, exit 3). Without it the lessons a user runs
// train in front of them. Said on stderr, so that standard output stays the lessons'.
void use_kept_race() {
    const std::filesystem::path file = checked_reference_race(
        "run this again, or leave --kept-race out to train the race here", "--kept-race loads lesson 12's race");
    transformer::decode_with_kept_race(file);
    fmt::print(stderr, "{}: lessons 12 and 13 at their defaults load lesson 12's race from {} (kept by the build "
                       "for this code), not trained here\n",
               this_program().name, shown_path(file));
}

int run_main(int argc, char** argv) {
    tune_allocator_for_tensors();
    if (const std::string problem = nn::kernel_path_problem(); !problem.empty()) {
        std::fprintf(stderr, "attn: %s\n", problem.c_str());
        return exit_usage;
    }
    const Program& program = this_program();
    CLI::App app{program.exercise_build
                     ? program.name + ": attn built with the exercise files of " + program.exercises_dir.string() +
                           ".\nIt runs the lessons with your functions and checks your exercises."
                     : "attn: derives attention mechanisms step by step, checks every claimed equality\n"
                       "numerically and compares every tensor with the golden files.",
                 program.name};
    app.set_version_flag("--version", version_text(program));
    app.require_subcommand(1);
    app.footer("Exit codes: 0 ok, 1 mismatch or failed identity check, 2 usage error,\n"
               "3 missing or corrupt golden file. See docs/golden-files.md for the golden-file workflow.");

    app.add_subcommand("list", "List the lessons in course order");

    RunOptions run;
    std::string color = "auto";
    auto* run_cmd = app.add_subcommand("run", "Run lessons: every step's equation, explanation, tensors and checks");
    // --help also lists the parameters of the lessons named, so the lesson is checked after parsing
    run_cmd->set_help_flag();
    run_cmd->add_flag("-h,--help", run.help, "Print this help and the parameters of the lessons named");
    run_cmd->add_option("lesson", run.lessons, "Lesson numbers or slugs, or 'all'");
    run_cmd->add_option("--step", run.step, "Show only the step with this id (ids are shown in brackets)");
    run_cmd->add_flag("--pause", run.pause, "Wait for Enter between steps, a screenful at a time; q Enter quits (when stdin is a terminal)");
    run_cmd->add_flag("--show-params", run.render.show_params,
                      "Print every number of the drawn weights; by default each is one line (mean, sd, range)");
    run_cmd->add_option("--precision", run.render.precision, "Decimals shown (default 4)")
        ->check(CLI::Range(0, 17));
    run_cmd->add_option("--color", color, "Colour: auto (a terminal and no NO_COLOR), always or never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    add_setup_options(*run_cmd, run.setup);
    run_cmd->add_option("--svg", run.svg_dir, "Write every heatmap, line plot and bar chart as an SVG file into this "
                                              "directory (created if missing)");
    run_cmd->add_option("--book", run.book_dir, "Also write the lessons run as web pages into this directory, as "
                                                "'book --out' does, from the same runs (created if missing)");
    run_cmd->add_flag("--kept-race", run.kept_race, kept_race_help);
    run_cmd
        ->add_option("--width", run.width,
                     fmt::format("Draw in this many columns (default: the terminal's width; 78 when the output is "
                                 "not a terminal); at least {}, where a table of a few columns still fits",
                                 min_line_width))
        ->check(CLI::Range(min_line_width, std::size_t{400}));

    BookOptions book;
    auto* book_cmd = app.add_subcommand(
        "book", "Write the lessons as web pages: index.html and one page per lesson, with pictures, equations and checks");
    book_cmd->add_option("lesson", book.lessons, "Lesson numbers or slugs, or 'all' (default: every lesson)");
    book_cmd->add_option("--out", book.out, "Directory to write the pages to (created if missing)")->required();
    add_setup_options(*book_cmd, book.setup);
    book_cmd->add_flag("--kept-race", book.kept_race, kept_race_help);

    // In an exercise build, check checks the exercises; the reference checks the lessons.
    GoldenOptions check;
    ExerciseOptions exercise_check;
    check.golden_dir = exercise_check.golden_dir = ATTN_GOLDEN_DIR;
    CLI::App* check_cmd = nullptr;
    if (program.exercise_build) {
        check_cmd = app.add_subcommand("check", "Check your exercises against the lessons' golden files (all by "
                                                "default): where each diverges, and a hint");
        check_cmd->add_option("exercise", exercise_check.exercises, "Exercise ids");
        check_cmd->add_option("--format", exercise_check.format, "text, or json for graders")
            ->check(CLI::IsMember({"text", "json"}));
        add_tolerance_options(*check_cmd, exercise_check.tolerance);
        check_cmd->add_option("--golden", exercise_check.golden_dir, "Directory of the golden files");
    } else {
        check_cmd = app.add_subcommand("check", "Compare lessons with their golden files (all lessons by default)");
        check_cmd->add_option("lesson", check.lessons, "Lesson numbers or slugs, or 'all'");
        add_tolerance_options(*check_cmd, check.tolerance);
        add_golden_options(*check_cmd, check);
    }

    GoldenOptions bless;
    bless.golden_dir = ATTN_GOLDEN_DIR;
    auto* bless_cmd = app.add_subcommand("bless", "Rewrite golden files from the lessons, showing what changes");
    bless_cmd->add_option("lesson", bless.lessons, "Lesson numbers or slugs, or 'all'")->required();
    bless_cmd->add_flag("--force", bless.force, "Bless even when the CI environment variable is set");
    add_golden_options(*bless_cmd, bless);

    ExportOptions exporting;
    auto* export_cmd = app.add_subcommand("export", "Write every tensor of lessons (inputs and parameters too)");
    export_cmd->add_option("lesson", exporting.lessons, "Lesson numbers or slugs, or 'all' (run in one program: "
                                                        "lesson 13 then uses the race lesson 12 trained)")
        ->required();
    export_cmd->add_option("--format", exporting.format,
                           "json (one golden-format file per lesson, <NN>_<slug>.json) or npy (<step>.<tensor>.npy; "
                           "of several lessons, in a folder <NN>_<slug>/ each)")
        ->check(CLI::IsMember({"json", "npy"}));
    export_cmd->add_option("--out", exporting.out, "Directory to write to (created if missing)")->required();
    add_setup_options(*export_cmd, exporting.setup);

    TrainOptions train;
    auto* train_cmd = app.add_subcommand(
        "train", "Train lesson 14's translators (English to Spanish) into a folder, a checkpoint after every epoch; "
                 "run again, it resumes");
    train_cmd->add_option("--out", train.out, "The folder: DIR/checkpoint.npz (numpy.load reads it; attn translate "
                                              "translates with it)")
        ->required();
    train_cmd->add_option("--seed", train.seed, "Seed of the models' weights and of the batches' order (default 7)");
    train_cmd->add_option("--set", train.settings,
                          "key=value: a parameter of lesson 14 (repeat for several); 'attn run 14 --help' lists them");
    train_cmd->add_flag("--full", train.full,
                        "The full run: every training verse of at most 30 words, wider models, more epochs (" +
                            fmt::format("{}", fmt::join(full_settings(), " ")) + "); --set changes any of them");
    train_cmd->add_flag("--long", train.long_run, "Train even when the estimate is above a minute (--full is)");
    train_cmd->add_option("--epochs-now", train.epochs_now,
                          "Stop after this many more epochs (the same command without it resumes)")
        ->check(CLI::Range(1, 1000));
    auto* threads_option = train_cmd->add_option("--threads", train.threads,
                                                 "Threads that train (default: this processor's cores, at most 8); "
                                                 "every number is the same whatever their count")
                               ->check(CLI::Range(1, 64));
    auto* portable_flag =
        train_cmd
            ->add_flag("--portable", train.portable,
                       "Train as lesson 14 does: one sum per batch, the portable products, one thread (the lesson's "
                       "bits on every processor; slower)")
            ->excludes(threads_option);
    train_cmd
        ->add_flag("--float32", train.float32,
                   "Multiply in float32: the training's matrix products (the Transformer's nearly all its work; "
                   "the GRUs' matrix-vector products stay float64) rounded to float32 and summed in float32, the "
                   "rest in float64; faster, and the losses move from float64's in the fourth digit")
        ->excludes(portable_flag);

    TranslateOptions translate;
    auto* translate_cmd = app.add_subcommand(
        "translate", "Translate English into Spanish with a checkpoint of attn train: the translation, its pieces and "
                     "the attention map");
    translate_cmd->add_option("sentences", translate.sentences, "English sentences, one translation each");
    translate_cmd->add_option("--model", translate.model, "The folder attn train wrote (or its checkpoint.npz)")
        ->required();
    translate_cmd->add_flag("--stdin", translate.from_stdin,
                            "Translate each line of standard input instead, printing one translation a line");
    translate_cmd->add_option("--beam", translate.beam, "Beam search of this width (the Transformer; default greedy)")
        ->check(CLI::Range(1, 64));
    translate_cmd->add_option("--with", translate.which,
                              "Which model translates: transformer (default), with (the GRU with attention) or "
                              "without (the GRU without)")
        ->check(CLI::IsMember({"transformer", "with", "without"}));

    CompareOptions compare;
    compare.golden_dir = ATTN_GOLDEN_DIR;
    auto* compare_cmd = app.add_subcommand("compare", "Compare your numbers (JSON or a folder of .npy) with a lesson");
    compare_cmd->add_option("submission", compare.submission, "A golden-format JSON file or a directory of .npy files")
        ->required();
    compare_cmd->add_option("--lesson", compare.lesson, "Lesson number or slug")->required();
    compare_cmd->add_option("--step", compare.step, "Compare only this step");
    compare_cmd->add_option("--rtol", compare.tolerance.rtol, "Relative tolerance (default 1e-9)");
    compare_cmd->add_option("--atol", compare.tolerance.atol, "Absolute tolerance (default 1e-12)");
    compare_cmd->add_option("--golden", compare.golden_dir, "Directory of the golden files");

    GradeOptions grade;
    for (int i = 0; i < argc; ++i) grade.command_line.emplace_back(argv[i]);
    grade.golden_dir = ATTN_GOLDEN_DIR;
    auto* grade_cmd = app.add_subcommand("grade", "Grade many submissions (one folder per student) into CSV and JSON");
    grade_cmd->add_option("submissions", grade.submissions, "One directory per student")->required();
    grade_cmd->add_option("--out", grade.out, "Report path without extension: writes OUT.csv, OUT.long.csv, OUT.json, and "
                          "OUT.feedback/<student>.md, one file per student to hand back")
        ->required();
    grade_cmd->add_option("--rtol", grade.tolerance.rtol, "Relative tolerance (default 1e-9)");
    grade_cmd->add_option("--atol", grade.tolerance.atol, "Absolute tolerance (default 1e-12)");
    grade_cmd->add_option("--golden", grade.golden_dir, "Directory of the golden files");
    grade_cmd->add_option("--exercise", grade.exercises, "Grade only this exercise (repeatable; default: every one)");
    grade_cmd->add_flag("--sources", grade.sources,
                        "The folders hold the students' exercise .cpp files: build and check each in a sandbox");
    grade_cmd->add_option("--cpu-limit", grade.cpu_limit,
                          "With --sources: CPU seconds per student for building and checking (default 300)");
    grade_cmd->add_option("--memory-limit", grade.memory_limit_mib,
                          "With --sources: MiB of memory for a student's sandbox (default 2048)");
    grade_cmd->add_option("--points", grade.points_file,
                          "A file of 'exercise points' lines: what each exercise is worth in the report (default: "
                          "one point per unit case and one for the lesson; one from numbers)");
    grade_cmd->add_option("--jobs", grade.jobs,
                          "With --sources: students graded at once (default: one per core; each has its own "
                          "CPU budget, so the grades do not depend on it)")
        ->check(CLI::Range(1, 256));
    grade_cmd->add_flag("--slurm", grade.slurm,
                        "With --sources: grade on a Slurm cluster, one array task per student (sbatch), then "
                        "write the reports; run again, it grades only the students without a result");
    grade_cmd->add_option("--slurm-task", grade.slurm_task, "")->group("");  // what each task of --slurm runs
    grade_cmd->add_option("--keep-builds", grade.work_dir,
                          "With --sources: build in this new or empty folder and keep it (default: a temporary "
                          "folder, removed)");

    CLI::App* exercises_cmd = nullptr;
    CLI::App* hint_cmd = nullptr;
    CLI::App* watch_cmd = nullptr;
    std::string watch_runs;  // checked after parsing: a whole number from 1 up
    CLI::App* instructor_cmd = nullptr;
    CLI::App* keep_race_cmd = nullptr;
    std::filesystem::path keep_race_file, keep_race_from;
    CLI::App* reset_cmd = nullptr;
    ResetOptions reset;
    std::string hint_exercise;
    InstructorOptions instructor{ATTN_GOLDEN_DIR, program.build_dir, {}, false};
    if (program.exercise_build) {
        exercises_cmd = app.add_subcommand("exercises", "The exercises: status, and the file to edit for each");
        hint_cmd = app.add_subcommand("hint", "The next hint for an exercise, one at a time");
        watch_cmd = app.add_subcommand(
            "watch", "Check, then rebuild and check again whenever you save an exercise file (Ctrl-C stops)");
        watch_cmd->add_option("exercises", exercise_check.exercises, "Exercise ids (default: every exercise)");
        watch_cmd->add_option("--runs", watch_runs, "Stop after this many checks (default: never)");
        hint_cmd->add_option("exercise", hint_exercise, "Exercise id")->required();
        reset_cmd = app.add_subcommand(
            "reset", "Put an exercise's starter back in its file (asks first; your file is kept as <file>.bak)");
        reset_cmd->add_option("exercise", reset.exercise, "Exercise id")->required();
        reset_cmd->add_flag("--yes", reset.yes, "Do not ask (needed when standard input is not a terminal)");
        reset_cmd->add_option("--folder", reset.folder,
                              "The exercise folder (default: the one this program was built from)");
    } else {
        keep_race_cmd = app.add_subcommand(
            "keep-race", "For the build: train lesson 12's race at its defaults into FILE, which the exercise "
                         "checks load (nothing to do when FILE holds this code's race)");
        keep_race_cmd->add_option("--out", keep_race_file, "The file (the build writes build/transformer-race.bin)")
            ->required();
        keep_race_cmd->add_option("--from", keep_race_from,
                                  "Copy this file instead of training when it holds this code's race (a race another "
                                  "build of the same sources kept; meson's option race_from)");
        instructor_cmd = app.add_subcommand(
            "instructor-check", "For teachers: the reference passes every exercise and every untouched starter fails");
        instructor_cmd->add_option("--starters", instructor.starters_dir,
                                   "Directory of the attn-starter-<exercise> programs (default: the build directory)");
        instructor_cmd->add_option("--golden", instructor.golden_dir, "Directory of the golden files");
        instructor_cmd->add_flag("--skip-lessons", instructor.skip_lessons,
                                 "Leave out the rows of the reference's lessons against their golden files, which "
                                 "'attn check' gives (lessons 9, 12 and 13 train for a minute)");
        instructor_cmd->add_option("exercises", instructor.exercises,
                                   "Exercise ids: only their rows, and their lessons (default: every exercise)");
    }

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        // a mistyped command: CLI11 would only say that a subcommand is required
        if (app.get_subcommands().empty() && argc > 1 && argv[1][0] != '-') {
            std::vector<std::string> commands;
            for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
                commands.push_back(sub->get_name());
            const std::string best = closest_name(argv[1], commands);
            fmt::print(stderr, "{}: unknown command '{}'; {}\nRun '{} --help' for usage.\n", program.name,
                       printable_utf8(argv[1]),
                       best.empty() ? fmt::format("the commands are: {}", fmt::join(commands, ", "))
                                    : fmt::format("did you mean '{}'?", best),
                       program_command());
            return exit_usage;
        }
        fmt::print(stderr, "{0}: {1}\nRun '{2} --help' (or '{2} <command> --help') for usage.\n", program.name,
                   printable_utf8(e.what()), program_command());
        return exit_usage;
    }

    try {
        if (app.got_subcommand("list")) return cmd_list();
        if (app.got_subcommand(run_cmd)) {
            if (run.help) return cmd_run_help(run_cmd->help(), run.lessons);
            if (run.lessons.empty()) {
                fmt::print(stderr, "{0} run: name a lesson (or 'all'); '{0} list' shows them\n", program.name);
                return exit_usage;
            }
            run.render.color = use_color(color_modes.at(color), ::isatty(STDOUT_FILENO));
            run.render.line_width = run.width > 0 ? run.width : run_width(terminal_columns(STDOUT_FILENO));
            if (run.kept_race) use_kept_race();
            return cmd_run(run);
        }
        if (app.got_subcommand(book_cmd)) {
            if (book.kept_race) use_kept_race();
            return cmd_book(book);
        }
        if (app.got_subcommand(check_cmd))
            return program.exercise_build ? cmd_check_exercises(exercise_check) : cmd_check(check);
        if (exercises_cmd && app.got_subcommand(exercises_cmd)) return cmd_exercises(exercise_check);
        if (hint_cmd && app.got_subcommand(hint_cmd)) return cmd_hint(hint_exercise);
        if (reset_cmd && app.got_subcommand(reset_cmd)) return cmd_reset(reset);
        if (watch_cmd && app.got_subcommand(watch_cmd)) {
            std::size_t runs = 0;  // 0: until Ctrl-C
            if (watch_cmd->count("--runs") > 0 && !parse_runs(watch_runs, runs)) {
                fmt::print(stderr, "{} watch: --runs '{}': the number of checks must be a whole number from 1 to {} "
                                   "(leave --runs out to watch until Ctrl-C)\n",
                           program.name, printable_utf8(watch_runs), std::numeric_limits<std::size_t>::max());
                return exit_usage;
            }
            return cmd_watch(exercise_check, runs);
        }
        if (instructor_cmd && app.got_subcommand(instructor_cmd)) return cmd_instructor_check(instructor);
        if (keep_race_cmd && app.got_subcommand(keep_race_cmd)) return cmd_keep_race(keep_race_file, keep_race_from);
        if (app.got_subcommand(bless_cmd)) return cmd_bless(bless);
        if (app.got_subcommand(export_cmd)) return cmd_export(exporting);
        if (app.got_subcommand(compare_cmd)) return cmd_compare(compare);
        if (app.got_subcommand(train_cmd)) return cmd_train(train);
        if (app.got_subcommand(translate_cmd)) return cmd_translate(translate);
        if (app.got_subcommand(grade_cmd)) return cmd_grade(grade);
    } catch (const text::BibleError& e) {  // a SWORD module or mod2imp missing: the message names the package
        fmt::print(stderr, "{}: {}\n", program.name, e.what());
        return exit_usage;
    } catch (const text::TokenizerError& e) {  // attn built without SentencePiece: the message says how to add it
        fmt::print(stderr, "{}: {}\n", program.name, e.what());
        return exit_usage;
    } catch (const transformer::RaceFileError& e) {
        fmt::print(stderr, "{}: {}\n", program.name, e.what());
        return exit_golden;
    } catch (const std::system_error& e) {
        if (is_write_failure(e)) throw;  // main's: the output, not a bug
        fmt::print(stderr, "{}: internal error: {}\n", program.name, e.what());
        return 70;
    } catch (const std::exception& e) {
        // A bug, not a user error: say so plainly rather than abort with a core dump.
        fmt::print(stderr, "{}: internal error: {}\n", program.name, e.what());
        return 70;
    }
    return exit_usage;
}

}  // namespace

int main(int argc, char** argv) {
    // A reader that goes away (`| head`, a pager quit) makes writes fail with EPIPE, handled below,
    // rather than kill the program, whatever disposition of SIGPIPE the parent left.
    std::signal(SIGPIPE, SIG_IGN);
    int code = exit_usage;
    try {
        code = run_main(argc, argv);
    } catch (const std::system_error& e) {
        if (!is_write_failure(e)) throw;
        return output_failed(e.code().value());
    }
    // stdout may be a file or a pipe that took the text into its buffer and fails only now (a full
    // disk): a command whose output is lost has not succeeded
    errno = 0;
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) return output_failed(errno != 0 ? errno : EIO);
    return code;
}
