// Fuzz target: the settings of `attn run <lesson> --seed N --set key=value` (core/settings.hpp).
// The input is split into lines: the first for parse_setting, the second for parse_seed, each
// further line one `--set` for apply_settings over a fixed list of parameters (a line that
// parse_setting refuses is passed on as a bare key, to reach the unknown-key message).
//
// Properties held (an uncaught exception or abort() is a finding):
//   1. the only exception thrown is SettingError, with a message;
//   2. parse_setting accepts exactly "key=value" with key of letters, digits and '_' and value a
//      decimal integer (optional sign) that fits a long long, and then
//      parse_setting(key + "=" + std::to_string(value)) gives the same setting back;
//   3. parse_seed accepts exactly the decimal integers from 0 to 2^64 - 1;
//   4. apply_settings refuses an unknown key or a value outside its range, and otherwise returns
//      the seed and every parameter in order, each at its last setting (or its default), in range.
#include "core/settings.hpp"
#include "fuzz_support.hpp"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace attn;

namespace {

[[noreturn]] void failed(const char* property, const std::string& detail) {
    std::fprintf(stderr, "fuzz_settings: %s: %s\n", property, detail.c_str());
    std::abort();
}

const std::vector<Param>& params() {
    static const std::vector<Param> list = {
        {"d_model", 16, 1, 512, "width of the model"},
        {"heads", 4, 1, 64, "number of heads"},
        {"T", 6, 0, 1000, "time steps"},
        {"offset", -3, LLONG_MIN, LLONG_MAX, "any whole number"},
    };
    return list;
}

// An independent reading of "[+-]?[0-9]+" (sign only when allowed); nullopt when the text is
// not one. The value is returned as text without sign or leading zeros, plus the sign.
struct Integer {
    bool negative = false;
    std::string digits;  // no leading zeros; "0" for zero
};

std::optional<Integer> decimal(const std::string& text, bool allow_sign) {
    Integer n;
    std::size_t i = 0;
    if (allow_sign && i < text.size() && (text[i] == '+' || text[i] == '-')) n.negative = text[i++] == '-';
    if (i == text.size()) return std::nullopt;
    for (; i < text.size(); ++i) {
        if (text[i] < '0' || text[i] > '9') return std::nullopt;
        if (n.digits.empty() && text[i] == '0') continue;
        n.digits += text[i];
    }
    if (n.digits.empty()) n.digits = "0";
    return n;
}

// Whether the magnitude `digits` is at most `limit` (both plain decimal text).
bool at_most(const std::string& digits, const std::string& limit) {
    return digits.size() != limit.size() ? digits.size() < limit.size() : digits <= limit;
}

// Property 2: what parse_setting should do with `text`.
std::optional<Setting> expected_setting(const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    Setting s;
    s.key = text.substr(0, eq);
    for (unsigned char c : s.key)
        if (!std::isalnum(c) && c != '_') return std::nullopt;
    const auto n = decimal(text.substr(eq + 1), true);
    if (!n) return std::nullopt;
    // |LLONG_MIN| = 9223372036854775808, LLONG_MAX = 9223372036854775807
    if (!at_most(n->digits, n->negative ? "9223372036854775808" : "9223372036854775807")) return std::nullopt;
    const std::string signed_text = (n->negative ? "-" : "") + n->digits;
    errno = 0;
    s.value = std::strtoll(signed_text.c_str(), nullptr, 10);
    if (errno != 0) failed("reference", "strtoll refused " + signed_text);
    return s;
}

std::optional<Setting> checked_parse_setting(const std::string& text) {
    const std::optional<Setting> expected = expected_setting(text);
    std::optional<Setting> got;
    try {
        got = parse_setting(text);
    } catch (const SettingError& e) {
        if (std::string(e.what()).empty()) failed("parse_setting", "an empty message");
        if (expected)
            failed("parse_setting", "refused '" + text + "' (" + e.what() + "), expected " + expected->key + "=" +
                                        std::to_string(expected->value));
        return std::nullopt;
    }
    if (!expected) failed("parse_setting", "accepted '" + text + "'");
    if (got->key != expected->key || got->value != expected->value)
        failed("parse_setting", "'" + text + "' gave " + got->key + "=" + std::to_string(got->value));
    const Setting again = parse_setting(got->key + "=" + std::to_string(got->value));  // SettingError escapes
    if (again.key != got->key || again.value != got->value)
        failed("parse_setting round trip", got->key + "=" + std::to_string(got->value));
    return got;
}

std::uint64_t checked_parse_seed(const std::string& text) {
    const auto n = decimal(text, false);
    const bool valid = n && at_most(n->digits, "18446744073709551615");
    std::uint64_t seed = 0;
    try {
        seed = parse_seed(text);
    } catch (const SettingError& e) {
        if (std::string(e.what()).empty()) failed("parse_seed", "an empty message");
        if (valid) failed("parse_seed", "refused '" + text + "'");
        return 0;
    }
    if (!valid) failed("parse_seed", "accepted '" + text + "'");
    if (std::to_string(seed) != n->digits) failed("parse_seed", "'" + text + "' gave " + std::to_string(seed));
    return seed;
}

// Property 4.
void check_apply(std::uint64_t seed, const std::vector<Setting>& settings) {
    bool refusable = false;
    Config expected = default_config(params(), seed);
    for (const auto& s : settings) {
        const Param* p = nullptr;
        for (const auto& q : params())
            if (q.key == s.key) p = &q;
        if (!p || s.value < p->min || s.value > p->max) {
            refusable = true;
            break;
        }
        for (auto& [k, v] : expected.values)
            if (k == s.key) v = s.value;
    }
    Config got;
    try {
        got = apply_settings(params(), seed, settings);
    } catch (const SettingError& e) {
        if (std::string(e.what()).empty()) failed("apply_settings", "an empty message");
        if (!refusable) failed("apply_settings", std::string("refused valid settings: ") + e.what());
        return;
    }
    if (refusable) failed("apply_settings", "accepted an unknown key or a value out of range: " + config_text(got));
    if (got != expected) failed("apply_settings", config_text(got) + ", expected " + config_text(expected));
}

}  // namespace

extern "C" int ATTN_FUZZ_ENTRY(settings)(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> lines;
    std::string_view text(reinterpret_cast<const char*>(data), size);
    for (;;) {
        const auto nl = text.find('\n');
        lines.emplace_back(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }

    checked_parse_setting(lines[0]);
    const std::uint64_t seed = lines.size() > 1 ? checked_parse_seed(lines[1]) : 0;
    std::vector<Setting> settings;
    for (std::size_t i = 2; i < lines.size(); ++i) {
        auto s = checked_parse_setting(lines[i]);
        settings.push_back(s ? *s : Setting{lines[i], 0});
    }
    check_apply(seed, settings);
    return 0;
}
