#include "run.hpp"

#include "exercises/not_done.hpp"

#include <exception>

namespace attn {

LessonRun run_lesson(const Lesson& lesson, Trace prepared, bool catch_errors) {
    LessonRun run{std::move(prepared), "", "", ""};
    const Config config = run.trace.config();
    try {
        lesson.fn(run.trace, config);
    } catch (const StepsEnough&) {
        // the caller asked for the steps recorded so far: the run ends there, as if at its end
    } catch (const InputError&) {
        throw;
    } catch (const ExerciseNotDone& e) {
        run.not_done = e.exercise;
        run.not_done_function = e.function;
        run.error = e.what();
    } catch (const std::exception& e) {
        if (!catch_errors) throw;
        run.error = e.what();
    }
    return run;
}

Trace run_lesson(const Lesson& lesson, const Config& config) {
    Trace trace(lesson.slug, config);
    lesson.fn(trace, config);
    return trace;
}

}  // namespace attn
