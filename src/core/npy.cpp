#include "npy.hpp"

#include "golden.hpp"

#include <xtensor/xnpy.hpp>

#include <cstdint>
#include <cstring>

namespace attn {

namespace {

// The value of `key` in the header dict, as the raw text up to the next top-level comma or brace.
std::string header_value(const std::string& header, const std::string& key, const std::string& source) {
    const std::string quoted_key = "'" + key + "'";
    auto at = header.find(quoted_key);
    if (at == std::string::npos) fail_reading(source, "the .npy header has no " + quoted_key);
    at = header.find(':', at + quoted_key.size());
    if (at == std::string::npos) fail_reading(source, "the .npy header's " + quoted_key + " has no value");
    ++at;
    int depth = 0;
    std::size_t end = at;
    for (; end < header.size(); ++end) {
        const char c = header[end];
        if (c == '(') ++depth;
        else if (c == ')') --depth;
        else if (depth == 0 && (c == ',' || c == '}')) break;
    }
    while (at < end && header[at] == ' ') ++at;
    std::string value = header.substr(at, end - at);
    while (!value.empty() && value.back() == ' ') value.pop_back();
    return value;
}

Shape parse_shape(const std::string& text, const std::string& source) {
    if (text.size() < 2 || text.front() != '(' || text.back() != ')')
        fail_reading(source, "the .npy shape " + text + " is not a tuple");
    Shape shape;
    std::size_t i = 1;
    // The product of the non-zero sizes, bounded: (0, 10^11, 10^11) holds no number, but its
    // strides would overflow.
    std::uint64_t span = 1;
    while (i + 1 < text.size()) {
        while (i + 1 < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
        if (i + 1 >= text.size()) break;
        std::uint64_t n = 0;
        std::size_t digits = 0;
        while (i + 1 < text.size() && text[i] >= '0' && text[i] <= '9' && digits < 12) {
            n = n * 10 + static_cast<std::uint64_t>(text[i] - '0');
            ++i, ++digits;
        }
        if (digits == 0) fail_reading(source, "the .npy shape " + text + " is not a tuple of sizes");
        if (digits == 12) fail_reading(source, "the .npy shape " + text + " is too large");
        if (n > 0 && span > (std::uint64_t{1} << 40) / n) fail_reading(source, "the .npy shape " + text + " is too large");
        if (n > 0) span *= n;
        shape.push_back(static_cast<std::size_t>(n));
    }
    if (shape.size() > 8) fail_reading(source, "the .npy array has rank " + std::to_string(shape.size()) + ", above 8");
    return shape;
}

template <class T>
T read_scalar(const char* p, bool swap) {
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, p, sizeof(T));
    if (swap)
        for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(bytes[i], bytes[sizeof(T) - 1 - i]);
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
}

std::uint32_t little_endian(const unsigned char* p, std::size_t n) {
    std::uint32_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

bool host_is_little_endian() {
    const std::uint16_t one = 1;
    unsigned char first;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

}  // namespace

std::string to_npy(const Array& a) {
    const Array contiguous = a;
    return xt::dump_npy(contiguous);
}

Array parse_npy(std::string_view bytes, const std::string& source) {
    // 1. magic and version
    if (bytes.size() < 6 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6))
        fail_reading(source, "not a .npy file (the magic bytes \\x93NUMPY are missing)");
    if (bytes.size() < 10) fail_reading(source, "the .npy header is truncated");
    const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data());
    const unsigned major = raw[6];
    if (major < 1 || major > 3) fail_reading(source, ".npy format version " + std::to_string(major) + " is not supported");
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    if (bytes.size() < 8 + len_bytes) fail_reading(source, "the .npy header is truncated");
    const std::size_t header_len = little_endian(raw + 8, len_bytes);
    const std::size_t data_start = 8 + len_bytes + header_len;
    if (data_start > bytes.size()) fail_reading(source, "the .npy header is longer than the file");
    const std::string header(bytes.substr(8 + len_bytes, header_len));

    // 2. the header dict: dtype, order, shape
    const std::string descr = header_value(header, "descr", source);
    if (descr.size() != 5 || descr.front() != '\'' || descr.back() != '\'')
        fail_reading(source, "unsupported .npy dtype " + descr + " (use float64, float32, int64 or int32)");
    const char order = descr[1], kind = descr[2], size = descr[3];
    const bool known = (order == '<' || order == '>' || order == '|' || order == '=') &&
                       ((kind == 'f' && (size == '8' || size == '4')) || (kind == 'i' && (size == '8' || size == '4')));
    if (!known) fail_reading(source, "unsupported .npy dtype " + descr + " (use float64, float32, int64 or int32)");
    const std::string fortran = header_value(header, "fortran_order", source);
    if (fortran != "False" && fortran != "True") fail_reading(source, "the .npy header's fortran_order is " + fortran);
    const Shape shape = parse_shape(header_value(header, "shape", source), source);

    // 3. the data must be exactly as long as the shape says
    std::size_t count = 1;
    for (auto n : shape) count *= n;
    const std::size_t word = static_cast<std::size_t>(size - '0');
    if (bytes.size() - data_start != count * word)
        fail_reading(source, "the .npy header says shape " + shape_string(shape) + " (" + std::to_string(count * word) +
                         " data bytes) but the file holds " + std::to_string(bytes.size() - data_start));
    const bool swap = (order == '>') == host_is_little_endian() && order != '|' && order != '=';
    std::vector<double> values(count);
    const char* p = bytes.data() + data_start;
    for (std::size_t i = 0; i < count; ++i, p += word) {
        if (kind == 'f')
            values[i] = word == 8 ? read_scalar<double>(p, swap) : static_cast<double>(read_scalar<float>(p, swap));
        else
            values[i] = word == 8 ? static_cast<double>(read_scalar<std::int64_t>(p, swap))
                                  : static_cast<double>(read_scalar<std::int32_t>(p, swap));
    }

    // 4. Fortran order: the first index varies fastest; reorder into C order
    Array out = xt::empty<double>(shape);
    if (fortran == "True" && shape.size() > 1) {
        std::vector<std::size_t> index(shape.size(), 0);
        for (std::size_t f = 0; f < count; ++f) {
            std::size_t c = 0;
            for (std::size_t axis = 0; axis < shape.size(); ++axis) c = c * shape[axis] + index[axis];
            out.flat(c) = values[f];
            for (std::size_t axis = 0; axis < shape.size() && ++index[axis] == shape[axis]; ++axis) index[axis] = 0;
        }
    } else {
        std::copy(values.begin(), values.end(), out.begin());
    }
    return out;
}

Array read_npy(const std::filesystem::path& file) {
    return parse_npy(read_file_bytes(file, ".npy file", max_npy_bytes), file.string());
}

}  // namespace attn
