// Settings: `--set key=value` and `--seed N` are parsed exactly, and apply_settings refuses an
// unknown key or a value out of range with a message that says what is allowed.
#include "core/settings.hpp"

#include <catch2/catch.hpp>

#include <climits>
#include <string>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_settings {

using namespace attn;

namespace {

const std::vector<Param> params = {
    {"d_model", 16, 1, 512, "width of the model"},
    {"heads", 4, 1, 64, "number of heads"},
    {"offset", 0, LLONG_MIN, LLONG_MAX, "any whole number"},
};

std::string setting_error(const std::string& text) {
    try {
        parse_setting(text);
    } catch (const SettingError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("parse_setting reads key=value with a whole number", "[settings]") {
    CHECK(parse_setting("d_model=16").key == "d_model");
    CHECK(parse_setting("d_model=16").value == 16);
    CHECK(parse_setting("T_x=-3").value == -3);
    CHECK(parse_setting("T_x=+3").value == 3);
    CHECK(parse_setting("T_x=007").value == 7);
}

TEST_CASE("parse_setting refuses anything but key=whole number, naming the text", "[settings]") {
    const auto bad = GENERATE(as<std::string>{}, "d_model", "=3", "d=", "d=1.5", "d=1e3", "d=nan", "d= 3", "d =3",
                              "d=99999999999999999999", "d=9223372036854775808", "d=-9223372036854775809", "dé=3",
                              "d-x=3", "d=3\n");
    const std::string msg = setting_error(bad);
    INFO(bad);
    CHECK_THAT(msg, Catch::StartsWith("--set '"));
    CHECK(msg != "(no error)");
}

// Found by fuzzing (tests/fuzz/fuzz_settings.cpp; the input is in tests/fuzz/regressions/settings):
// the smallest long long was refused, so a value that std::to_string wrote did not read back.
TEST_CASE("parse_setting reads back every long long, the smallest included", "[settings][fuzz]") {
    const long long value = GENERATE(LLONG_MIN, LLONG_MIN + 1, -1LL, 0LL, 1LL, LLONG_MAX);
    const Setting s = parse_setting("offset=" + std::to_string(value));
    CHECK(s.key == "offset");
    CHECK(s.value == value);
    CHECK(parse_setting("offset=-0").value == 0);
}

TEST_CASE("parse_seed reads 0 to 2^64 - 1 and nothing else", "[settings]") {
    CHECK(parse_seed("0") == 0);
    CHECK(parse_seed("42") == 42);
    CHECK(parse_seed("18446744073709551615") == UINT64_MAX);
    const auto bad = GENERATE(as<std::string>{}, "", "-1", "+1", "18446744073709551616", "4 2", "0x10", "1e3");
    INFO(bad);
    CHECK_THROWS_AS(parse_seed(bad), SettingError);
}

TEST_CASE("apply_settings applies in order and checks keys and ranges", "[settings]") {
    SECTION("defaults, then each setting, a later one winning") {
        const Config c = apply_settings(params, 7, {{"heads", 8}, {"d_model", 32}, {"heads", 2}});
        CHECK(c == Config{7, {{"d_model", 32}, {"heads", 2}, {"offset", 0}}});
        CHECK(apply_settings(params, 7, {}) == default_config(params, 7));
        CHECK(apply_settings(params, 0, {{"offset", LLONG_MIN}}).get("offset") == LLONG_MIN);
    }
    SECTION("an unknown key: the closest known key and every key") {
        CHECK_THROWS_WITH(apply_settings(params, 7, {{"d_modl", 16}}),
                          Catch::Contains("no parameter 'd_modl'") && Catch::Contains("did you mean 'd_model'?") &&
                              Catch::Contains("d_model, heads, offset"));
    }
    SECTION("a value out of range: the range and what the parameter is") {
        CHECK_THROWS_WITH(apply_settings(params, 7, {{"heads", 65}}),
                          Catch::Contains("heads must be from 1 to 64 (number of heads)"));
        CHECK_THROWS_AS(apply_settings(params, 7, {{"d_model", 0}}), SettingError);
    }
}

}  // namespace test_settings
