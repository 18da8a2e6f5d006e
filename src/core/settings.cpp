#include "settings.hpp"

#include "golden.hpp"
#include "names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <string_view>

namespace attn {

namespace {

bool is_key_char(unsigned char c) { return std::isalnum(c) || c == '_'; }

// What a user typed, quoted and cut short, for messages: bytes that are not UTF-8 and control
// bytes are shown as \xHH (printable_utf8), never sent to the terminal as they are.
std::string quoted(const std::string& text) {
    return "'" + printable_utf8(std::string_view(text).substr(0, 60)) + (text.size() > 60 ? "...'" : "'");
}

// A decimal integer with an optional sign, or false when the text is not one or does not fit.
bool parse_integer(const std::string& text, bool allow_sign, unsigned long long limit, bool& negative,
                   unsigned long long& magnitude) {
    std::size_t i = 0;
    negative = false;
    if (allow_sign && i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
    if (i == text.size()) return false;
    magnitude = 0;
    for (; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (!std::isdigit(c)) return false;
        const unsigned digit = c - '0';
        if (magnitude > (limit - digit) / 10) return false;
        magnitude = magnitude * 10 + digit;
    }
    return true;
}

}  // namespace

Setting parse_setting(const std::string& text) {
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos)
        throw SettingError(fmt::format("--set {}: expected key=value, such as d_model=16", quoted(text)));
    Setting s;
    s.key = text.substr(0, eq);
    const std::string value = text.substr(eq + 1);
    if (s.key.empty() || !std::all_of(s.key.begin(), s.key.end(), [](char c) { return is_key_char(c); }))
        throw SettingError(fmt::format("--set {}: the key must be a parameter name (letters, digits, _), such as "
                                       "d_model=16",
                                       quoted(text)));
    bool negative = false;
    unsigned long long magnitude = 0;
    // a negative value reaches one further than a positive one: the smallest is -(max + 1)
    const auto limit = static_cast<unsigned long long>(std::numeric_limits<long long>::max());
    if (!parse_integer(value, true, limit + 1, negative, magnitude) || (!negative && magnitude > limit))
        throw SettingError(fmt::format("--set {}: {} is not a whole number{}", quoted(text), quoted(value),
                                       value.empty() ? " (the value is missing)" : ""));
    s.value = negative && magnitude > 0 ? -static_cast<long long>(magnitude - 1) - 1
                                        : static_cast<long long>(magnitude);
    return s;
}

std::uint64_t parse_seed(const std::string& text) {
    bool negative = false;
    unsigned long long magnitude = 0;
    if (!parse_integer(text, false, std::numeric_limits<std::uint64_t>::max(), negative, magnitude))
        throw SettingError(
            fmt::format("--seed {}: the seed must be a whole number from 0 to 18446744073709551615", quoted(text)));
    return magnitude;
}

std::size_t Config::size(const Param& param) const { return static_cast<std::size_t>(get(param.key)); }

Config default_config(const std::vector<Param>& params, std::uint64_t seed) {
    Config c;
    c.seed = seed;
    for (const auto& p : params) c.values.emplace_back(p.key, p.value);
    return c;
}

Config apply_settings(const std::vector<Param>& params, std::uint64_t seed, const std::vector<Setting>& settings) {
    Config c = default_config(params, seed);
    for (const auto& s : settings) {
        const auto p = std::find_if(params.begin(), params.end(), [&](const Param& q) { return q.key == s.key; });
        if (p == params.end()) {
            std::vector<std::string> keys;
            for (const auto& q : params) keys.push_back(q.key);
            const std::string best = closest_name(s.key, keys);
            throw SettingError(fmt::format("--set: this lesson has no parameter {}{}; its parameters are: {}",
                                           quoted(s.key), best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best),
                                           keys.empty() ? "none" : fmt::format("{}", fmt::join(keys, ", "))));
        }
        if (s.value < p->min || s.value > p->max)
            throw SettingError(fmt::format("--set {}={}: out of range; {} must be from {} to {} ({})", s.key, s.value,
                                           s.key, p->min, p->max, p->description));
        for (auto& [k, v] : c.values)
            if (k == s.key) v = s.value;
    }
    return c;
}

}  // namespace attn
