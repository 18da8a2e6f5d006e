#include "npz.hpp"

#include "golden.hpp"
#include "npy.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <set>
#include <stdexcept>

// The ZIP format (PKWARE's APPNOTE.TXT, 6.3): every member is a local header (signature PK\3\4),
// its name and its bytes; after the members, the central directory lists them again (PK\1\2, with
// each local header's offset); last, the end record (PK\5\6) gives the directory's offset and
// size. All numbers are little-endian. Readers start from the end record, so it is written last.

namespace attn {

namespace {

constexpr std::uint32_t zip_local_signature = 0x04034b50;    // PK\3\4
constexpr std::uint32_t zip_central_signature = 0x02014b50;  // PK\1\2
constexpr std::uint32_t zip_end_signature = 0x06054b50;      // PK\5\6
constexpr std::uint32_t zip64_locator_signature = 0x07064b50;  // PK\6\7, just before a ZIP64 end record
constexpr std::size_t zip_local_size = 30, zip_central_size = 46, zip_end_size = 22;
// version 2.0 needed to extract (what Python's zipfile, and so numpy.savez, writes); made by Unix
constexpr std::uint16_t zip_version_needed = 20;
constexpr std::uint16_t zip_version_made_by = (3 << 8) | 20;
// flag bit 11: the name is UTF-8 (without it readers take a name's bytes as code page 437)
constexpr std::uint16_t zip_flag_utf8 = 0x0800;
// 1980-01-01 00:00 in DOS form (day 1, month 1, year 1980 + 0; time 0): the earliest date ZIP holds,
// and numpy.savez's own; a clock would make two writes of the same checkpoint differ
constexpr std::uint16_t zip_dos_time = 0, zip_dos_date = (0 << 9) | (1 << 5) | 1;
// a regular file, rw-r--r--, in the upper half (what unzip gives the extracted file)
constexpr std::uint32_t zip_external_attributes = std::uint32_t{0100644} << 16;

constexpr std::array<std::uint32_t, 256> make_crc32_table() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t n = 0; n < 256; ++n) {
        std::uint32_t c = n;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[n] = c;
    }
    return table;
}
constexpr std::array<std::uint32_t, 256> crc32_table = make_crc32_table();

void put_u16(std::string& out, std::uint16_t v) {
    out += static_cast<char>(v & 0xFF);
    out += static_cast<char>(v >> 8);
}

void put_u32(std::string& out, std::uint32_t v) {
    for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((v >> shift) & 0xFF);
}

// The little-endian number of `n` bytes at `at`; the caller has checked that they are in `bytes`.
std::uint64_t get_le(std::string_view bytes, std::size_t at, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
}

std::string hex32(std::uint64_t v) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08llX", static_cast<unsigned long long>(v));
    return text;
}

// Why `name` cannot name a member of a checkpoint, or "". A checkpoint is flat: unzip and Python's
// zipfile would make folders of '/' and '\', and ".." or a leading '/' could write outside the
// folder it is extracted to; a leading dot hides the file; the name reaches messages and terminals.
std::string npz_name_problem(std::string_view name) {
    if (name.empty()) return "is empty";
    if (name.size() > 0xFFFF) return "is longer than the 65535 bytes a ZIP name holds";
    if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos)
        return "holds a '/' or '\\' (a checkpoint is flat: no folders)";
    if (name.find("..") != std::string_view::npos) return "holds \"..\"";
    if (name.front() == '.') return "starts with a dot";
    for (const char c : name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return "holds a control character";
    if (printable_utf8(name) != name) return "is not valid UTF-8";
    return "";
}

bool ends_with_npy(std::string_view name) {
    return name.size() >= 4 && name.substr(name.size() - 4) == ".npy";
}

[[noreturn]] void refuse_npz(const std::string& what) {
    throw std::invalid_argument(printable_utf8("cannot write a .npz archive: " + what));
}

// One member of an archive being read, as its central directory entry describes it.
struct ZipEntry {
    std::string name;
    std::uint32_t crc = 0;
    std::uint64_t size = 0;
    std::uint64_t local_offset = 0;
    std::uint16_t flags = 0;
    std::uint16_t method = 0;
    std::uint64_t data_start = 0;  // after the local header, its name and its extra fields
};

// Checks that the extra fields of a header (id, length, data; repeated) fill exactly their
// `length` bytes at `at`; a ZIP64 field (id 1) holds the sizes as 8-byte numbers, which must be the
// member's. numpy.savez writes one in every local header (zipfile's force_zip64), with both sizes.
void check_zip_extra(std::string_view bytes, std::size_t at, std::size_t length, const ZipEntry& e,
                     const std::string& where, const std::string& source) {
    const std::size_t end = at + length;
    while (at < end) {
        if (end - at < 4) fail_reading(source, "member '" + e.name + "': its " + where + "'s extra fields are cut short");
        const auto id = get_le(bytes, at, 2);
        const std::size_t n = static_cast<std::size_t>(get_le(bytes, at + 2, 2));
        at += 4;
        if (n > end - at) fail_reading(source, "member '" + e.name + "': its " + where + "'s extra fields are cut short");
        if (id == 1)
            for (std::size_t k = 0; k + 8 <= n && k < 16; k += 8)
                if (get_le(bytes, at + k, 8) != e.size)
                    fail_reading(source, "member '" + e.name + "': its " + where + "'s ZIP64 size " +
                                             std::to_string(get_le(bytes, at + k, 8)) + " is not its size " +
                                             std::to_string(e.size));
        at += n;
    }
}

}  // namespace

std::uint32_t zip_crc32(std::string_view bytes) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (const char b : bytes) c = crc32_table[(c ^ static_cast<unsigned char>(b)) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

std::string to_npz(const std::vector<NpzMember>& members, std::uint64_t max_bytes) {
    max_bytes = std::min(max_bytes, max_zip_bytes);
    // 1. everything that can be refused without writing: the count and the names
    if (members.size() > max_npz_members)
        refuse_npz(std::to_string(members.size()) + " members, more than the " + std::to_string(max_npz_members) +
                   " a ZIP archive without ZIP64 holds");
    std::set<std::string> names;
    for (const auto& m : members) {
        const std::string file_name = m.is_array() ? m.name + ".npy" : m.name;
        const std::string problem = npz_name_problem(m.name);
        if (!problem.empty()) refuse_npz("the member name '" + m.name + "' " + problem);
        if (file_name.size() > 0xFFFF) refuse_npz("the member name '" + file_name + "' is longer than 65535 bytes");
        if (!m.is_array() && ends_with_npy(m.name))
            refuse_npz("the raw member '" + m.name + "' ends in .npy, so it would be read back as a tensor");
        if (!names.insert(m.name).second) refuse_npz("the member name '" + m.name + "' is given twice");
    }

    // 2. the members, each a local header, its name and its bytes; the sizes checked as they come,
    // so that an archive past the limit is refused before it is all made
    struct Written {
        std::string name;
        std::uint32_t crc, size, offset;
        std::uint16_t flags;
    };
    std::vector<Written> written;
    written.reserve(members.size());
    std::string out;
    std::uint64_t directory_size = zip_end_size;
    for (const auto& m : members) directory_size += zip_central_size + m.name.size() + (m.is_array() ? 4 : 0);
    const auto too_large = [&](std::uint64_t bytes) {
        refuse_npz("the archive would be at least " + std::to_string(bytes) + " bytes, more than the " +
                   std::to_string(max_bytes) + " allowed (a ZIP archive without ZIP64 holds less than 4 GiB)");
    };
    for (const auto& m : members) {
        const std::string file_name = m.is_array() ? m.name + ".npy" : m.name;
        const std::string npy = m.is_array() ? to_npy(m.array()) : std::string();
        const std::string& data = m.is_array() ? npy : m.bytes();
        if (data.size() > max_bytes)
            refuse_npz("the member '" + file_name + "' alone is " + std::to_string(data.size()) + " bytes, more than the " +
                       std::to_string(max_bytes) + " allowed (a ZIP member without ZIP64 holds less than 4 GiB)");
        const std::uint64_t end = out.size() + zip_local_size + file_name.size() + data.size();
        if (end + directory_size > max_bytes) too_large(end + directory_size);
        const bool ascii = std::all_of(file_name.begin(), file_name.end(),
                                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
        const Written w{file_name, zip_crc32(data), static_cast<std::uint32_t>(data.size()),
                        static_cast<std::uint32_t>(out.size()), ascii ? std::uint16_t{0} : zip_flag_utf8};
        put_u32(out, zip_local_signature);
        put_u16(out, zip_version_needed);
        put_u16(out, w.flags);
        put_u16(out, 0);  // stored: no compression
        put_u16(out, zip_dos_time);
        put_u16(out, zip_dos_date);
        put_u32(out, w.crc);
        put_u32(out, w.size);  // compressed size: the same, stored
        put_u32(out, w.size);
        put_u16(out, static_cast<std::uint16_t>(file_name.size()));
        put_u16(out, 0);  // no extra fields
        out += file_name;
        out += data;
        written.push_back(w);
    }

    if (out.size() + directory_size > max_bytes) too_large(out.size() + directory_size);  // no member, or a tiny limit

    // 3. the central directory, then the end record that points at it
    const auto directory_offset = static_cast<std::uint32_t>(out.size());
    for (const auto& w : written) {
        put_u32(out, zip_central_signature);
        put_u16(out, zip_version_made_by);
        put_u16(out, zip_version_needed);
        put_u16(out, w.flags);
        put_u16(out, 0);
        put_u16(out, zip_dos_time);
        put_u16(out, zip_dos_date);
        put_u32(out, w.crc);
        put_u32(out, w.size);
        put_u32(out, w.size);
        put_u16(out, static_cast<std::uint16_t>(w.name.size()));
        put_u16(out, 0);  // extra fields
        put_u16(out, 0);  // comment
        put_u16(out, 0);  // disk number
        put_u16(out, 0);  // internal attributes (binary)
        put_u32(out, zip_external_attributes);
        put_u32(out, w.offset);
        out += w.name;
    }
    const auto directory_bytes = static_cast<std::uint32_t>(out.size() - directory_offset);
    put_u32(out, zip_end_signature);
    put_u16(out, 0);  // this disk
    put_u16(out, 0);  // the disk where the directory starts
    put_u16(out, static_cast<std::uint16_t>(written.size()));
    put_u16(out, static_cast<std::uint16_t>(written.size()));
    put_u32(out, directory_bytes);
    put_u32(out, directory_offset);
    put_u16(out, 0);  // comment
    return out;
}

void write_npz(const std::filesystem::path& file, const std::vector<NpzMember>& members) {
    std::string bytes;
    try {
        bytes = to_npz(members);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(printable_utf8(file.string()) + ": " + e.what());
    }
    write_file_atomic(file, bytes);
}

std::vector<NpzMember> parse_npz(std::string_view bytes, const std::string& source) {
    const std::size_t size = bytes.size();
    if (size >= 4 && get_le(bytes, 0, 4) != zip_local_signature && get_le(bytes, 0, 4) != zip_end_signature)
        fail_reading(source, "not a .npz file (a ZIP archive starts with PK\\x03\\x04)");

    // 1. the end record: the last 22 bytes, or earlier by the length of a comment that ends the file
    std::size_t end = std::string::npos;
    if (size >= zip_end_size)
        for (std::size_t at = size - zip_end_size;; --at) {
            if (get_le(bytes, at, 4) == zip_end_signature && get_le(bytes, at + 20, 2) == size - at - zip_end_size) {
                end = at;
                break;
            }
            if (at == 0 || size - at - zip_end_size == 0xFFFF) break;
        }
    if (end == std::string::npos)
        fail_reading(source, size < 4 ? "not a .npz file (too short for a ZIP archive)"
                                      : "truncated, or not a ZIP archive: it does not end with an end-of-central-directory record");
    const auto count = get_le(bytes, end + 10, 2);
    const auto directory_size = get_le(bytes, end + 12, 4), directory_offset = get_le(bytes, end + 16, 4);
    if (count == 0xFFFF || directory_size == 0xFFFFFFFF || directory_offset == 0xFFFFFFFF ||
        (end >= 20 && get_le(bytes, end - 20, 4) == zip64_locator_signature))
        fail_reading(source, "a ZIP64 archive (more than 65534 members or 4 GiB), which attn does not read");
    if (get_le(bytes, end + 4, 2) != 0 || get_le(bytes, end + 6, 2) != 0 || get_le(bytes, end + 8, 2) != count)
        fail_reading(source, "a split (multi-disk) ZIP archive, which attn does not read");
    if (directory_offset > end || directory_size != end - directory_offset)
        fail_reading(source, "the central directory (" + std::to_string(directory_size) + " bytes at byte " +
                                 std::to_string(directory_offset) + ") does not end where the end record starts (byte " +
                                 std::to_string(end) + ")");

    // 2. the central directory: one entry per member
    std::vector<ZipEntry> entries;
    std::size_t at = static_cast<std::size_t>(directory_offset);
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::string which = "central directory entry " + std::to_string(i + 1) + " of " + std::to_string(count);
        if (end - at < zip_central_size) fail_reading(source, "the " + which + " runs past the directory's end");
        if (get_le(bytes, at, 4) != zip_central_signature) fail_reading(source, "the " + which + " has a bad signature");
        const std::size_t name_size = static_cast<std::size_t>(get_le(bytes, at + 28, 2));
        const std::size_t extra_size = static_cast<std::size_t>(get_le(bytes, at + 30, 2));
        const std::size_t comment_size = static_cast<std::size_t>(get_le(bytes, at + 32, 2));
        if (end - at - zip_central_size < name_size + extra_size + comment_size)
            fail_reading(source, "the " + which + " runs past the directory's end");
        ZipEntry e;
        e.name = std::string(bytes.substr(at + zip_central_size, name_size));
        e.flags = static_cast<std::uint16_t>(get_le(bytes, at + 8, 2));
        e.method = static_cast<std::uint16_t>(get_le(bytes, at + 10, 2));
        e.crc = static_cast<std::uint32_t>(get_le(bytes, at + 16, 4));
        const auto compressed = get_le(bytes, at + 20, 4);
        e.size = get_le(bytes, at + 24, 4);
        e.local_offset = get_le(bytes, at + 42, 4);
        const std::string member = "member '" + e.name + "'";
        const std::string problem = npz_name_problem(e.name);
        if (!problem.empty()) fail_reading(source, "the member name '" + e.name + "' " + problem);
        if (e.flags & 0x0001) fail_reading(source, member + " is encrypted, which attn does not read");
        if (e.flags & 0x0008)
            fail_reading(source, member + " uses a data descriptor (its sizes after its data, as in an archive written to "
                                          "a pipe), which attn does not read; save to a file with numpy.savez");
        if (e.flags & ~zip_flag_utf8)
            fail_reading(source, member + " has the ZIP flags " + hex32(e.flags) + ", which attn does not read");
        if (e.method == 8)
            fail_reading(source, member + " is compressed (deflate): compressed members are not read; save with "
                                          "numpy.savez, not numpy.savez_compressed");
        if (e.method != 0)
            fail_reading(source, member + " uses compression method " + std::to_string(e.method) +
                                     ": compressed members are not read; save with numpy.savez");
        if (compressed == 0xFFFFFFFF || e.size == 0xFFFFFFFF || e.local_offset == 0xFFFFFFFF)
            fail_reading(source, member + " has ZIP64 sizes (4 GiB or more), which attn does not read");
        if (compressed != e.size)
            fail_reading(source, member + " is stored, but its compressed size " + std::to_string(compressed) +
                                     " is not its size " + std::to_string(e.size));
        if (get_le(bytes, at + 34, 2) != 0) fail_reading(source, member + " starts on another disk (a split archive)");
        check_zip_extra(bytes, at + zip_central_size + name_size, extra_size, e, "central directory entry", source);
        entries.push_back(std::move(e));
        at += zip_central_size + name_size + extra_size + comment_size;
    }
    if (at != end)
        fail_reading(source, "the central directory holds more than the " + std::to_string(count) +
                                 " entries the end record counts");

    // 3. each member's local header: where its bytes are, and the same facts as its entry
    for (auto& e : entries) {
        const std::string member = "member '" + e.name + "'";
        if (e.local_offset > directory_offset || directory_offset - e.local_offset < zip_local_size)
            fail_reading(source, member + "'s local header (byte " + std::to_string(e.local_offset) +
                                     ") is not before the central directory (byte " + std::to_string(directory_offset) + ")");
        const auto p = static_cast<std::size_t>(e.local_offset);
        if (get_le(bytes, p, 4) != zip_local_signature)
            fail_reading(source, member + "'s local header (byte " + std::to_string(p) + ") has a bad signature");
        const std::size_t name_size = static_cast<std::size_t>(get_le(bytes, p + 26, 2));
        const std::size_t extra_size = static_cast<std::size_t>(get_le(bytes, p + 28, 2));
        const std::uint64_t data_start = e.local_offset + zip_local_size + name_size + extra_size;
        if (data_start > directory_offset || directory_offset - data_start < e.size)
            fail_reading(source, member + "'s bytes (" + std::to_string(e.size) + " from byte " + std::to_string(data_start) +
                                     ") run into the central directory (byte " + std::to_string(directory_offset) + ")");
        if (get_le(bytes, p + 6, 2) != e.flags || get_le(bytes, p + 8, 2) != e.method ||
            get_le(bytes, p + 14, 4) != e.crc || get_le(bytes, p + 18, 4) != e.size || get_le(bytes, p + 22, 4) != e.size)
            fail_reading(source, member + "'s local header disagrees with its central directory entry "
                                          "(flags, compression, CRC-32 or sizes)");
        if (bytes.substr(p + zip_local_size, name_size) != e.name)
            fail_reading(source, member + "'s local header names it '" +
                                     std::string(bytes.substr(p + zip_local_size, name_size)) + "'");
        check_zip_extra(bytes, p + zip_local_size + name_size, extra_size, e, "local header", source);
        e.data_start = data_start;
    }

    // 4. no two members share bytes or a name
    std::vector<const ZipEntry*> by_offset;
    for (const auto& e : entries) by_offset.push_back(&e);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const ZipEntry* a, const ZipEntry* b) { return a->local_offset < b->local_offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
        if (by_offset[i - 1]->data_start + by_offset[i - 1]->size > by_offset[i]->local_offset)
            fail_reading(source, "members '" + by_offset[i - 1]->name + "' and '" + by_offset[i]->name + "' overlap");
    std::set<std::string> names;
    for (const auto& e : entries) {
        const std::string name = ends_with_npy(e.name) ? e.name.substr(0, e.name.size() - 4) : e.name;
        if (!names.insert(name).second)
            fail_reading(source, "member '" + e.name + "' is the second one read as '" + name + "'");
    }

    // 5. the bytes, checked against their CRC-32, and the tensors parsed
    std::vector<NpzMember> members;
    members.reserve(entries.size());
    for (const auto& e : entries) {
        const std::string_view data = bytes.substr(static_cast<std::size_t>(e.data_start), static_cast<std::size_t>(e.size));
        const std::uint32_t crc = zip_crc32(data);
        if (crc != e.crc)
            fail_reading(source, "member '" + e.name + "' fails its CRC-32 check (stored " + hex32(e.crc) + ", computed " +
                                     hex32(crc) + "): the file is corrupt");
        if (ends_with_npy(e.name))
            members.push_back({e.name.substr(0, e.name.size() - 4), parse_npy(data, source + " (member " + e.name + ")")});
        else
            members.push_back({e.name, std::string(data)});
    }
    return members;
}

std::vector<NpzMember> read_npz(const std::filesystem::path& file) {
    return parse_npz(read_file_bytes(file, ".npz file", max_npz_bytes), file.string());
}

}  // namespace attn
