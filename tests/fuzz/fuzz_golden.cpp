// Fuzz target: the golden JSON reader (parse_golden_json) and its relaxed form for students
// (parse_submission_json). The input bytes are the file's text.
//
// Properties held (an uncaught exception or abort() is a finding):
//   1. the only exception either parser throws is GoldenError, its message well-formed UTF-8;
//   2. a parsed trace written with to_golden_json reads back equal: same strings, shapes,
//      labels and bit-identical doubles (NaN equal to NaN), and the text is a fixed point
//      (golden.hpp: "read back bit-identically");
//   3. a valid golden file is a valid submission with the same trace (the relaxed format only
//      makes parts optional; "present, they are checked");
//   4. a submission written with to_golden_json is a valid golden file with the same trace.
#include "core/golden.hpp"
#include "fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

using namespace attn;
using attn::fuzz::same_double;

namespace {

[[noreturn]] void violated(const char* property, const std::string& detail) {
    std::fprintf(stderr, "fuzz_golden: %s: %s\n", property, detail.c_str());
    std::abort();
}

// Why two traces differ, or "" when they are equal.
std::string difference(const Trace& a, const Trace& b) {
    if (a.lesson() != b.lesson()) return "lesson '" + a.lesson() + "' vs '" + b.lesson() + "'";
    if (a.config() != b.config()) return "config " + config_text(a.config()) + " vs " + config_text(b.config());
    if (a.steps().size() != b.steps().size()) return "number of steps";
    for (std::size_t i = 0; i < a.steps().size(); ++i) {
        const Step& s = a.steps()[i];
        const Step& t = b.steps()[i];
        const std::string where = "step " + std::to_string(i) + " '" + s.id + "'";
        if (s.id != t.id || s.title != t.title || s.equation != t.equation || s.explanation != t.explanation)
            return where + ": id, title, equation or explanation";
        if (s.tensors.size() != t.tensors.size()) return where + ": number of tensors";
        for (std::size_t k = 0; k < s.tensors.size(); ++k) {
            const TensorRecord& x = s.tensors[k];
            const TensorRecord& y = t.tensors[k];
            const std::string here = where + ", tensor '" + x.name + "'";
            if (x.name != y.name || x.equation != y.equation) return here + ": name or equation";
            if (x.shape() != y.shape())
                return here + ": shape " + shape_string(x.shape()) + " vs " + shape_string(y.shape());
            if (x.rows != y.rows || x.cols != y.cols || x.view != y.view || x.measured != y.measured ||
                x.export_only != y.export_only)
                return here + ": labels, view, measured or export_only";
            auto ix = x.value.begin();
            for (auto iy = y.value.begin(); iy != y.value.end(); ++ix, ++iy)
                if (!same_double(*ix, *iy))
                    return here + ": value " + std::to_string(*ix) + " vs " + std::to_string(*iy);
        }
        if (s.checks.size() != t.checks.size()) return where + ": number of checks";
        for (std::size_t k = 0; k < s.checks.size(); ++k) {
            const CheckRecord& x = s.checks[k];
            const CheckRecord& y = t.checks[k];
            if (x.claim != y.claim || !same_double(x.max_abs_error, y.max_abs_error) ||
                !same_double(x.tolerance, y.tolerance) || x.holds != y.holds)
                return where + ": check '" + x.claim + "'";
        }
    }
    return "";
}

// Property 2 (and 4): write, read back with the strict reader, compare.
void check_round_trip(const Trace& trace, const char* property) {
    const std::string text = to_golden_json(trace);
    const Trace back = parse_golden_json(text, "round trip");  // a GoldenError here escapes: a finding
    const std::string why = difference(trace, back);
    if (!why.empty()) violated(property, why);
    if (to_golden_json(back) != text) violated(property, "the written text is not a fixed point");
}

}  // namespace

extern "C" int ATTN_FUZZ_ENTRY(golden)(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    std::optional<Trace> golden;
    try {
        golden = parse_golden_json(text, "fuzz.json");
    } catch (const GoldenError& e) {
        if (!fuzz::is_utf8(e.what())) violated("message", std::string("not UTF-8: ") + e.what());
    }
    std::optional<Submission> submission;
    try {
        submission = parse_submission_json(text, "fuzz.json");
    } catch (const GoldenError& e) {
        if (!fuzz::is_utf8(e.what())) violated("message", std::string("not UTF-8: ") + e.what());
    }

    if (golden) {
        check_round_trip(*golden, "golden round trip");
        if (!submission) violated("golden file is a submission", "parse_submission_json refused a valid golden file");
        if (!submission->has_lesson || !submission->has_config)
            violated("golden file is a submission", "lesson or config not marked present");
        const std::string why = difference(*golden, submission->trace);
        if (!why.empty()) violated("golden file is a submission", why);
    }
    if (submission) check_round_trip(submission->trace, "submission round trip");
    return 0;
}
