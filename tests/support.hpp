// Helpers shared by the test programs: running a built binary, reading a file whole, finding a
// tensor a lesson recorded, and listing the checks of a lesson that fail.
#pragma once

#include "core/trace.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace attn::test {

struct Result {
    int code;            // the exit code, or -1 when the program did not exit normally
    std::string output;  // what it printed (stdout, plus stderr when the command redirects it)
};

// Runs a shell command and collects its output and exit code.
inline Result run_command(const std::string& command) {
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// A command that runs `bin` so that permission bits stop it as they stop a user. An ordinary
// user runs `bin` itself. Root ignores permission bits, so it runs a copy of `bin` in `scratch`
// (created, and open to all: the build directory may not be) as nobody, through setpriv. Empty,
// with the reason in `why`, when root cannot become nobody here.
inline std::string unprivileged_command(const std::filesystem::path& bin, const std::filesystem::path& scratch,
                                        std::string& why) {
    namespace fs = std::filesystem;
    if (::geteuid() != 0) return "'" + bin.string() + "'";
    fs::create_directories(scratch);
    fs::permissions(scratch, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
    const fs::path copy = scratch / bin.filename();
    fs::copy_file(bin, copy, fs::copy_options::overwrite_existing);
    const std::string command = "setpriv --reuid=65534 --regid=65534 --clear-groups '" + copy.string() + "'";
    const Result probe = run_command(command + " --version 2>&1");
    if (probe.code != 0)
        why = "running as root, which ignores permission bits, and it cannot run attn as nobody here (" + command +
              " --version: exit " + std::to_string(probe.code) + ", " + probe.output + ")";
    return probe.code == 0 ? command : std::string();
}

inline std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The tensor `name` of step `step`; fails the test (naming both) when it is absent.
inline const TensorRecord& recorded(const Trace& trace, const std::string& step, const std::string& name) {
    const Step* s = trace.find_step(step);
    INFO("step " << step << ", tensor " << name);
    REQUIRE(s != nullptr);
    const TensorRecord* found = nullptr;
    for (const auto& t : s->tensors)
        if (t.name == name) found = &t;
    REQUIRE(found != nullptr);
    return *found;
}

// The claims of the checks that fail, one per line with its step, error and tolerance ("" when all hold).
inline std::string failed_checks(const Trace& trace) {
    std::ostringstream out;
    for (const auto& s : trace.steps())
        for (const auto& c : s.checks)
            if (!c.holds)
                out << "    [" << s.id << "] " << c.claim << ": error " << c.max_abs_error << " > tolerance "
                    << c.tolerance << "\n";
    return out.str();
}

// The lessons that train models for seconds (minutes when sanitized): 9, 12, and 13, which decodes
// with lesson 12's models. Tests that run every lesson at its defaults leave them to check_exact.
inline bool trains(const std::string& slug) {
    return slug == "learning-to-align" || slug == "transformer" || slug == "decoding";
}

}  // namespace attn::test
