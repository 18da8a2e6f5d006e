// attn-observe: the program `attn grade --sources` builds from one student's exercise files and
// runs inside that student's sandbox, once per exercise graded:
//
//     attn-observe [--race=FILE] <exercise> [<lesson>=<steps> ...]
//
// FILE is the reference's trained race (lessons/transformer_race.hpp), which lesson 13 decodes with.
// It runs the exercise's unit cases and its lesson (as far as the steps given, which attn read
// from the golden files, which the sandbox does not hold) with the student's functions, and writes
// what they computed (exercises/observations.hpp) to file descriptor 3, a pipe to attn. It
// decides nothing: attn judges the numbers in its own process. Whatever the student's code
// prints goes to stdout and stderr, which attn keeps apart from the report.
#include "core/allocator.hpp"
#include "exercises/observations.hpp"
#include "transformer_race.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include <unistd.h>

namespace {

// The report, whole, to the pipe at fd 3.
bool write_report(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(3, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace attn;
    tune_allocator_for_tensors();
    // --race=FILE: lesson 13 decodes with the reference's trained race, read from FILE
    const std::string race_flag = "--race=";
    int first = 1;
    if (argc > first && std::string(argv[first]).rfind(race_flag, 0) == 0)
        transformer::decode_with_kept_race(std::string(argv[first++]).substr(race_flag.size()));
    const Exercise* x = argc > first ? find_exercise(argv[first]) : nullptr;
    if (!x) {
        std::fprintf(stderr, "attn-observe: usage: attn-observe [--race=FILE] <exercise> [<lesson>=<steps> ...]\n");
        return 2;
    }
    std::map<std::string, std::size_t> steps;
    for (int i = first + 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto eq = arg.find('=');
        if (eq == std::string::npos) {
            std::fprintf(stderr, "attn-observe: '%s' is not <lesson>=<steps>\n", argv[i]);
            return 2;
        }
        steps[arg.substr(0, eq)] = std::strtoull(arg.c_str() + eq + 1, nullptr, 10);
    }
    const ExerciseObservations seen = observe_exercises(exercises_needed({x}), steps);
    if (!write_report(observations_json(seen))) {
        std::fprintf(stderr, "attn-observe: cannot write the report to file descriptor 3\n");
        return 3;
    }
    return 0;
}
