// Text with maths in it, as HTML: the explanations, claims, notes and labels lessons write once
// for the terminal ("the state h_{t-1} of step [gru], divided by sqrt(d_k) as in lesson 3").
// Words stay text; runs that read as maths become inline MathML through core/mathml's
// translator; C++ names and settings (nn::gru_forward, corpus.train_*, max_words, --set) become
// <code>; mentions of other lessons and steps become links when the book holds their page.
// Any bytes in: everything is escaped, and a run the translator cannot say faithfully is shown
// as code, never as a formula that says something else.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attn {

// Where "lesson N" and "step [id]" can point: the lessons of the book being written.
struct ProseLinks {
    struct Lesson {
        int number = 0;
        std::string page;                   // "04-self-attention.html"
        std::vector<std::string> step_ids;  // as the trace records them
        std::vector<std::string> anchors;   // step_anchors(step_ids)
    };
    std::vector<Lesson> lessons;
    int current = 0;  // the lesson whose page this is (0: none), or whose steps "step [id]" means first
    bool on_its_page = true;  // the text is on the page of lesson `current` (false: links name the page too)
};

// What a text became (for the tests and the book's counts).
struct ProseCounts {
    std::size_t formulas = 0;  // runs written as <math>
    std::size_t code = 0;      // runs written as <code> (C++ names, and maths the translator refused)
    std::size_t links = 0;     // cross-references written as <a>
};

// One text as inline HTML (no block element). With `links`, mentions of lessons and steps the
// book holds become <a href>; without, they stay text (a heading, a link's own text).
std::string prose_html(std::string_view text, const ProseLinks* links = nullptr, ProseCounts* counts = nullptr);

// An explanation cut into paragraphs: at its line breaks, then between sentences (a sentence
// ends at . ? or ! outside brackets before a capital, not after e.g., i.e., et al., Fig., eq.,
// an initial or within a number), a paragraph closing after 3 sentences or once it holds 50
// words (a last sentence under 20 words joins the paragraph before). The same text gives the
// same cut.
std::vector<std::string> prose_paragraphs(std::string_view text);

// The HTML ids of a lesson's steps: "s-" and the id with every character outside
// [A-Za-z0-9_-] replaced by '_', a second use of the same id followed by "-2", "-3", ...
std::vector<std::string> step_anchors(const std::vector<std::string>& step_ids);

}  // namespace attn
