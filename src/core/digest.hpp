// A 64-bit FNV-1a digest of bytes: two versions of a file that differ differ here (not a guard
// against someone forging a collision: the files it checks are the build's own).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace attn {

inline std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash = 14695981039346656037ULL) {
    for (const char c : bytes) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 1099511628211ULL;
    }
    return hash;
}

// The digest as 16 hexadecimal digits.
inline std::string digest_text(std::uint64_t hash) { return fmt::format("{:016x}", hash); }

}  // namespace attn
