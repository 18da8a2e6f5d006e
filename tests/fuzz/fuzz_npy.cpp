// Fuzz target: the .npy reader (parse_npy). The input bytes are the file.
//
// Properties held (an uncaught exception or abort() is a finding):
//   1. the only exception parse_npy throws is GoldenError, with a well-formed UTF-8 message (a
//      lying header is refused with a message, never a std::bad_alloc or a read past the end);
//   2. an array it returns, written with to_npy and parsed again, has the same shape and the
//      same values (bit-identical, NaN equal to NaN), and to_npy of that is the same bytes.
#include "core/golden.hpp"
#include "core/npy.hpp"
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

[[noreturn]] void broken(const std::string& detail) {
    std::fprintf(stderr, "fuzz_npy: %s\n", detail.c_str());
    std::abort();
}

}  // namespace

extern "C" int ATTN_FUZZ_ENTRY(npy)(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);

    std::optional<Array> parsed;
    try {
        parsed = parse_npy(bytes, "fuzz.npy");
    } catch (const GoldenError& e) {
        if (!fuzz::is_utf8(e.what())) broken(std::string("a message that is not UTF-8: ") + e.what());
        return 0;
    }

    const std::string written = to_npy(*parsed);
    const Array back = parse_npy(written, "round trip");  // a GoldenError here escapes: a finding
    if (shape_of(back) != shape_of(*parsed))
        broken("round trip: shape " + shape_string(shape_of(*parsed)) + " came back as " +
               shape_string(shape_of(back)));
    auto a = parsed->begin();
    for (auto b = back.begin(); b != back.end(); ++a, ++b)
        if (!same_double(*a, *b))
            broken("round trip: value " + std::to_string(*a) + " came back as " + std::to_string(*b));
    if (to_npy(back) != written) broken("round trip: to_npy is not a fixed point");
    return 0;
}
