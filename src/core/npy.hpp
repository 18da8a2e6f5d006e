// NumPy .npy files: every tensor of a lesson can be exported for numpy or PyTorch,
// and a student's arrays read back for comparison.
#pragma once

#include "tensor.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace attn {

// The .npy bytes of a tensor: little-endian float64, C order (written by xtensor's xnpy).
std::string to_npy(const Array& a);

// Parses .npy bytes (format versions 1, 2 and 3) holding float64, float32, int64 or int32 in
// either byte order, C or Fortran order, into doubles. Throws GoldenError naming `source` and
// the problem: wrong magic, an unsupported dtype, a header that does not parse, or a header
// whose shape disagrees with the number of data bytes.
Array parse_npy(std::string_view bytes, const std::string& source);

// The largest .npy file read_npy reads: one tensor of a lesson at its memory cap (1 GiB), and a header.
inline constexpr std::uintmax_t max_npy_bytes = (std::uintmax_t{1} << 30) + (std::uintmax_t{1} << 20);

// Reads and parses a .npy file (GoldenError when missing, a directory, larger than max_npy_bytes, or corrupt).
Array read_npy(const std::filesystem::path& file);

}  // namespace attn
