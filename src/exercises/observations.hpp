// The observations of exercises (exercises/status.hpp) as JSON: what the program `attn grade
// --sources` builds from a student's files writes inside the sandbox, and what attn reads back
// outside it. The text comes from code nobody reviewed, so the reader trusts nothing in it: a
// fixed schema, known exercise ids and lesson names only, sizes and nesting capped, and any
// departure an error naming what was wrong.
#pragma once

#include "exercises/status.hpp"

#include <stdexcept>
#include <string>
#include <string_view>

namespace attn {

// The observations' text (format "attn-observations", version 1).
std::string observations_json(const ExerciseObservations& seen);

// A report that is not an observations text of this version, or breaks its limits.
struct ObservationError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Parses an observations text; throws ObservationError naming what was wrong.
ExerciseObservations parse_observations(std::string_view text);

// The largest observations text read (a lesson's trace is a few hundred KB at most).
inline constexpr std::size_t max_observations_bytes = std::size_t{8} << 20;

}  // namespace attn
