// The book (attn book --out DIR): every lesson's trace as a static HTML page, and an index.
// Each page holds the lesson's steps with their titles, equations (MathML, core/mathml.hpp),
// explanations, tensors (tables; large ones and drawn parameters folded under <details>),
// pictures (inline SVG from core/svg.hpp), data-flow diagrams (core/diagram.hpp) and checks; a table of contents, and links to the
// previous and next lesson and to the index. No script, no font, no style and no image from
// elsewhere: one small stylesheet inside each page, with light and dark colours and print rules.
// Every text a trace holds is escaped (a student's build records whatever its functions make),
// and the same traces give the same bytes.
#pragma once

#include "prose.hpp"
#include "trace.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attn {

// A function of src/nn as the book shows it under a step: its name, file, first line and text.
struct BookCode {
    std::string name, file;  // "scaled_dot_product_attention", "src/nn/self_attention_scaled.cpp"
    int line = 0;
    std::string code;
};

// What a step shows besides its trace: the code it calls, then notes written by the caller as HTML
// (trusted: the caller escapes what it puts in them).
struct BookStepExtras {
    std::vector<BookCode> code;
    std::vector<std::string> notes_html;
};

// A page of the book besides the lessons and the index, written by the caller: its file name ([A-Za-z0-9_.-]
// only), its title and its body as HTML (trusted, as above), under the book's stylesheet and a link home.
struct BookPage {
    std::string file, title, body_html;
};

// One lesson of the book, as the command line ran it (core knows nothing of the lesson registry).
struct BookLesson {
    int number = 0;
    std::string slug, title, sources;  // "additive", "Additive attention", "Bahdanau et al. (2015)"
    std::string reproducibility;       // the line that lets anyone run the same again
    std::string note;                  // "" or a remark on the settings (not the golden file's)
    const Trace* trace = nullptr;      // the steps recorded (all of them, unless stopped)
    std::string stopped;               // "" or why the lesson stopped before its end
    std::map<std::string, BookStepExtras> extras;  // by step id
};

struct BookInfo {
    std::string title = "attn: attention, lesson by lesson";
    std::string made_by;  // "attn 0.1.0 (golden format 1)"
    std::string remark;   // "" or a line for the index (a student's build: whose functions ran)
    std::vector<BookPage> pages;  // more pages, linked from the index (after the lessons' table)
    std::string index_note_html;  // "" or a paragraph for the index under the lessons' table (trusted HTML)
};

// Where "lesson N" and "step [id]" in a page's text can link to: the lessons of `lessons` (the book being
// written); `current` is the number of the lesson whose page it is (0: none).
ProseLinks book_links(const std::vector<BookLesson>& lessons, int current);

// "02-additive.html": the lesson number in two digits and the slug, each character outside
// [A-Za-z0-9_.-] replaced by '_'.
std::string book_page_name(int number, const std::string& slug);

// The page of lessons[index] (its neighbours in `lessons` are its previous and next).
std::string lesson_page(const std::vector<BookLesson>& lessons, std::size_t index, const BookInfo& info);

// index.html: the lessons in a table (number, title, steps, checks, sources) with links, and
// each lesson's reproducibility line.
std::string book_index(const std::vector<BookLesson>& lessons, const BookInfo& info);

// A page of info.pages, whole.
std::string extra_page(const BookPage& page, const BookInfo& info);

// Writes index.html, every page of info.pages and every lesson's page into `dir` (created when missing), each file
// atomically (core/golden.hpp's write_file_atomic); returns the paths, index first. Throws
// std::runtime_error naming the path when `dir` is not a directory or a file cannot be written.
std::vector<std::filesystem::path> write_book(const std::filesystem::path& dir, const std::vector<BookLesson>& lessons,
                                              const BookInfo& info);

}  // namespace attn
