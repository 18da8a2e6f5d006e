// A lesson's parameters and the user's settings of them: `attn run <lesson> --seed N --set key=value`.
// Parsing and range checks happen here, before any work; a lesson's own constraints (d_model
// divisible by heads, a memory cap) are checked by the lesson's registry entry.
#pragma once

#include "trace.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn {

// A setting the user got wrong: the message names the key or the text and says what is allowed.
struct SettingError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

// One integer parameter of a lesson, with its default and its allowed range (both ends included).
struct Param {
    std::string key;          // "d_model"
    long long value;          // the default, used by `attn check` and the golden file
    long long min, max;       // allowed range
    std::string description;  // "width of the model: of every token vector and of W^Q, W^K, W^V, W^O"
};

// One `--set key=value`.
struct Setting {
    std::string key;
    long long value = 0;
};

// "d_model=16" -> {d_model, 16}. The key is letters, digits and '_'; the value a decimal integer
// (optional sign). Throws SettingError naming the text for anything else ("d_model", "=3",
// "d=1.5", "d=1e3", "d=nan", "d=99999999999999999999", spaces).
Setting parse_setting(const std::string& text);

// "--seed 42" -> 42: a decimal integer from 0 to 2^64 - 1. Throws SettingError otherwise.
std::uint64_t parse_seed(const std::string& text);

// The defaults of `params` with `seed`, then each setting applied in order (a later one wins).
// Throws SettingError for an unknown key (naming the closest known key and every key) or a
// value outside its range (naming the range).
Config apply_settings(const std::vector<Param>& params, std::uint64_t seed, const std::vector<Setting>& settings);

// The configuration of the defaults.
Config default_config(const std::vector<Param>& params, std::uint64_t seed);

}  // namespace attn
