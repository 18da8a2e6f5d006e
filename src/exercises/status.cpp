#include "exercises/status.hpp"

#include "exercises/cases.hpp"
#include "exercises/not_done.hpp"
#include "core/golden.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

namespace attn {

namespace {

constexpr std::size_t absent = static_cast<std::size_t>(-1);

// A lesson's run and golden file, shared by the exercises it checks.
struct LessonFacts {
    LessonRun run;
    Trace golden;
    std::string golden_error;  // why the golden file could not be read
};

std::size_t golden_index(const Trace& golden, const std::string& step_id) {
    const auto& steps = golden.steps();
    const auto found = std::find_if(steps.begin(), steps.end(), [&](const Step& s) { return s.id == step_id; });
    return found == steps.end() ? absent : static_cast<std::size_t>(found - steps.begin());
}

// The golden file of `lesson`, and how many of its steps the `exercises` checked there need (0:
// all, when a step is missing: evaluate() names the problem). A lesson's later steps may train
// for seconds, so a run stops after the last step needed.
LessonFacts golden_facts(const Lesson& lesson, const std::filesystem::path& golden_dir,
                         const std::vector<const Exercise*>& exercises, std::size_t& needed_steps) {
    LessonFacts facts;
    needed_steps = 0;
    try {
        facts.golden = read_golden(golden_dir / golden_file_name(lesson.number, lesson.slug));
    } catch (const GoldenError& e) {
        facts.golden_error = e.what();
        return facts;
    }
    for (const Exercise* x : exercises)
        for (const auto& id : x->steps) {
            const std::size_t at = golden_index(facts.golden, id);
            needed_steps = at == absent || needed_steps == absent ? absent : std::max(needed_steps, at + 1);
        }
    if (needed_steps == absent) needed_steps = 0;
    return facts;
}

// The lesson at its defaults, up to its first `steps` steps (0: all) and, when `enough` is given, no
// further than the first step it is true of (Trace::stop_after_step).
LessonRun run_until(const Lesson& lesson, std::size_t steps, bool catch_errors,
                    std::function<bool(const Step&)> enough = {}) {
    Trace prepared(lesson.slug, lesson.defaults);
    if (steps > 0) prepared.stop_after(steps);
    prepared.stop_after_step(std::move(enough));
    LessonRun run = run_lesson(lesson, std::move(prepared), catch_errors);
    run.trace.stop_after_step({});  // a test may refer to its caller's arguments
    return run;
}

// Whether a complete step's tensors depart from `golden`'s, as compare_traces judges a student's. The
// exercise check stops a lesson there: evaluate() judges an exercise by the first departure up to its
// last step, so every exercise of a later step is decided by that one, whatever the steps after it
// hold (a wrong softmax would otherwise train and decode the rest of lessons 9, 12 and 13 for half a
// minute, to no end). The run stops as at stop_after: complete, not stopped.
bool departs(const Step& done, const Trace& golden, const Tolerance& tol) {
    if (!golden.find_step(done.id)) return false;
    Trace one(golden.lesson(), golden.config());
    one.steps().push_back(done);
    const LessonComparison c = compare_traces(one, golden, tol, Whose::student);
    return !c.ok && !c.diverging_step.empty();
}

// Whether each identity check of the run holds, decided here: against the tolerance the golden
// file gives the same claim in the same step for a student's functions (CheckRecord::
// tolerance_for_others; a run observed elsewhere may claim anything). A check the golden step lacks
// does not hold.
void judge_checks(Trace& done, const Trace& golden) {
    for (auto& step : done.steps()) {
        const Step* g = golden.find_step(step.id);
        for (auto& c : step.checks) {
            const CheckRecord* known = nullptr;
            if (g)
                for (const auto& k : g->checks)
                    if (k.claim == c.claim) known = &k;
            c.tolerance = known ? known->tolerance_for_others() : 0.0;
            c.holds = known && c.max_abs_error <= c.tolerance;  // false for NaN
            if (!known) c.claim += " (not a check of this step in the golden file)";
        }
    }
}

// The steps the lesson completed (a stopped run's last step may be half done) that come no
// later than golden step `last`; steps the golden file lacks stay in, so the comparison names them.
Trace completed_steps_until(const LessonRun& run, const Trace& golden, std::size_t last) {
    Trace out(run.trace.lesson(), run.trace.config());
    const auto& steps = run.trace.steps();
    const std::size_t complete = run.stopped() && !steps.empty() ? steps.size() - 1 : steps.size();
    for (std::size_t i = 0; i < complete; ++i) {
        const std::size_t at = golden_index(golden, steps[i].id);
        if (at == absent || at <= last) out.steps().push_back(steps[i]);
    }
    return out;
}

std::vector<TensorMismatch> mismatches_in(const Step& actual, const Step& golden, const Tolerance& tol) {
    std::vector<TensorMismatch> out;
    for (const auto& g : golden.tensors)
        for (const auto& a : actual.tensors)
            if (a.name == g.name && !compare_tensor(a.value, g.value, tol).ok())
                out.push_back({g.name, a.value, g.value});
    return out;
}

// How many of the exercise's steps the lesson completed.
std::size_t steps_done(const Exercise& x, const Trace& done) {
    return static_cast<std::size_t>(
        std::count_if(x.steps.begin(), x.steps.end(), [&](const std::string& id) { return done.find_step(id); }));
}

// Fills in where `done` first departs from the golden file: a tensor that differs, or else an
// identity check that fails. False when everything matches.
bool find_divergence(ExerciseStatus& s, const Trace& done, const Trace& golden, const Tolerance& tol) {
    const LessonComparison cmp = compare_traces(done, golden, tol, Whose::student);
    if (!cmp.ok) {
        s.state = ExerciseState::diverges;
        s.step = cmp.diverging_step;
        s.step_number = golden_index(golden, s.step) + 1;
        s.message = cmp.report;
        if (const Step* a = done.find_step(s.step)) s.mismatches = mismatches_in(*a, *golden.find_step(s.step), tol);
        return true;
    }
    for (const auto& step : done.steps())
        for (const auto& c : step.checks)
            if (!c.holds) {
                s.state = ExerciseState::diverges;
                s.step = step.id;
                s.step_number = golden_index(golden, step.id) + 1;
                s.message = fmt::format("{}: identity check failed in step {}/{} '{}': {} (max |error| {:.3g} > "
                                        "tolerance {:.3g})\n",
                                        golden.lesson(), s.step_number, s.step_count, step.id, c.claim,
                                        c.max_abs_error, c.tolerance);
                return true;
            }
    return false;
}

// Every needed exercise's unit check, by id: a later exercise's own cases say whether it may be
// to blame for a step an earlier one shares with it.
using UnitChecks = std::map<std::string, UnitCheck>;

// The exercises of `uses` that may be to blame instead of `self`, in the order of `uses`: an
// earlier one that has not passed (unless only because it waits for `self`: heads waits for
// multi-head at the step they share, so a failed unit case of multi-head is multi-head's own), or a
// later one (checked in the same lesson, as causal-mask at scaled-attention's step [causal]) whose
// unit cases have not all passed.
std::vector<std::string> not_passed(const std::string& self, const std::vector<std::string>& uses,
                                    const std::vector<ExerciseStatus>& earlier, const UnitChecks& units) {
    std::vector<std::string> out;
    for (const auto& id : uses) {
        const auto done = std::find_if(earlier.begin(), earlier.end(),
                                       [&](const ExerciseStatus& s) { return s.exercise->id == id; });
        if (done != earlier.end()) {
            const bool waits_for_self = done->state == ExerciseState::blocked && done->waiting_for == self;
            if (done->state != ExerciseState::passed && !waits_for_self) out.push_back(id);
            continue;
        }
        const auto later = units.find(id);
        if (later != units.end() && (!later->second.failed_case.empty() || !later->second.not_done.empty()))
            out.push_back(id);
    }
    return out;
}

// `s` blocked by `unmet` (the first of them stops it; `first` leads when it is not among them: the
// exercise whose starter the lesson met).
ExerciseStatus blocked_by(ExerciseStatus s, std::vector<std::string> unmet, const std::string& first = "") {
    if (!first.empty()) {
        unmet.erase(std::remove(unmet.begin(), unmet.end(), first), unmet.end());
        unmet.insert(unmet.begin(), first);
    }
    s.state = ExerciseState::blocked;
    s.waiting_for = unmet.front();
    s.root = s.waiting_for;
    s.unmet = std::move(unmet);
    s.step.clear();
    s.message.clear();
    s.mismatches.clear();
    return s;
}

// Why a lesson stopped before the exercise's steps were complete.
ExerciseStatus stopped_early(ExerciseStatus s, const Exercise& x, const LessonRun& run, const Trace& done,
                             const std::vector<std::string>& blockers, const std::filesystem::path& exercises_dir) {
    if (run.not_done == x.id) {
        s.state = steps_done(x, done) > 0 ? ExerciseState::not_finished : ExerciseState::not_started;
        s.missing_function = run.not_done_function;
        s.message = not_done_message(x.id, exercises_dir);
        return s;
    }
    if (!run.not_done.empty()) return blocked_by(s, blockers, run.not_done);
    if (!blockers.empty()) return blocked_by(s, blockers);
    s.state = ExerciseState::error;
    const auto& steps = run.trace.steps();
    if (!steps.empty()) {
        s.step = steps.back().id;
        s.step_number = steps.size();
    }
    s.message = run.stopped() ? run.error
                              : fmt::format("lesson {} ran to its end without recording the exercise's steps",
                                            run.trace.lesson());
    return s;
}

// Everything a unit case may be waiting for: the exercises its cases call that have not passed,
// then those its lesson uses (listed at once, so that a student sees the whole way to a pass).
std::vector<std::string> unmet_before_cases(const Exercise& x, const UnitCheck& unit,
                                            const std::vector<ExerciseStatus>& earlier, const UnitChecks& units) {
    std::vector<std::string> unmet = not_passed(x.id, unit.calls, earlier, units);
    for (const auto& id : not_passed(x.id, x.uses, earlier, units))
        if (std::find(unmet.begin(), unmet.end(), id) == unmet.end()) unmet.push_back(id);
    return unmet;
}

// Whether an exercise's unit cases decide its state whatever its lesson shows (decided_by_unit_cases
// returns true exactly then): one of them stopped at a starter, or failed.
bool unit_cases_decide(const UnitCheck& unit) { return !unit.not_done.empty() || !unit.failed_case.empty(); }

// 0. The exercise's unit cases (exercises/cases.hpp): its own functions alone, before any lesson.
// Returns true and sets `s` when they decide the state: not started, waiting for an exercise whose
// function a case called, or a failed case.
bool decided_by_unit_cases(ExerciseStatus& s, const Exercise& x, const std::vector<ExerciseStatus>& earlier,
                           const UnitCheck& unit, const UnitChecks& units, const std::filesystem::path& exercises_dir) {
    s.unit_cases = unit.cases;
    s.unit_cases_passed = unit.passed;
    if (unit.not_done == x.id) {
        s.state = unit.passed > 0 ? ExerciseState::not_finished : ExerciseState::not_started;
        s.missing_function = unit.not_done_function;
        s.message = not_done_message(x.id, exercises_dir);
        return true;
    }
    if (!unit.not_done.empty()) {
        s = blocked_by(s, unmet_before_cases(x, unit, earlier, units), unit.not_done);
        return true;
    }
    if (!unit_cases_decide(unit)) return false;
    // a case may fail through a function it calls that belongs to an exercise not passed yet
    if (!not_passed(x.id, unit.calls, earlier, units).empty()) {
        s = blocked_by(s, unmet_before_cases(x, unit, earlier, units));
        return true;
    }
    s.state = unit.out_of_memory ? ExerciseState::error : ExerciseState::diverges;
    s.unit_case = unit.failed_case;
    s.message = unit.report;
    return true;
}

ExerciseStatus evaluate(const Exercise& x, const UnitChecks& units, const LessonFacts& facts,
                        const std::vector<ExerciseStatus>& earlier, const Tolerance& tol,
                        const std::filesystem::path& exercises_dir) {
    ExerciseStatus s;
    s.exercise = &x;
    if (decided_by_unit_cases(s, x, earlier, units.at(x.id), units, exercises_dir)) return s;
    s.step_count = facts.golden.steps().size();
    if (!facts.golden_error.empty()) {
        s.state = ExerciseState::golden_problem;
        s.message = facts.golden_error;
        return s;
    }
    std::size_t last = 0;
    for (const auto& id : x.steps) {
        const std::size_t at = golden_index(facts.golden, id);
        if (at == absent) {
            s.state = ExerciseState::golden_problem;
            s.message = fmt::format("the exercise table names step '{}', which the golden file of lesson {} lacks",
                                    id, x.lesson);
            return s;
        }
        last = std::max(last, at);
    }
    // 1. the lesson up to the exercise's last step, against the golden file
    const Trace done = completed_steps_until(facts.run, facts.golden, last);
    const std::vector<std::string> blockers = not_passed(x.id, x.uses, earlier, units);
    if (find_divergence(s, done, facts.golden, tol)) return blockers.empty() ? s : blocked_by(s, blockers);
    // 2. all of its steps ran and matched: passed, whatever stopped the lesson later
    if (steps_done(x, done) == x.steps.size()) return s;
    // 3. the lesson stopped first
    return stopped_early(s, x, facts.run, done, blockers, exercises_dir);
}

}  // namespace

std::string not_done_message(const std::string& exercise_id, const std::filesystem::path& exercises_dir) {
    const Exercise* x = find_exercise(exercise_id);
    if (!x) return fmt::format("exercise {} is not done yet (and not in the exercise table)", exercise_id);
    return fmt::format("exercise {} is not done yet: write it in {}", exercise_id,
                       (exercises_dir / exercise_file(*x)).string());
}

std::vector<const Exercise*> exercises_needed(const std::vector<const Exercise*>& wanted) {
    // the wanted ones and every exercise a needed one uses, earlier or later in the table, until
    // nothing is added
    std::set<std::string> needed;
    const auto& table = all_exercises();
    for (const auto& x : table)
        if (wanted.empty() || std::find(wanted.begin(), wanted.end(), &x) != wanted.end()) needed.insert(x.id);
    for (std::size_t before = 0; before != needed.size();) {
        before = needed.size();
        for (const auto& x : table)
            if (needed.count(x.id)) needed.insert(x.uses.begin(), x.uses.end());
    }
    std::vector<const Exercise*> out;
    for (const auto& x : table)
        if (needed.count(x.id)) out.push_back(&x);
    return out;
}

namespace {

// The exercises of `needed` checked in lesson `slug`.
std::vector<const Exercise*> checked_in(const std::string& slug, const std::vector<const Exercise*>& needed) {
    std::vector<const Exercise*> out;
    for (const Exercise* x : needed)
        if (x->lesson == slug) out.push_back(x);
    return out;
}

// Every needed exercise's state, in table order, from its unit check and its lesson's run.
template <class UnitOf, class RunOf>
std::vector<ExerciseStatus> evaluate_all(const std::filesystem::path& golden_dir,
                                         const std::filesystem::path& exercises_dir, const Tolerance& tol,
                                         const std::vector<const Exercise*>& needed, UnitOf unit_of, RunOf run_of) {
    std::map<std::string, LessonFacts> lessons;
    std::vector<ExerciseStatus> out;
    UnitChecks units;
    for (const Exercise* x : needed) units.emplace(x->id, unit_of(*x));
    for (const Exercise* x : needed) {
        const Lesson* lesson = find_lesson(x->lesson);
        if (!lesson) {
            ExerciseStatus s;
            s.exercise = x;
            s.state = ExerciseState::golden_problem;
            s.message = fmt::format("the exercise table names lesson '{}', which does not exist", x->lesson);
            out.push_back(s);
            continue;
        }
        auto [facts, fresh] = lessons.try_emplace(x->lesson);
        if (fresh) {
            // the lesson runs for the exercises its unit cases leave undecided, up to the last step they
            // need; not at all when there are none (a failed or unfinished unit case decides an exercise
            // before any lesson: decided_by_unit_cases)
            std::vector<const Exercise*> undecided;
            for (const Exercise* y : checked_in(x->lesson, needed)) {
                if (!unit_cases_decide(units.at(y->id))) undecided.push_back(y);
            }
            std::size_t steps = 0;
            facts->second = golden_facts(*lesson, golden_dir, undecided, steps);
            if (facts->second.golden_error.empty() && !undecided.empty()) {
                facts->second.run = run_of(*lesson, steps, facts->second.golden);
                judge_checks(facts->second.run.trace, facts->second.golden);
            }
        }
        out.push_back(evaluate(*x, units, facts->second, out, tol, exercises_dir));
    }
    // the root of each blocked one: along the exercises that block each other, the first that is not
    // blocked itself (a cycle, as scaled-attention and causal-mask at step [causal], ends where it closes)
    for (auto& s : out) {
        if (s.state != ExerciseState::blocked) continue;
        std::set<std::string> seen = {s.exercise->id};
        for (std::string at = s.waiting_for;;) {
            s.root = at;
            const auto next = std::find_if(out.begin(), out.end(), [&](const ExerciseStatus& o) { return o.exercise->id == at; });
            if (next == out.end() || next->state != ExerciseState::blocked || !seen.insert(at).second) break;
            at = next->waiting_for;
            if (seen.count(at)) break;
        }
    }
    return out;
}

}  // namespace

std::vector<ExerciseStatus> evaluate_exercises(const std::filesystem::path& golden_dir,
                                               const std::filesystem::path& exercises_dir, const Tolerance& tol,
                                               bool catch_errors, const std::vector<const Exercise*>& wanted) {
    return evaluate_all(
        golden_dir, exercises_dir, tol, exercises_needed(wanted),
        [&](const Exercise& x) { return check_unit_cases(x.id, tol); },
        [&](const Lesson& lesson, std::size_t steps, const Trace& golden) {
            return run_until(lesson, steps, catch_errors,
                             [&golden, &tol](const Step& done) { return departs(done, golden, tol); });
        });
}

std::map<std::string, std::size_t> steps_to_run(const std::filesystem::path& golden_dir,
                                                const std::vector<const Exercise*>& needed) {
    std::map<std::string, std::size_t> out;
    for (const Exercise* x : needed)
        if (const Lesson* lesson = find_lesson(x->lesson); lesson && !out.count(x->lesson)) {
            std::size_t steps = 0;
            golden_facts(*lesson, golden_dir, checked_in(x->lesson, needed), steps);
            out[x->lesson] = steps;
        }
    return out;
}

ExerciseObservations observe_exercises(const std::vector<const Exercise*>& needed,
                                       const std::map<std::string, std::size_t>& steps) {
    ExerciseObservations seen;
    for (const Exercise* x : needed) {
        seen.unit[x->id] = observe_unit_cases(x->id);
        const Lesson* lesson = find_lesson(x->lesson);
        if (!lesson || seen.lessons.count(x->lesson)) continue;
        const auto limit = steps.find(x->lesson);
        seen.lessons[x->lesson] = run_until(*lesson, limit == steps.end() ? 0 : limit->second, true);
    }
    return seen;
}

std::vector<ExerciseStatus> judge_exercises(const ExerciseObservations& seen, const std::filesystem::path& golden_dir,
                                            const std::filesystem::path& exercises_dir, const Tolerance& tol,
                                            const std::vector<const Exercise*>& wanted) {
    return evaluate_all(
        golden_dir, exercises_dir, tol, exercises_needed(wanted),
        [&](const Exercise& x) {
            const auto found = seen.unit.find(x.id);
            return judge_unit_cases(x.id, found == seen.unit.end() ? std::vector<UnitOutcome>{} : found->second, tol);
        },
        [&](const Lesson& lesson, std::size_t, const Trace&) {
            const auto found = seen.lessons.find(lesson.slug);
            if (found != seen.lessons.end()) return found->second;
            LessonRun missing{Trace(lesson.slug, lesson.defaults), "", "", "the program ended before it ran this lesson"};
            return missing;
        });
}

std::string describe(const ExerciseStatus& s) {
    const Lesson* lesson = find_lesson(s.exercise->lesson);
    const std::string where = lesson ? fmt::format("lesson {} {}", lesson->number, lesson->slug) : s.exercise->lesson;
    switch (s.state) {
        case ExerciseState::passed: return "passed";
        case ExerciseState::not_started: return "not started";
        case ExerciseState::not_finished:
            // the function still the starter's; the others of the exercise are written
            return s.missing_function.empty() ? "not finished"
                                              : "not finished: nn::" + s.missing_function + " is not written yet";
        case ExerciseState::blocked: {
            std::string unmet;
            for (const auto& id : s.unmet) unmet += (unmet.empty() ? "" : ", ") + id;
            return fmt::format("blocked by {} (unmet: {}; unit cases {}/{} pass)", s.root, unmet,
                               s.unit_cases_passed, s.unit_cases);
        }
        case ExerciseState::diverges:
            if (!s.refused_calls.empty())
                return fmt::format("calls {}, which it may not use", fmt::join(s.refused_calls, ", "));
            if (!s.unit_case.empty()) return "fails its unit case '" + s.unit_case + "'";
            return s.step.empty() ? "diverges in " + where
                                  : fmt::format("diverges at step {}/{} '{}' of {}", s.step_number, s.step_count,
                                                s.step, where);
        case ExerciseState::error:
            return s.step.empty() ? "stops with an error in " + where
                                  : fmt::format("stops with an error in {} (last step begun: {} '{}')", where,
                                                s.step_number, s.step);
        case ExerciseState::golden_problem: return "golden file problem";
    }
    return "";
}

std::string state_name(ExerciseState state) {
    switch (state) {
        case ExerciseState::passed: return "passed";
        case ExerciseState::not_started: return "not_started";
        case ExerciseState::not_finished: return "not_finished";
        case ExerciseState::blocked: return "blocked";
        case ExerciseState::diverges: return "diverges";
        case ExerciseState::error: return "error";
        case ExerciseState::golden_problem: return "golden_problem";
    }
    return "";
}

}  // namespace attn
