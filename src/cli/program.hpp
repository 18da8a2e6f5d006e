// Which program this is. attn, attn-student and attn-starter are built from the same sources
// and differ only in the versions of the exercised functions they link (see meson.build) and
// in this record, which meson.build generates for each from src/program.cpp.in.
#pragma once

#include <filesystem>
#include <string>

namespace attn {

struct Program {
    std::string name;     // "attn", "attn-student", "attn-starter"
    bool exercise_build;  // linked with exercise files: `check` checks the exercises, `hint` applies
    std::filesystem::path exercises_dir;  // where those files come from (empty for the reference)
    std::filesystem::path source_dir;     // the source tree it was built from
    std::filesystem::path build_dir;      // the build directory it lives in
};

const Program& this_program();

}  // namespace attn
