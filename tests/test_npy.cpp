// .npy export and import: the bytes numpy writes, read back exactly; every broken file refused
// with a message naming the file and the problem.
#include "core/golden.hpp"
#include "core/npy.hpp"
#include "core/rng.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_npy {

using namespace attn;

namespace {

// A .npy file assembled by hand, as numpy 1.x writes it: magic, version 1.0, little-endian
// header length, the header dict padded with spaces to a multiple of 64 bytes, then the data.
std::string npy_bytes(const std::string& descr, const std::string& fortran, const std::string& shape,
                      const std::string& data) {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += static_cast<char>(header.size() & 0xFF);
    out += static_cast<char>(header.size() >> 8);
    return out + header + data;
}

template <class T>
std::string raw(std::initializer_list<T> values) {
    std::string out;
    for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
    return out;
}

std::string error_of(const std::string& bytes) {
    try {
        parse_npy(bytes, "x.npy");
    } catch (const GoldenError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("to_npy then parse_npy gives the same doubles", "[npy]") {
    const auto rows = GENERATE(std::size_t{1}, std::size_t{3});
    Rng rng(rows);
    Mat m = rng.normal_mat(rows, 4);
    m(0, 1) = -std::numeric_limits<double>::infinity();
    const Array back = parse_npy(to_npy(m), "memory");
    REQUIRE(back.shape() == Array(m).shape());
    CHECK(std::memcmp(back.data(), m.data(), m.size() * sizeof(double)) == 0);
    const Array scalar = parse_npy(to_npy(Array(2.5)), "memory");
    CHECK(scalar.dimension() == 0);
    CHECK(scalar() == 2.5);
}

TEST_CASE("numpy's float32, int64 and Fortran-order files are read as doubles", "[npy]") {
    SECTION("float32") {
        const Array a = parse_npy(npy_bytes("<f4", "False", "(2,)", raw<float>({0.5f, -1.25f})), "f4");
        CHECK(a(0) == 0.5);
        CHECK(a(1) == -1.25);
    }
    SECTION("int64") {
        const Array a = parse_npy(npy_bytes("<i8", "False", "(3,)", raw<std::int64_t>({7, -2, 0})), "i8");
        CHECK(a(0) == 7.0);
        CHECK(a(1) == -2.0);
    }
    SECTION("Fortran order: the first index varies fastest") {
        // the 2 x 3 matrix [[1, 2, 3], [4, 5, 6]] in column-major order is 1 4 2 5 3 6
        const Array a = parse_npy(npy_bytes("<f8", "True", "(2, 3)", raw<double>({1, 4, 2, 5, 3, 6})), "F");
        CHECK(a(0, 1) == 2.0);
        CHECK(a(1, 0) == 4.0);
        CHECK(a(1, 2) == 6.0);
    }
    SECTION("big-endian") {
        std::string be = raw<double>({1.5});
        std::reverse(be.begin(), be.end());
        CHECK(parse_npy(npy_bytes(">f8", "False", "(1,)", be), "be")(0) == 1.5);
    }
}

TEST_CASE("broken .npy files are refused with the reason", "[npy]") {
    const std::string good = npy_bytes("<f8", "False", "(2,)", raw<double>({1, 2}));
    CHECK_THAT(error_of("PK\x03\x04 not numpy"), Catch::Contains("x.npy: not a .npy file"));
    CHECK_THAT(error_of(npy_bytes("<c16", "False", "(1,)", std::string(16, '\0'))),
               Catch::Contains("unsupported .npy dtype '<c16'"));
    CHECK_THAT(error_of(npy_bytes("|b1", "False", "(1,)", "x")), Catch::Contains("unsupported .npy dtype"));
    CHECK_THAT(error_of(npy_bytes("<f8", "False", "(3,)", raw<double>({1, 2}))),
               Catch::Contains("says shape [3] (24 data bytes) but the file holds 16"));
    CHECK_THAT(error_of(npy_bytes("<f8", "False", "(99999999999, 99999999999)", "")), Catch::Contains("too large"));
    CHECK_THAT(error_of(good.substr(0, 9)), Catch::Contains("truncated"));
    CHECK_THAT(error_of(good.substr(0, 40)), Catch::Contains("longer than the file"));
    CHECK_THAT(error_of(npy_bytes("<f8", "maybe", "(2,)", raw<double>({1, 2}))), Catch::Contains("fortran_order"));
}

TEST_CASE("a student's JSON may leave out everything but steps, names and data", "[golden][submission]") {
    const Submission s = parse_submission_json(
        R"({"steps": [{"id": "decoder", "tensors": [{"name": "P", "data": [[0.5, 0.5], [1, 0]]}]}]})", "mine.json");
    CHECK_FALSE(s.has_lesson);
    CHECK_FALSE(s.has_config);
    REQUIRE(s.trace.steps().size() == 1);
    CHECK(s.trace.steps()[0].tensors[0].shape() == Shape{2, 2});  // inferred from the nesting
    CHECK_THROWS_WITH(parse_submission_json(R"({"version": 2, "steps": []})", "v.json"),
                      Catch::Contains("version 2 is not supported"));
    CHECK_THROWS_WITH(parse_submission_json(R"({"steps": [{"id": "a", "tensors": [{"name": "x", "data": [[1], [2, 3]]}]}]})",
                                            "ragged.json"),
                      Catch::Contains("should be a list of 1 entries"));
}

// Found by fuzzing (tests/fuzz/fuzz_npy.cpp; the inputs are kept in tests/fuzz/regressions/npy).
TEST_CASE("fuzzing regressions: a lying .npy header is refused, never allocated", "[npy][fuzz]") {
    SECTION("sizes that multiply beyond 2^40 next to a 0 (xtensor's strides overflowed)") {
        CHECK_THAT(error_of(npy_bytes("<f8", "False", "(0, 99999999999, 99999999999)", "")),
                   Catch::Contains("the .npy shape (0, 99999999999, 99999999999) is too large"));
    }
    SECTION("2^60 elements, as one size or as a product, with 16 bytes of data; 10^11 elements") {
        const std::string data = raw<double>({1, 2});
        CHECK_THAT(error_of(npy_bytes("<f8", "False", "(1152921504606846976,)", data)), Catch::Contains("too large"));
        CHECK_THAT(error_of(npy_bytes("<f8", "False", "(1073741824, 1073741824)", data)), Catch::Contains("too large"));
        CHECK_THAT(error_of(npy_bytes("<f8", "False", "(99999999999,)", data)),
                   Catch::Contains("says shape [99999999999] (799999999992 data bytes) but the file holds 16"));
    }
}

}  // namespace test_npy
