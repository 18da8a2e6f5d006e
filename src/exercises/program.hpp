// Which program this is. attn, attn-student and attn-starter are built from the same sources
// and differ only in the versions of the exercised functions they link (see meson.build) and
// in this record, which meson.build generates for each from src/cli/program.cpp.in (as the
// constants of cli/program_record.hpp; src/cli/program.cpp reads them). It lives with the exercise
// machinery, below the command line, since both the exercise commands and the command line ask it.
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace attn {

struct Program {
    std::string name;     // "attn", "attn-student", "attn-starter"
    bool exercise_build;  // linked with exercise files: `check` checks the exercises, `hint` applies
    std::filesystem::path exercises_dir;  // where those files come from (empty for the reference)
    std::filesystem::path source_dir;     // the source tree it was built from
    std::filesystem::path build_dir;      // the build directory it lives in
    // per exercise, the exercises whose references attn-alone-<id> links (meson.build builds it with
    // their references and every other exercise's starter); <id> itself included
    std::map<std::string, std::set<std::string>> alone_references;
    // the static library holding its exercised functions, whose objects' calls `check` lists (empty
    // for the reference)
    std::filesystem::path exercise_library;
};

const Program& this_program();

// How `attn grade --sources` builds a student's exercise files into attn-observe
// (src/exercises/observe_main.cpp; meson.build fills it in from the build's compiler, flags and
// libraries).
struct GradeKit {
    std::vector<std::string> compiler;   // one item: the C++ compiler, as meson found it
    std::vector<std::string> compile;    // flags of the exercise code (standard, optimisation; no include folder)
    std::vector<std::string> libraries;  // the static libraries of attn-observe but the exercised functions, in order
    std::vector<std::string> link;       // the link flags after them (fmt, sanitizers, the linker)
    std::vector<std::string> pch;        // the header to precompile (src/pch/xtensor_pch.hpp), then, in a
                                         // build by GCC, the build's precompiled copy of it (grade_pch)
    std::vector<std::string> reference;  // per exercise, in table order: the reference's object file
    std::vector<std::string> starter;    // per exercise, in table order: the starter's object file
};

const GradeKit& grade_kit();

}  // namespace attn
