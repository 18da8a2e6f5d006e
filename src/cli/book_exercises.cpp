#include "cli/book_exercises.hpp"

#include "core/prose.hpp"
#include "core/xml_text.hpp"
#include "exercises/table.hpp"
#include "step_code.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace attn {
namespace {

std::string text(std::string_view s) { return xml_escaped(s); }

// What a student runs to check an exercise (as each starter's last line says).
constexpr const char* check_command = "build/attn-student";

// "lesson 4 (Self-attention ...)", the lesson a link to its page when the book has it.
std::string lesson_link(const Exercise& x, const std::vector<BookLesson>& lessons) {
    const Lesson* l = find_lesson(x.lesson);
    if (!l) return text(x.lesson);
    const bool in_book = std::any_of(lessons.begin(), lessons.end(), [&](const BookLesson& b) { return b.number == l->number; });
    const std::string name = fmt::format("lesson {}", l->number);
    return fmt::format("{} ({})",
                       in_book ? fmt::format("<a href=\"{}\">{}</a>", text(book_page_name(l->number, l->slug)), name) : name,
                       text(l->title));
}

// The starter's header comment: the task as the student reads it in the file.
std::string starter_task(const Exercise& x) {
    for (const auto& s : step_code::starters)
        if (s.file == exercise_file(x)) return std::string(s.task);
    return {};
}

std::string exercise_section(const Exercise& x, const std::vector<BookLesson>& lessons) {
    std::string out = fmt::format("<section class=\"task-page\" id=\"{}\">\n<h2>{} <span class=\"step-id\">[{}]</span></h2>\n",
                                  text(x.id), text(x.title), text(x.id));
    const Lesson* lesson = find_lesson(x.lesson);
    const auto page = std::find_if(lessons.begin(), lessons.end(),
                                   [&](const BookLesson& b) { return lesson && b.number == lesson->number; });
    std::vector<std::string> steps;
    for (const auto& id : x.steps) {
        std::string link = "[" + text(id) + "]";
        if (page != lessons.end() && page->trace) {
            const auto& all = page->trace->steps();
            const auto at = std::find_if(all.begin(), all.end(), [&](const Step& s) { return s.id == id; });
            if (at != all.end())
                link = fmt::format("<a href=\"{}#step-{}\">{}</a>", text(book_page_name(page->number, page->slug)),
                                   at - all.begin() + 1, link);
        }
        steps.push_back(link);
    }
    out += fmt::format("<p>Checked by {}, step{} {}. Edit <code>lessons/exercises/{}</code>, then run <code>{} check "
                       "{}</code>.</p>\n",
                       lesson_link(x, lessons), x.steps.size() == 1 ? "" : "s", fmt::join(steps, ", "), text(exercise_file(x)),
                       check_command, text(x.id));
    if (const std::string task = starter_task(x); !task.empty())
        out += "<pre class=\"task\" tabindex=\"0\" aria-label=\"The task of " + text(x.id) + "\"><code>" + text(task) +
               "</code></pre>\n";
    if (!x.hints.empty()) {
        out += "<details><summary>Hints, from which equation to what typically goes wrong</summary>\n<ol>\n";
        // a step named without its lesson is one of the exercise's own lesson
        ProseLinks links = book_links(lessons, lesson ? lesson->number : 0);
        links.on_its_page = false;
        for (const auto& h : x.hints) out += "<li>" + prose_html(h, &links) + "</li>\n";
        out += "</ol></details>\n";
    }
    return out + "</section>\n";
}

}  // namespace

std::map<std::string, BookStepExtras> book_step_extras(const Lesson& l) {
    std::map<std::string, BookStepExtras> extras;
    for (const auto& s : step_code::steps) {
        if (s.lesson != l.number || s.step.empty()) continue;
        BookStepExtras& e = extras[std::string(s.step)];
        std::string_view names = s.functions;
        while (!names.empty()) {
            const std::size_t end = std::min(names.find(' '), names.size());
            const std::string_view name = names.substr(0, end);
            names.remove_prefix(std::min(end + 1, names.size()));
            // overloads of one name, in one file, shown together
            for (const auto& f : step_code::functions) {
                if (f.name != name) continue;
                if (!e.code.empty() && e.code.back().name == name && e.code.back().file == f.file)
                    e.code.back().code += "\n\n" + std::string(f.code);
                else
                    e.code.push_back({std::string(f.name), std::string(f.file), f.line, std::string(f.code)});
            }
        }
    }
    for (const auto& x : all_exercises()) {
        if (x.lesson != l.slug) continue;
        for (const auto& step : x.steps)
            extras[step].notes_html.push_back(fmt::format(
                "<p class=\"task-link\">Write it yourself: exercise <a href=\"exercises.html#{}\">{}</a> ({}), in "
                "<code>lessons/exercises/{}</code>, checked by <code>{} check {}</code>.</p>",
                text(x.id), text(x.id), text(x.title), text(exercise_file(x)), check_command, text(x.id)));
    }
    return extras;
}

void add_exercises_page(BookInfo& info, const std::vector<BookLesson>& lessons) {
    const auto& all = all_exercises();
    std::string body = "<header>\n<h1>Exercises</h1>\n";
    body += fmt::format("<p>Each exercise is a function of the lessons that you write yourself, in its file under "
                        "<code>lessons/exercises/</code>; <code>{} check ID</code> builds the lessons with your "
                        "functions and compares every tensor of the steps that use it with the golden files, after "
                        "unit cases chosen to tell the typical mistakes apart. Take them in this order: each builds on "
                        "the ones before.</p>\n</header>\n<main>\n<nav class=\"toc\" aria-label=\"Exercises\"><ol>\n",
                        check_command);
    for (const auto& x : all) body += fmt::format("<li><a href=\"#{}\">{}</a>: {}</li>\n", text(x.id), text(x.id), text(x.title));
    body += "</ol></nav>\n";
    for (const auto& x : all) body += exercise_section(x, lessons);
    body += "</main>\n";
    info.pages.push_back({"exercises.html", "Exercises", body});
    info.index_note_html = fmt::format("<p><a href=\"exercises.html\">The {} exercises</a>: the functions you write "
                                       "yourself, each checked against these lessons.</p>",
                                       all.size());
}

}  // namespace attn
