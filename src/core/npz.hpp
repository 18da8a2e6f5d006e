// NumPy .npz archives: checkpoints (a model's weights, its tokenizer, a JSON description of both)
// that numpy and PyTorch read without attn (`numpy.load`, `torch.from_numpy`), written whole or
// not at all, and read back by attn to resume training or to translate. Debian 12 has no Python
// safetensors package; an .npz is only a ZIP archive of .npy files, which numpy reads itself.
#pragma once

#include "tensor.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attn {

// One file of a checkpoint: a tensor, stored as "<name>.npy" (numpy.load gives it back under
// `name`), or raw bytes stored under `name` itself ("attn.json", "tokenizer.model"; numpy.load
// gives them back as bytes).
struct NpzMember {
    std::string name;
    std::variant<Array, std::string> content;

    bool is_array() const { return std::holds_alternative<Array>(content); }
    const Array& array() const { return std::get<Array>(content); }
    const std::string& bytes() const { return std::get<std::string>(content); }
};

// The CRC-32 that ZIP stores for every member (IEEE 802.3, reflected polynomial 0xEDB88320, the
// one of zlib.crc32): CRC-32("123456789") is 0xCBF43926.
std::uint32_t zip_crc32(std::string_view bytes);

// The most members and bytes a ZIP archive without ZIP64 holds: 0xFFFF and 0xFFFFFFFF are the
// values that tell a reader to look for ZIP64 records instead, so they are not used as counts.
inline constexpr std::size_t max_npz_members = 0xFFFE;
inline constexpr std::uint64_t max_zip_bytes = 0xFFFFFFFE;

// The archive: stored (uncompressed) members in the order given, each with its CRC-32 and the
// DOS date 1980-01-01 00:00, so the same members always give the same bytes. Throws
// std::invalid_argument, with the reason, rather than write a file numpy or attn would not read:
// more than max_npz_members members, an archive (or a member) larger than `max_bytes` (at most
// max_zip_bytes; tests lower it), an empty or duplicate name, a name that is not printable UTF-8
// or that holds '/', '\', "..", or starts with a dot (a checkpoint is flat), and raw bytes under a
// name ending in ".npy" (it would be read back as a tensor).
std::string to_npz(const std::vector<NpzMember>& members, std::uint64_t max_bytes = max_zip_bytes);

// to_npz's bytes written through write_file_atomic: the file holds the old checkpoint or the new
// one, never part of one. Throws std::invalid_argument as to_npz does (naming the file), and
// std::runtime_error when the file cannot be written.
void write_npz(const std::filesystem::path& file, const std::vector<NpzMember>& members);

// Parses an .npz archive: the members in the archive's order, "<name>.npy" read as the tensor
// `name` (float64, float32, int64 or int32, as parse_npy reads) and every other member as bytes.
// Reads what to_npz and numpy.savez write (numpy's ZIP64 size fields included). Throws GoldenError
// naming `source` and the problem: not a ZIP archive or cut short, a bad signature, sizes or
// offsets outside the file or disagreeing with each other, members that overlap, a CRC-32 that
// does not match (naming the member), compressed members (numpy.savez_compressed), encryption, data
// descriptors (an archive written to a pipe), ZIP64 or split archives, a name to_npz would refuse,
// a name twice, or a .npy member parse_npy refuses (naming the member).
std::vector<NpzMember> parse_npz(std::string_view bytes, const std::string& source);

// The largest .npz file read_npz reads: the weights of a lesson at its memory cap (1 GiB), with room
// for the members' headers and a tokenizer.
inline constexpr std::uintmax_t max_npz_bytes = (std::uintmax_t{1} << 30) + (std::uintmax_t{64} << 20);

// Reads and parses an .npz file (GoldenError when missing, a directory, larger than max_npz_bytes,
// or anything parse_npz refuses).
std::vector<NpzMember> read_npz(const std::filesystem::path& file);

}  // namespace attn
