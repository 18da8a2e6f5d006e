// Helpers shared by the test programs: running a built binary, reading a file whole, and
// finding a tensor a lesson recorded.
#pragma once

#include "core/trace.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>

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

}  // namespace attn::test
