// The Program and GradeKit of this program, from the record meson.build generated for it.
#include "exercises/program.hpp"
#include "cli/program_record.hpp"

#include <sstream>

namespace attn {

namespace {

std::vector<std::string> strings_until_null(const char* const* items) {
    std::vector<std::string> out;
    for (; *items != nullptr; ++items) out.emplace_back(*items);
    return out;
}

// "id a b ..." per item: id -> {id, a, b, ...}
std::map<std::string, std::set<std::string>> id_lists(const char* const* items) {
    std::map<std::string, std::set<std::string>> out;
    for (const auto& item : strings_until_null(items)) {
        std::istringstream words(item);
        std::string id, word;
        words >> id;
        std::set<std::string>& listed = out[id];
        listed.insert(id);
        while (words >> word) listed.insert(word);
    }
    return out;
}

}  // namespace

const Program& this_program() {
    static const Program program{program_record.name,       program_record.exercise_build,
                                 program_record.exercises_dir, program_record.source_dir,
                                 program_record.build_dir,  id_lists(program_record.alone_references),
                                 program_record.exercise_library};
    return program;
}

const GradeKit& grade_kit() {
    static const GradeKit kit{strings_until_null(program_record.kit_compiler),
                              strings_until_null(program_record.kit_compile),
                              strings_until_null(program_record.kit_libraries),
                              strings_until_null(program_record.kit_link),
                              strings_until_null(program_record.kit_pch),
                              strings_until_null(program_record.kit_reference),
                              strings_until_null(program_record.kit_starter)};
    return kit;
}

}  // namespace attn
