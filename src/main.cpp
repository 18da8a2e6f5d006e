// attn: derives attention mechanisms step by step in the terminal.
// This file only parses the command line (CLI11) and dispatches to src/commands.cpp.
#include "attn_config.hpp"
#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <map>

#include <unistd.h>

namespace {

using namespace attn;

const std::map<std::string, ColorMode> color_modes = {
    {"auto", ColorMode::auto_}, {"always", ColorMode::always}, {"never", ColorMode::never}};

void add_golden_options(CLI::App& cmd, GoldenOptions& o) {
    cmd.add_option("--golden", o.golden_dir, "Directory of the golden files (default: the source tree's golden/)");
}

void add_tolerance_options(CLI::App& cmd, GoldenOptions& o) {
    cmd.add_option("--rtol", o.tolerance.rtol, "Relative tolerance, |a - e| <= atol + rtol * |e| (default 1e-9)");
    cmd.add_option("--atol", o.tolerance.atol, "Absolute tolerance (default 1e-12)");
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"attn: derives attention mechanisms step by step, checks every claimed equality\n"
                 "numerically and compares every tensor with the golden files.",
                 "attn"};
    app.set_version_flag("--version", std::string("attn ") + ATTN_VERSION + " (golden format " +
                                          std::to_string(ATTN_GOLDEN_FORMAT_VERSION) + ")");
    app.require_subcommand(1);
    app.footer("Exit codes: 0 ok, 1 mismatch or failed identity check, 2 usage error,\n"
               "3 missing or corrupt golden file. See README.md for the golden-file workflow.");

    app.add_subcommand("list", "List the lessons in course order");

    RunOptions run;
    std::string color = "auto";
    auto* run_cmd = app.add_subcommand("run", "Run lessons: every step's equation, explanation, tensors and checks");
    run_cmd->add_option("lesson", run.lessons, "Lesson numbers or slugs, or 'all'")->required();
    run_cmd->add_option("--step", run.step, "Show only the step with this id (ids are shown in brackets)");
    run_cmd->add_flag("--pause", run.pause, "Wait for Enter between steps (when stdin is a terminal)");
    run_cmd->add_option("--precision", run.render.precision, "Decimals shown (default 4)")
        ->check(CLI::Range(0, 17));
    run_cmd->add_option("--color", color, "Colour: auto (a terminal and no NO_COLOR), always or never")
        ->check(CLI::IsMember({"auto", "always", "never"}));

    GoldenOptions check;
    check.golden_dir = ATTN_GOLDEN_DIR;
    auto* check_cmd = app.add_subcommand("check", "Compare lessons with their golden files (all lessons by default)");
    check_cmd->add_option("lesson", check.lessons, "Lesson numbers or slugs, or 'all'");
    add_tolerance_options(*check_cmd, check);
    add_golden_options(*check_cmd, check);

    GoldenOptions bless;
    bless.golden_dir = ATTN_GOLDEN_DIR;
    auto* bless_cmd = app.add_subcommand("bless", "Rewrite golden files from the lessons, showing what changes");
    bless_cmd->add_option("lesson", bless.lessons, "Lesson numbers or slugs, or 'all'")->required();
    bless_cmd->add_flag("--force", bless.force, "Bless even when the CI environment variable is set");
    add_golden_options(*bless_cmd, bless);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        fmt::print(stderr, "attn: {}\nRun 'attn --help' (or 'attn <command> --help') for usage.\n", e.what());
        return exit_usage;
    }

    try {
        if (app.got_subcommand("list")) return cmd_list();
        if (app.got_subcommand(run_cmd)) {
            run.render.color = use_color(color_modes.at(color), ::isatty(STDOUT_FILENO));
            return cmd_run(run);
        }
        if (app.got_subcommand(check_cmd)) return cmd_check(check);
        if (app.got_subcommand(bless_cmd)) return cmd_bless(bless);
    } catch (const std::exception& e) {
        // A bug, not a user error: say so plainly rather than abort with a core dump.
        fmt::print(stderr, "attn: internal error: {}\n", e.what());
        return 70;
    }
    return exit_usage;
}
