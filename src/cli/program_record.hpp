// The record of one program as plain constants, which meson.build writes for each program into a
// file of its own (from src/cli/program.cpp.in). They need no header of the standard library, so
// each of the two dozen programs compiles its record in a few milliseconds; src/cli/program.cpp
// turns them into the Program and GradeKit of exercises/program.hpp.
#pragma once

namespace attn {

struct ProgramRecord {
    const char* name;
    bool exercise_build;
    const char* exercises_dir;
    const char* source_dir;
    const char* build_dir;
    const char* exercise_library;  // the static library holding its exercised functions ("" for the reference)
    // GradeKit's lists, each ended by a null pointer
    const char* const* kit_compiler;
    const char* const* kit_compile;
    const char* const* kit_libraries;
    const char* const* kit_link;
    const char* const* kit_pch;
    const char* const* kit_reference;
    const char* const* kit_starter;
    // per exercise, "<id> <declared> <declared> ...": the references attn-alone-<id> links
    const char* const* alone_references;
};

// Defined by the generated file of the program being linked.
extern const ProgramRecord program_record;

}  // namespace attn
