// Equations as MathML Core (what Chromium, Firefox and Safari draw without any script), from
// the plain-text equations lessons write once for the terminal: "alpha_ij = exp(e_ij) /
// sum_k exp(e_ik)", "h~_t = tanh(W_h x_t + U_h (r_t * h_{t-1}) + b_h)".
//
// The notation read:
//   x_t, x_{t-1}, W_1^Q, alpha^n_{t,i}, y_<i   sub- and superscripts (braces group, not shown)
//   10000^(2i/d), (K^n)^T, ||A||_F^2          a script after a bracket applies to the group
//   h~_t, dx^, m_hat, h→_j, w'_i, c*_i        accents (tilde, hat, arrow) and primes, stars
//   alpha, sigma, delta_ij, eps, Delta        Greek letters by name
//   sqrt(x), sum_j, prod_{j=1..t}, inf        √, ∑, ∏, ∞
//   exp, tanh, softmax, GRU, LN, ...          function names and capitals set upright
//   dL/dx, dW_a, dalpha                       d before one letter (or a Greek name): a differential
//   d x d_k, T_x x 2u                         "x" between two operands: ×
//   -> <- <= >= != := .. ... * .               → ← ≤ ≥ ≠ ≔ … … ∗ ·
//   <eos>                                      a token, as text
// A formula holding anything else (an English word, an unbalanced bracket, a second subscript,
// a character of no meaning here) is not translated: the caller shows the plain text instead,
// never a formula that says something else.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace attn {

struct ProseLinks;  // core/prose.hpp

// One formula as <math>...</math>, or nullopt when it cannot be translated faithfully.
std::optional<std::string> formula_mathml(std::string_view text);

// An equation string as HTML (no block element; any bytes in). It is cut at its separators at
// bracket depth 0 (", ", "; ", ": " and runs of two or more spaces) into pieces; each piece is
// MathML when it translates, or a formula that translates followed by words as text ("alpha =
// softmax(E) along each row"), else its escaped text in <span class="eq-text">; the separators
// stay between them as text. Words are written by prose_html (core/prose.hpp): maths among them
// typeset inline, C++ names as code, and with `links` mentions of lessons and steps as links.
struct EquationHtml {
    std::string html;
    std::size_t pieces = 0;      // pieces that are not empty
    std::size_t translated = 0;  // of which were written as MathML (whole, or a formula and words)
};
EquationHtml equation_html(std::string_view text, const ProseLinks* links = nullptr);

}  // namespace attn
