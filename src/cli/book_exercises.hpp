// What the book shows of the code and the exercises: under each step, the src/nn functions its code
// calls (step_code.hpp, read from this tree's sources when attn was built) and a link to each exercise
// the step checks; a page exercises.html listing every exercise with its task and hints. Here, not in
// src/core, because core knows nothing of the exercises (ARCHITECTURE.md's arrows).
#pragma once

#include "core/html.hpp"
#include "registry.hpp"

#include <map>
#include <string>
#include <vector>

namespace attn {

// The code and the exercise links of every step of lesson `l`, by step id.
std::map<std::string, BookStepExtras> book_step_extras(const Lesson& l);

// Adds exercises.html to the book (every exercise: its lesson and steps, linked where `lessons` has the
// lesson, the file to edit, the command that checks it, the starter's task, the hints) and its link to
// the index.
void add_exercises_page(BookInfo& info, const std::vector<BookLesson>& lessons);

}  // namespace attn
