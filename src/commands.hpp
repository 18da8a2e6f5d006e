// The commands of `attn`; main.cpp parses the arguments and calls one of these.
// Each returns the process exit code.
#pragma once

#include "core/compare.hpp"
#include "core/render.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace attn {

enum ExitCode : int {
    exit_ok = 0,
    exit_mismatch = 1,  // a tensor differs from its golden, or an identity check fails
    exit_usage = 2,     // bad arguments, unknown lesson or step
    exit_golden = 3,    // a golden file is missing, unreadable or corrupt
};

struct RunOptions {
    std::vector<std::string> lessons;  // numbers or slugs, or "all"
    std::string step;                  // show only this step (--step)
    bool pause = false;                // wait for Enter between steps when stdin is a terminal
    RenderOptions render;
};

struct GoldenOptions {
    std::vector<std::string> lessons;  // empty: every lesson
    std::filesystem::path golden_dir;
    Tolerance tolerance;
    bool force = false;  // bless even when CI is set
};

int cmd_list();
int cmd_run(const RunOptions& options);
int cmd_check(const GoldenOptions& options);
int cmd_bless(const GoldenOptions& options);

}  // namespace attn
