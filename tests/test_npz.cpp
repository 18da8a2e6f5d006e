// .npz checkpoints: what attn writes, numpy and PyTorch read bit for bit; what numpy.savez writes,
// attn reads; the same members always give the same bytes; every broken archive is refused with the
// file and the problem, and every archive attn cannot write faithfully is refused before writing.
#include "core/golden.hpp"
#include "core/npy.hpp"
#include "core/npz.hpp"
#include "core/rng.hpp"

#include "support.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

// Everything of this file in a namespace of its own: the test program is built as a few
// unity files (tests/meson.build), where the helpers of two files must not meet.
namespace test_npz {

using namespace attn;
using attn::test::RemovedAtEnd;
using attn::test::run_command;
namespace fs = std::filesystem;

namespace {

double from_bits(std::uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
}

std::uint64_t bits_of(double d) {
    std::uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return bits;
}

// A checkpoint's kinds of member: tensors of every rank up to 3, one with no element, values whose
// bits a careless writer or reader would change (-0.0, infinities, NaNs with payloads, subnormals),
// a non-ASCII name, and raw bytes (every byte value, and none).
std::vector<NpzMember> sample_members() {
    Rng rng(14);
    Array values = xt::empty<double>({std::size_t{10}});
    const std::uint64_t odd[] = {bits_of(-0.0), bits_of(std::numeric_limits<double>::infinity()),
                                 bits_of(-std::numeric_limits<double>::infinity()), 0x7FF8000000000123,  // NaN, payload
                                 0xFFF8000000000000,                                                    // -NaN
                                 1,                                                                     // smallest subnormal
                                 0x000FFFFFFFFFFFFF,                                                    // largest subnormal
                                 bits_of(std::numeric_limits<double>::max()), bits_of(1.0 / 3.0), bits_of(-1e-300)};
    for (std::size_t i = 0; i < 10; ++i) values(i) = from_bits(odd[i]);
    Array cube = xt::empty<double>({std::size_t{2}, std::size_t{3}, std::size_t{4}});
    for (std::size_t i = 0; i < cube.size(); ++i) cube.flat(i) = rng.normal();
    std::string every_byte;
    for (int b = 0; b < 256; ++b) every_byte += static_cast<char>(b);
    return {
        {"scalar", Array(-0.0)},
        {"values", values},
        {"encoder.W_q", Array(rng.normal_mat(3, 4))},
        {"cube", cube},
        {"nothing", Array(xt::empty<double>({std::size_t{2}, std::size_t{0}, std::size_t{3}}))},
        {"gr\xc3\xb6\xc3\x9f" "e", Array(xt::ones<double>({std::size_t{2}}))},  // "größe": UTF-8, ZIP flag 11
        {"attn.json", std::string(R"({"tensors": [{"name": "encoder.W_q", "shape": [3, 4], "role": "weight"}]})")},
        {"tokenizer.model", every_byte},
        {"empty.bin", std::string()},
    };
}

// Whether two lists of members hold the same names, kinds, shapes and bits (every difference in INFO).
bool same_members(const std::vector<NpzMember>& a, const std::vector<NpzMember>& b) {
    if (a.size() != b.size()) {
        UNSCOPED_INFO("member counts " << a.size() << " and " << b.size());
        return false;
    }
    bool same = true;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const bool equal = a[i].name == b[i].name && a[i].is_array() == b[i].is_array() &&
                           (a[i].is_array() ? a[i].array().shape() == b[i].array().shape() &&
                                                  std::memcmp(a[i].array().data(), b[i].array().data(),
                                                              a[i].array().size() * sizeof(double)) == 0
                                            : a[i].bytes() == b[i].bytes());
        if (!equal) UNSCOPED_INFO("member " << i << " ('" << a[i].name << "' and '" << b[i].name << "') differs");
        same = same && equal;
    }
    return same;
}

std::string error_of(std::string_view bytes) {
    try {
        parse_npz(bytes, "x.npz");
    } catch (const GoldenError& e) {
        return e.what();
    }
    return "(no error)";
}

std::string invalid_argument_of(const std::vector<NpzMember>& members, std::uint64_t max_bytes = max_zip_bytes) {
    try {
        to_npz(members, max_bytes);
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "(no error)";
}

std::uint64_t u16_at(const std::string& s, std::size_t at) {
    return static_cast<unsigned char>(s[at]) | static_cast<std::uint64_t>(static_cast<unsigned char>(s[at + 1])) << 8;
}

void put_u16_at(std::string& s, std::size_t at, std::uint32_t v) {
    s[at] = static_cast<char>(v & 0xFF);
    s[at + 1] = static_cast<char>((v >> 8) & 0xFF);
}

void put_u32_at(std::string& s, std::size_t at, std::uint32_t v) {
    for (int k = 0; k < 4; ++k) s[at + static_cast<std::size_t>(k)] = static_cast<char>((v >> (8 * k)) & 0xFF);
}

// Where the records of an archive written by to_npz are: the k-th local header, the k-th central
// directory entry, the end record (found by their signatures, which the members' bytes below do not hold).
std::size_t nth(const std::string& archive, const char* signature, std::size_t k) {
    std::size_t at = archive.find(std::string(signature, 4));
    for (; k > 0 && at != std::string::npos; --k) at = archive.find(std::string(signature, 4), at + 1);
    REQUIRE(at != std::string::npos);
    return at;
}
const char* const local_sig = "PK\x03\x04";
const char* const central_sig = "PK\x01\x02";
const char* const end_sig = "PK\x05\x06";

// A python3 that imports `modules` (PATH's first, then Debian's /usr/bin/python3, where
// python3-numpy and python3-torch install), or "".
std::string python_with(const std::string& modules) {
    for (const char* candidate : {"python3", "/usr/bin/python3"})
        if (run_command(std::string(candidate) + " -c 'import " + modules + "' >/dev/null 2>&1").code == 0) return candidate;
    return "";
}

// A temporary folder of this file's (removed at the end of the test case that holds it).
std::filesystem::path scratch_folder() { return attn::test::fresh_folder("npz"); }

void write_bytes(const fs::path& file, const std::string& bytes) {
    std::FILE* f = std::fopen(file.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
    REQUIRE(std::fclose(f) == 0);
}

std::string hex(const void* data, std::size_t n) {
    std::string out;
    char two[3];
    for (std::size_t i = 0; i < n; ++i) {
        std::snprintf(two, sizeof two, "%02x", static_cast<const unsigned char*>(data)[i]);
        out += two;
    }
    return out.empty() ? "-" : out;
}

// "2x0x3", or "-" for a 0-d tensor (what the Python snippets print for a shape)
std::string shape_text(const Array& a) {
    std::string out;
    for (const auto n : a.shape()) out += (out.empty() ? "" : "x") + std::to_string(n);
    return out.empty() ? "-" : out;
}

}  // namespace

TEST_CASE("zip_crc32 is zlib's CRC-32", "[npz]") {
    CHECK(zip_crc32("") == 0);
    CHECK(zip_crc32("123456789") == 0xCBF43926u);
    CHECK(zip_crc32("The quick brown fox jumps over the lazy dog") == 0x414FA339u);
    CHECK(zip_crc32(std::string(1, '\0')) == 0xD202EF8Du);

    const std::string python = python_with("zlib");
    if (python.empty()) {
        WARN("no python3 found: zip_crc32 was not compared with zlib.crc32 on random bytes");
        return;
    }
    const fs::path dir = scratch_folder();
    const RemovedAtEnd cleanup{dir};
    Rng rng(32);
    std::string bytes;
    for (int i = 0; i < 70000; ++i) bytes += static_cast<char>(static_cast<int>(rng.uniform() * 256) & 0xFF);
    write_bytes(dir / "random.bin", bytes);
    const std::size_t lengths[] = {1, 2, 3, 4, 5, 7, 8, 255, 256, 1000, 65536, 70000};
    std::string script = "import sys, zlib\nd = open(sys.argv[1], 'rb').read()\nprint(' '.join(str(zlib.crc32(d[:n])) for n in (";
    std::string expected;
    for (const auto n : lengths) {
        script += std::to_string(n) + ",";
        expected += (expected.empty() ? "" : " ") + std::to_string(zip_crc32(std::string_view(bytes).substr(0, n)));
    }
    script += ")))\n";
    write_bytes(dir / "crc.py", script);
    const auto r = run_command(python + " '" + (dir / "crc.py").string() + "' '" + (dir / "random.bin").string() + "'");
    REQUIRE(r.code == 0);
    CHECK(r.output == expected + "\n");
}

TEST_CASE("to_npz then parse_npz gives the same members, bit for bit", "[npz]") {
    const auto members = sample_members();
    const std::string archive = to_npz(members);
    const auto back = parse_npz(archive, "memory");
    CHECK(same_members(back, members));
    REQUIRE(back.size() == members.size());
    CHECK(back[0].array().dimension() == 0);
    CHECK(bits_of(back[0].array()()) == bits_of(-0.0));
    CHECK(back[4].array().shape() == Array::shape_type{2, 0, 3});
    CHECK(back[7].bytes().size() == 256);
    // arrays are stored as <name>.npy, and exactly to_npy's bytes
    CHECK(archive.find("encoder.W_q.npy") != std::string::npos);
    CHECK(archive.find(to_npy(members[2].array())) != std::string::npos);
    // an archive of nothing is an end record alone, and reads back as nothing
    CHECK(to_npz({}).size() == 22);
    CHECK(parse_npz(to_npz({}), "memory").empty());
}

TEST_CASE("the same members give the same bytes: no clock in the archive", "[npz]") {
    const std::string first = to_npz(sample_members());
    const std::string second = to_npz(sample_members());
    CHECK(first == second);
    // every local header and directory entry dated 1980-01-01 00:00 (DOS time 0, date 0x0021)
    for (std::size_t k = 0; k < sample_members().size(); ++k) {
        const std::size_t local = nth(first, local_sig, k), central = nth(first, central_sig, k);
        CHECK(u16_at(first, local + 10) == 0);
        CHECK(u16_at(first, local + 12) == 0x21);
        CHECK(u16_at(first, central + 12) == 0);
        CHECK(u16_at(first, central + 14) == 0x21);
    }
    // the non-ASCII name, and only it, is flagged UTF-8
    CHECK(u16_at(first, nth(first, local_sig, 5) + 6) == 0x0800);
    CHECK(u16_at(first, nth(first, local_sig, 4) + 6) == 0);
}

TEST_CASE("numpy.load reads attn's archive bit for bit, and PyTorch takes its arrays", "[npz]") {
    const std::string python = python_with("numpy");
    if (python.empty()) {
        WARN("no python3 with numpy (Debian: python3-numpy): attn's .npz was not read by numpy.load");
        return;
    }
    const fs::path dir = scratch_folder();
    const RemovedAtEnd cleanup{dir};
    const auto members = sample_members();
    write_npz(dir / "checkpoint.npz", members);
    // one line per key: its name, then a tensor's dtype, shape and bytes, or raw bytes in hex
    write_bytes(dir / "load.py", "import sys, numpy as np\n"
                                 "with np.load(sys.argv[1]) as f:\n"
                                 "    for k in f.files:\n"
                                 "        v = f[k]\n"
                                 "        if isinstance(v, bytes):\n"
                                 "            print(k, 'bytes', v.hex() or '-')\n"
                                 "        else:\n"
                                 "            print(k, v.dtype.str, 'x'.join(map(str, v.shape)) or '-', v.tobytes().hex() or '-')\n");
    std::string expected;
    for (const auto& m : members)
        expected += m.name + (m.is_array() ? " <f8 " + shape_text(m.array()) + " " +
                                                 hex(m.array().data(), m.array().size() * sizeof(double))
                                           : " bytes " + hex(m.bytes().data(), m.bytes().size())) +
                    "\n";
    const auto r = run_command(python + " '" + (dir / "load.py").string() + "' '" + (dir / "checkpoint.npz").string() + "' 2>&1");
    INFO(r.output);
    REQUIRE(r.code == 0);
    CHECK(r.output == expected);

    const std::string with_torch = python_with("numpy, torch");
    if (with_torch.empty()) {
        WARN("no python3 with PyTorch (Debian: python3-torch): torch.from_numpy was not tried on attn's .npz");
        return;
    }
    // each tensor through torch.from_numpy, its elements' bits read by PyTorch (a view as int64)
    write_bytes(dir / "torch_load.py", "import sys, numpy as np, torch\n"
                                       "with np.load(sys.argv[1]) as f:\n"
                                       "    for k in f.files:\n"
                                       "        v = f[k]\n"
                                       "        if isinstance(v, bytes):\n"
                                       "            continue\n"
                                       "        t = torch.from_numpy(v)\n"
                                       "        bits = t.reshape(-1).view(torch.int64).tolist()\n"
                                       "        print(k, t.dtype, 'x'.join(map(str, t.shape)) or '-',\n"
                                       "              ' '.join('%016x' % (b & 0xFFFFFFFFFFFFFFFF) for b in bits) or '-')\n");
    std::string torch_expected;
    for (const auto& m : members) {
        if (!m.is_array()) continue;
        std::string bits;
        for (const double v : m.array()) {
            char text[20];
            std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits_of(v)));
            bits += (bits.empty() ? "" : " ") + std::string(text);
        }
        torch_expected += m.name + " torch.float64 " + shape_text(m.array()) + " " + (bits.empty() ? "-" : bits) + "\n";
    }
    const auto t = run_command(with_torch + " '" + (dir / "torch_load.py").string() + "' '" +
                               (dir / "checkpoint.npz").string() + "' 2>/dev/null");
    INFO(t.output);
    REQUIRE(t.code == 0);
    CHECK(t.output == torch_expected);
}

TEST_CASE("attn reads what numpy.savez writes, and refuses savez_compressed and archives written to a pipe", "[npz]") {
    const std::string python = python_with("numpy");
    if (python.empty()) {
        WARN("no python3 with numpy (Debian: python3-numpy): no archive of numpy.savez was read");
        return;
    }
    const fs::path dir = scratch_folder();
    const RemovedAtEnd cleanup{dir};
    // several dtypes, orders and shapes; then each array as float64 in C order, as attn holds it
    write_bytes(dir / "savez.py",
                "import sys, numpy as np\n"
                "arrays = dict(w=np.arange(6.0).reshape(2, 3) * 0.1, f32=np.array([0.5, -1.25], dtype=np.float32),\n"
                "              i64=np.array([7, -2], dtype=np.int64), s=np.float64(-0.0), e=np.zeros((0, 3)),\n"
                "              be=np.array([1.5, np.inf], dtype='>f8'), fortran=np.asfortranarray(np.arange(6.0).reshape(2, 3)))\n"
                "kind = sys.argv[2]\n"
                "if kind == 'pipe':\n"
                "    np.savez(sys.stdout.buffer, **arrays)\n"
                "    sys.exit(0)\n"
                "(np.savez_compressed if kind == 'compressed' else np.savez)(sys.argv[1], **arrays)\n"
                "for k, v in arrays.items():\n"
                "    v = np.asarray(v).astype('<f8', order='C')\n"
                "    print(k, 'x'.join(map(str, v.shape)) or '-', v.tobytes().hex() or '-')\n");
    const std::string script = python + " '" + (dir / "savez.py").string() + "' ";

    SECTION("numpy.savez") {
        const fs::path file = dir / "numpy.npz";
        const auto r = run_command(script + "'" + file.string() + "' plain");
        INFO(r.output);
        REQUIRE(r.code == 0);
        // numpy.savez (zipfile's force_zip64) gives every local header a ZIP64 field with both sizes
        const std::string bytes = read_file_bytes(file, "test archive");
        CHECK(u16_at(bytes, 28) == 20);
        CHECK(u16_at(bytes, 30 + 5) == 1);
        std::string got;
        for (const auto& m : read_npz(file)) {
            REQUIRE(m.is_array());
            got += m.name + " " + shape_text(m.array()) + " " + hex(m.array().data(), m.array().size() * sizeof(double)) + "\n";
        }
        CHECK(got == r.output);
    }
    SECTION("numpy.savez_compressed") {
        const fs::path file = dir / "compressed.npz";
        REQUIRE(run_command(script + "'" + file.string() + "' compressed").code == 0);
        CHECK_THROWS_WITH(read_npz(file), Catch::Contains(file.string() + ": member 'w.npy' is compressed") &&
                                              Catch::Contains("save with numpy.savez, not numpy.savez_compressed"));
    }
    SECTION("numpy.savez to a pipe: data descriptors") {
        const auto r = run_command(script + "- pipe");
        REQUIRE(r.code == 0);
        CHECK_THAT(error_of(r.output), Catch::Contains("x.npz: member 'w.npy' uses a data descriptor"));
    }
}

TEST_CASE("every cut of an archive is refused, never read past its end", "[npz]") {
    const std::string archive = to_npz({{"w", Array(xt::ones<double>({std::size_t{3}}))},
                                        {"attn.json", std::string("{}")},
                                        {"s", Array(2.0)}});
    std::vector<std::size_t> not_refused;
    for (std::size_t n = 0; n < archive.size(); ++n) {
        try {
            parse_npz(archive.substr(0, n), "cut.npz");
            not_refused.push_back(n);
        } catch (const GoldenError&) {
        }
    }
    INFO("archive of " << archive.size() << " bytes; cuts not refused: " << not_refused.size());
    CHECK(not_refused.empty());
    CHECK_THAT(error_of(archive.substr(0, archive.size() - 1)), Catch::Contains("x.npz: truncated"));
    CHECK_THAT(error_of(archive.substr(0, 3)), Catch::Contains("x.npz: not a .npz file"));
    CHECK(parse_npz(archive, "whole.npz").size() == 3);
}

TEST_CASE("a changed byte anywhere is refused or harmless; in a member's bytes it fails the CRC naming the member", "[npz]") {
    const auto members = sample_members();
    const std::string archive = to_npz(members);
    std::vector<std::size_t> other_exceptions;
    for (std::size_t at = 0; at < archive.size(); ++at) {
        std::string changed = archive;
        changed[at] = static_cast<char>(changed[at] ^ 0xFF);
        try {
            parse_npz(changed, "flipped.npz");
        } catch (const GoldenError&) {
        } catch (...) {
            other_exceptions.push_back(at);
        }
    }
    CHECK(other_exceptions.empty());

    // the k-th member's first, middle and last data bytes: its name, then its bytes, after its local header
    for (const std::size_t k : {std::size_t{2}, std::size_t{7}}) {
        const std::string file_name = k == 2 ? "encoder.W_q.npy" : "tokenizer.model";
        const std::size_t start = nth(archive, local_sig, k) + 30 + file_name.size();
        const std::size_t size = k == 2 ? to_npy(members[2].array()).size() : 256;
        for (const std::size_t at : {start, start + size / 2, start + size - 1}) {
            std::string changed = archive;
            changed[at] = static_cast<char>(changed[at] ^ 0x01);
            CHECK_THAT(error_of(changed), Catch::Contains("x.npz: member '" + file_name + "' fails its CRC-32 check") &&
                                              Catch::Contains("the file is corrupt"));
        }
    }
}

TEST_CASE("broken archives are refused with the reason", "[npz]") {
    const std::string archive = to_npz({{"a1", std::string("first")}, {"a2", std::string("second")}});
    const std::size_t local2 = nth(archive, local_sig, 1), central1 = nth(archive, central_sig, 0),
                      central2 = nth(archive, central_sig, 1), end = nth(archive, end_sig, 0);
    REQUIRE(error_of(archive) == "(no error)");
    auto changed = [&](std::size_t at, std::uint32_t value, int bytes) {
        std::string s = archive;
        if (bytes == 2) put_u16_at(s, at, value);
        else put_u32_at(s, at, value);
        return s;
    };

    CHECK_THAT(error_of("not a zip at all, but long enough"), Catch::Contains("x.npz: not a .npz file"));
    CHECK_THAT(error_of(changed(local2, 0x04034b51, 4)),
               Catch::Contains("member 'a2''s local header (byte " + std::to_string(local2) + ") has a bad signature"));
    CHECK_THAT(error_of(changed(central2, 0x02014b51, 4)),
               Catch::Contains("central directory entry 2 of 2 has a bad signature"));
    // the end record's directory offset or size off by one
    CHECK_THAT(error_of(changed(end + 16, static_cast<std::uint32_t>(central1 + 1), 4)),
               Catch::Contains("does not end where the end record starts"));
    CHECK_THAT(error_of(changed(end + 12, static_cast<std::uint32_t>(end - central1 - 1), 4)),
               Catch::Contains("does not end where the end record starts"));
    CHECK_THAT(error_of(changed(end + 10, 3, 2)), Catch::Contains("split"));
    {
        std::string s = changed(end + 8, 3, 2);
        put_u16_at(s, end + 10, 3);
        CHECK_THAT(error_of(s), Catch::Contains("central directory entry 3 of 3 runs past the directory's end"));
        put_u16_at(s, end + 8, 1);
        put_u16_at(s, end + 10, 1);
        CHECK_THAT(error_of(s), Catch::Contains("holds more than the 1 entries the end record counts"));
    }
    CHECK_THAT(error_of(changed(end + 10, 0xFFFF, 2)), Catch::Contains("a ZIP64 archive"));
    // sizes and offsets out of range
    CHECK_THAT(error_of(changed(central2 + 42, 0x7FFFFFF0, 4)),
               Catch::Contains("member 'a2''s local header (byte 2147483632) is not before the central directory"));
    {
        std::string s = changed(central2 + 20, 0x10000, 4);
        put_u32_at(s, central2 + 24, 0x10000);
        CHECK_THAT(error_of(s), Catch::Contains("member 'a2''s bytes (65536 from byte") &&
                                    Catch::Contains("run into the central directory"));
    }
    CHECK_THAT(error_of(changed(central2 + 20, 5, 4)), Catch::Contains("member 'a2' is stored, but its compressed size 5"));
    CHECK_THAT(error_of(changed(local2 + 22, 5, 4)), Catch::Contains("member 'a2''s local header disagrees"));
    CHECK_THAT(error_of(changed(local2 + 14, 5, 4)), Catch::Contains("member 'a2''s local header disagrees"));
    CHECK_THAT(error_of(changed(central2 + 24, 0xFFFFFFFF, 4)), Catch::Contains("member 'a2' has ZIP64 sizes"));
    // what attn does not read: compression, encryption, data descriptors, other flags
    {
        std::string s = changed(local2 + 8, 8, 2);
        put_u16_at(s, central2 + 10, 8);
        CHECK_THAT(error_of(s), Catch::Contains("member 'a2' is compressed (deflate): compressed members are not read; "
                                                "save with numpy.savez"));
        put_u16_at(s, central2 + 10, 12);
        CHECK_THAT(error_of(s), Catch::Contains("member 'a2' uses compression method 12"));
    }
    CHECK_THAT(error_of(changed(central2 + 8, 1, 2)), Catch::Contains("member 'a2' is encrypted"));
    CHECK_THAT(error_of(changed(central2 + 8, 8, 2)), Catch::Contains("member 'a2' uses a data descriptor"));
    CHECK_THAT(error_of(changed(central2 + 8, 0x40, 2)), Catch::Contains("member 'a2' has the ZIP flags 0x00000040"));
    // extra fields: cut short, or a ZIP64 size that is not the member's
    {
        std::string s = archive;
        s.insert(local2 + 30 + 2, std::string("\x01\x00\x08\x00\x06\x00\x00\x00\x00\x00\x00\x00", 12));
        put_u16_at(s, local2 + 28, 12);
        // the directory and the end record 12 bytes further on: the end record's directory offset with them
        put_u32_at(s, end + 12 + 16, static_cast<std::uint32_t>(central1 + 12));
        CHECK(error_of(s) == "(no error)");  // numpy's kind of field, with the right size: read
        s[local2 + 30 + 2 + 4] = 7;
        CHECK_THAT(error_of(s), Catch::Contains("member 'a2': its local header's ZIP64 size 7 is not its size 6"));
        put_u16_at(s, local2 + 30 + 2 + 2, 9);
        CHECK_THAT(error_of(s), Catch::Contains("member 'a2': its local header's extra fields are cut short"));
    }
    // names: twice, not flat, not what the local header says
    {
        std::string s = archive;
        s[local2 + 30 + 1] = '1';
        s[central2 + 46 + 1] = '1';
        CHECK_THAT(error_of(s), Catch::Contains("member 'a1' is the second one read as 'a1'"));
        s[local2 + 30] = '/';
        s[central2 + 46] = '/';
        CHECK_THAT(error_of(s), Catch::Contains("the member name '/1' holds a '/'"));
        s[central2 + 46] = 'a';
        CHECK_THAT(error_of(s), Catch::Contains("member 'a1''s local header names it '/1'"));
    }
    // a member's bytes inside another's: a local header for "c" hidden in the bytes of "a"
    {
        const std::string header_of_c = to_npz({{"c", std::string()}}).substr(0, 31);
        std::string s = to_npz({{"a", header_of_c}, {"c", std::string()}});
        put_u32_at(s, nth(s, central_sig, 1) + 42, 31);
        CHECK_THAT(error_of(s), Catch::Contains("members 'a' and 'c' overlap"));
    }
    // a .npy member that is no .npy file, named (its CRC-32 right: names are not in it)
    {
        std::string s = to_npz({{"wxnpy", std::string("not numpy")}});
        s.replace(30, 5, "w.npy");
        s.replace(nth(s, central_sig, 0) + 46, 5, "w.npy");
        CHECK_THAT(error_of(s), Catch::Contains("x.npz (member w.npy): not a .npy file"));
    }
    // a comment after the end record is allowed; the end record is found before it
    {
        std::string s = archive + "a comment";
        put_u16_at(s, end + 20, 9);
        CHECK(error_of(s) == "(no error)");
        put_u16_at(s, end + 20, 8);
        CHECK_THAT(error_of(s), Catch::Contains("truncated, or not a ZIP archive"));
    }
}

TEST_CASE("to_npz refuses what a plain ZIP or a flat checkpoint cannot hold", "[npz]") {
    const Array one = xt::ones<double>({std::size_t{1}});
    CHECK_THAT(invalid_argument_of({{"", one}}), Catch::Contains("cannot write a .npz archive: the member name '' is empty"));
    CHECK_THAT(invalid_argument_of({{"w", one}, {"w", std::string("x")}}), Catch::Contains("'w' is given twice"));
    CHECK_THAT(invalid_argument_of({{"enc/w", one}}), Catch::Contains("'enc/w' holds a '/' or '\\'"));
    CHECK_THAT(invalid_argument_of({{"enc\\w", one}}), Catch::Contains("holds a '/' or '\\'"));
    CHECK_THAT(invalid_argument_of({{"a..b", one}}), Catch::Contains("'a..b' holds \"..\""));
    CHECK_THAT(invalid_argument_of({{".hidden", std::string()}}), Catch::Contains("'.hidden' starts with a dot"));
    CHECK_THAT(invalid_argument_of({{std::string("a\0b", 3), one}}), Catch::Contains("'a\\x00b' holds a control character"));
    CHECK_THAT(invalid_argument_of({{"a\nb", one}}), Catch::Contains("holds a control character"));
    CHECK_THAT(invalid_argument_of({{"\xff", one}}), Catch::Contains("'\\xFF' is not valid UTF-8"));
    CHECK_THAT(invalid_argument_of({{"weights.npy", std::string("raw")}}),
               Catch::Contains("the raw member 'weights.npy' ends in .npy"));
    CHECK_THAT(invalid_argument_of({{std::string(0x10000, 'n'), std::string()}}), Catch::Contains("longer than the 65535"));
    CHECK_THAT(invalid_argument_of({{std::string(0xFFFD, 'n'), one}}), Catch::Contains("is longer than 65535 bytes"));
    CHECK(invalid_argument_of({{"weights.npy", one}, {"w", std::string("raw")}}) == "(no error)");

    SECTION("sizes: the archive to the byte, and one member alone") {
        const std::vector<NpzMember> members{{"tokenizer.model", std::string(100, 't')}, {"w", one}};
        const std::uint64_t size = to_npz(members).size();
        CHECK(invalid_argument_of(members, size) == "(no error)");
        CHECK_THAT(invalid_argument_of(members, size - 1),
                   Catch::Contains("the archive would be at least " + std::to_string(size) + " bytes, more than the " +
                                   std::to_string(size - 1) + " allowed"));
        CHECK_THAT(invalid_argument_of(members, 99),
                   Catch::Contains("the member 'tokenizer.model' alone is 100 bytes, more than the 99 allowed"));
    }
    SECTION("members: 65534 at most (0xFFFF means ZIP64 to readers)") {
        std::vector<NpzMember> many;
        for (std::size_t i = 0; i < max_npz_members; ++i) many.push_back({"m" + std::to_string(i), std::string()});
        const auto back = parse_npz(to_npz(many), "many.npz");
        REQUIRE(back.size() == max_npz_members);
        CHECK(back.back().name == "m65533");
        many.push_back({"one-more", std::string()});
        CHECK_THAT(invalid_argument_of(many), Catch::Contains("65535 members, more than the 65534"));
    }
}

TEST_CASE("write_npz replaces a checkpoint whole and leaves no temporary file", "[npz]") {
    const fs::path dir = scratch_folder();
    const RemovedAtEnd cleanup{dir};
    const fs::path file = dir / "model.npz";
    auto files_in_dir = [&] {
        std::vector<std::string> names;
        for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
        return names;
    };

    const auto big = sample_members();
    write_npz(file, big);
    CHECK(same_members(read_npz(file), big));
    const std::vector<NpzMember> small{{"w", Array(xt::zeros<double>({std::size_t{2}, std::size_t{2}}))},
                                       {"attn.json", std::string("{}")}};
    write_npz(file, small);
    CHECK(files_in_dir() == std::vector<std::string>{"model.npz"});
    CHECK(attn::test::read_file(file) == to_npz(small));  // no tail of the larger archive
    CHECK(same_members(read_npz(file), small));

    // a refused checkpoint leaves the old one as it was, and nothing beside it
    CHECK_THROWS_WITH(write_npz(file, {{"../escape", std::string()}}),
                      Catch::Contains(file.string() + ": cannot write a .npz archive: the member name '../escape'"));
    CHECK(files_in_dir() == std::vector<std::string>{"model.npz"});
    CHECK(attn::test::read_file(file) == to_npz(small));

    CHECK_THROWS_WITH(read_npz(dir / "missing.npz"), Catch::Contains("missing.npz: cannot open"));
    CHECK_THROWS_WITH(read_npz(dir), Catch::Contains("is a directory, not a .npz file"));
}

}  // namespace test_npz
