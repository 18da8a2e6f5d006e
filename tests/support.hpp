// Helpers shared by the test programs: running a built binary, reading a file whole, finding a
// tensor a lesson recorded, checking that markup is well-formed, and listing the checks of a
// lesson that fail.
#pragma once

#include "core/trace.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace attn::test {

// How many times `piece` occurs in `text` (overlapping ones too).
inline std::size_t occurrences(const std::string& text, const std::string& piece) {
    std::size_t n = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
    return n;
}

// The text of markup: tags removed, the five entities decoded.
inline std::string text_of(const std::string& markup) {
    std::string out;
    bool in_tag = false;
    for (const char c : markup) {
        if (c == '<') in_tag = true;
        else if (c == '>') in_tag = false;
        else if (!in_tag) out += c;
    }
    for (const auto& [entity, c] : std::vector<std::pair<std::string, std::string>>{
             {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}})
        for (std::size_t at = out.find(entity); at != std::string::npos; at = out.find(entity, at))
            out.replace(at, entity.size(), c);
    return out;
}

// Removes `path` and everything in it when it goes out of scope (a test's temporary files, whether its
// checks pass, fail or throw).
struct RemovedAtEnd {
    std::filesystem::path path;
    RemovedAtEnd(const RemovedAtEnd&) = delete;
    RemovedAtEnd& operator=(const RemovedAtEnd&) = delete;
    ~RemovedAtEnd() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
};

// A new, empty folder for a test's temporary files, <temp>/attn_test_<name>_<pid> (hold it in a
// RemovedAtEnd so it goes when the test case ends).
inline std::filesystem::path fresh_folder(const std::string& name) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("attn_test_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

// KJV Genesis 1:1-5, as src/text/bible cleans the module engKJV2006eb: the text the byte-pair
// encoding and SentencePiece tests learn their vocabularies from.
inline const std::vector<std::string>& kjv_genesis_1_to_5() {
    static const std::vector<std::string> verses = {
        "In the beginning God created the heaven and the earth.",
        "And the earth was without form, and void; and darkness was upon the face of the deep. And the Spirit "
        "of God moved upon the face of the waters.",
        "And God said, Let there be light: and there was light.",
        "And God saw the light, that it was good: and God divided the light from the darkness.",
        "And God called the light Day, and the darkness he called Night. And the evening and the morning were "
        "the first day."};
    return verses;
}

// Whether lesson 14's SWORD modules and SWORD's exporter are installed; when not, `why` says what is missing.
inline bool bible_modules_installed(std::string& why) {
    if (::access("/usr/bin/mod2imp", X_OK) != 0) {
        why = "mod2imp (libsword-utils) is not installed";
        return false;
    }
    for (const char* conf : {"/usr/share/sword/mods.d/engKJV2006eb.conf", "/usr/share/sword/mods.d/spaRV1909eb.conf"})
        if (::access(conf, R_OK) != 0) {
            why = std::string(conf) + " is missing";
            return false;
        }
    return true;
}

struct Result {
    int code;            // the exit code, or -1 when the program did not exit normally
    std::string output;  // what it printed (stdout, plus stderr when the command redirects it)
};

// Runs a shell command and collects its output and exit code.
inline Result run_command(const std::string& command) {
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string output;
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
    const int status = ::pclose(pipe);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// spm_train's path (package sentencepiece), or "" after a warning that the part needing it is skipped
// (call it from the test case).
inline std::string spm_train_or_skip() {
    const Result found = run_command("command -v spm_train 2>/dev/null");
    if (found.code != 0 || found.output.empty()) {
        WARN("skipped: spm_train is not installed (Debian package sentencepiece: apt-get install sentencepiece)");
        return "";
    }
    return found.output.substr(0, found.output.find('\n'));
}

// A command that runs `bin` so that permission bits stop it as they stop a user. An ordinary
// user runs `bin` itself. Root ignores permission bits, so it runs a copy of `bin` in `scratch`
// (created, and open to all: the build directory may not be) as nobody, through setpriv. Empty,
// with the reason in `why`, when root cannot become nobody here.
inline std::string unprivileged_command(const std::filesystem::path& bin, const std::filesystem::path& scratch,
                                        std::string& why) {
    namespace fs = std::filesystem;
    if (::geteuid() != 0) return "'" + bin.string() + "'";
    fs::create_directories(scratch);
    fs::permissions(scratch, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                 fs::perms::others_read | fs::perms::others_exec);
    const fs::path copy = scratch / bin.filename();
    fs::copy_file(bin, copy, fs::copy_options::overwrite_existing);
    const std::string command = "setpriv --reuid=65534 --regid=65534 --clear-groups '" + copy.string() + "'";
    const Result probe = run_command(command + " --version 2>&1");
    if (probe.code != 0)
        why = "running as root, which ignores permission bits, and it cannot run attn as nobody here (" + command +
              " --version: exit " + std::to_string(probe.code) + ", " + probe.output + ")";
    return probe.code == 0 ? command : std::string();
}

inline std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// The tensor `name` of step `step`; fails the test (naming both) when it is absent.
inline const TensorRecord& recorded(const Trace& trace, const std::string& step, const std::string& name) {
    const Step* s = trace.find_step(step);
    INFO("step " << step << ", tensor " << name);
    REQUIRE(s != nullptr);
    const TensorRecord* found = nullptr;
    for (const auto& t : s->tensors)
        if (t.name == name) found = &t;
    REQUIRE(found != nullptr);
    return *found;
}

// An independent UTF-8 check (RFC 3629): no stray continuation bytes, no overlong forms, no
// surrogates, nothing past U+10FFFF.
inline bool valid_utf8(const std::string& s) {
    std::size_t i = 0;
    while (i < s.size()) {
        const auto b = static_cast<unsigned char>(s[i]);
        std::size_t n = b < 0x80                 ? 0
                        : b >= 0xC2 && b <= 0xDF ? 1
                        : b >= 0xE0 && b <= 0xEF ? 2
                        : b >= 0xF0 && b <= 0xF4 ? 3
                                                 : 9;
        if (n == 9 || i + n >= s.size()) return false;
        if (n == 0) {
            ++i;
            continue;
        }
        unsigned long cp = b & (0x3F >> n);
        for (std::size_t k = 1; k <= n; ++k) {
            const auto c = static_cast<unsigned char>(s[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3F);
        }
        const unsigned long smallest[] = {0, 0x80, 0x800, 0x10000};
        if (cp < smallest[n] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
        i += n + 1;
    }
    return true;
}

// The first thing an XML parser would refuse that a careless writer produces, or "": invalid
// UTF-8, a control character, '&' that starts no entity, '<' that starts no tag (a raw '<' in
// text or an attribute), an element closed out of order or left open. With `html`, the doctype
// and HTML's void elements (<meta>, <br>, ...) need no closing.
inline std::string xml_problem(const std::string& svg, bool html = false) {
    if (!valid_utf8(svg)) return "invalid UTF-8";
    const auto control = std::find_if(svg.begin(), svg.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r';
    });
    if (control != svg.end()) return "a control character at byte " + std::to_string(control - svg.begin());
    for (std::size_t at = svg.find('&'); at != std::string::npos; at = svg.find('&', at + 1)) {
        const std::string after = svg.substr(at + 1, 5);
        const bool entity = after.rfind("amp;", 0) == 0 || after.rfind("lt;", 0) == 0 || after.rfind("gt;", 0) == 0 ||
                            after.rfind("quot;", 0) == 0 || after.rfind("apos;", 0) == 0;
        if (!entity) return "a bare '&': " + svg.substr(at, 12);
    }
    std::vector<std::string> open;
    for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
        const std::size_t end = svg.find('>', at);
        if (end == std::string::npos) return "an unfinished tag: " + svg.substr(at, 20);
        const std::string tag = svg.substr(at, end + 1 - at);
        const bool starts_tag = std::isalpha(static_cast<unsigned char>(tag[1])) || tag[1] == '/' || tag[1] == '?' ||
                                (html && tag.rfind("<!DOCTYPE", 0) == 0);
        if (!starts_tag || tag.find('<', 1) != std::string::npos) return "a bare '<': " + tag;
        if (tag[1] == '?' || tag.compare(tag.size() - 2, 2, "/>") == 0) continue;
        if (html && tag.rfind("<!DOCTYPE", 0) == 0) continue;
        const bool closing = tag[1] == '/';
        const std::size_t name_start = closing ? 2 : 1;
        const std::string name = tag.substr(name_start, tag.find_first_of(" >") - name_start);
        const bool void_element = html && (name == "meta" || name == "br" || name == "hr" || name == "img" ||
                                           name == "link" || name == "input" || name == "wbr");
        if (void_element) continue;
        if (!closing) {
            open.push_back(name);
        } else if (open.empty() || open.back() != name) {
            return tag + " closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
        } else {
            open.pop_back();
        }
    }
    return open.empty() ? "" : "<" + open.back() + "> is never closed";
}

// The claims of the checks that fail, one per line with its step, error and tolerance ("" when all hold).
inline std::string failed_checks(const Trace& trace) {
    std::ostringstream out;
    for (const auto& s : trace.steps())
        for (const auto& c : s.checks)
            if (!c.holds)
                out << "    [" << s.id << "] " << c.claim << ": error " << c.max_abs_error << " > tolerance "
                    << c.tolerance << "\n";
    return out.str();
}

// The sanitizers this build runs under (ATTN_SANITIZED, which tests/meson.build sets: "address,undefined"
// in CI's second build), or "" in an unsanitized build. Lessons run 12 to 27 times slower under them, so
// some tests leave their longest runs to the unsanitized build, and say so.
inline std::string sanitizers() {
    const char* text = std::getenv("ATTN_SANITIZED");
    return text ? text : "";
}

// `--set key=value` for each setting of `wanted` that differs from `defaults`: a lesson's quick
// configuration as command-line words (" --set epochs=1 --set sentences=50 ...").
inline std::string set_args(const Config& wanted, const Config& defaults) {
    std::string out;
    for (std::size_t i = 0; i < wanted.values.size(); ++i)
        if (i >= defaults.values.size() || wanted.values[i] != defaults.values[i])
            out += " --set " + wanted.values[i].first + "=" + std::to_string(wanted.values[i].second);
    return out;
}

// The lessons that train models for seconds (minutes when sanitized): 9, 12, 13, which decodes
// with lesson 12's models, 14, which reads the Bible and trains on it, and 15, which races five
// Transformers on lesson 12's corpus and five on lesson 14's verses. Tests that run every lesson at
// its defaults leave them to check_exact.
inline bool trains(const std::string& slug) {
    return slug == "learning-to-align" || slug == "transformer" || slug == "decoding" || slug == "real-translation" ||
           slug == "positions";
}

// How many doubles apart two results >= 0 are (ulp, subnormal ones too): the difference of their
// bit patterns, whose order is the doubles' order there.
inline std::uint64_t ulps_apart(double a, double b) {
    std::uint64_t a_bits = 0, b_bits = 0;
    std::memcpy(&a_bits, &a, sizeof a);
    std::memcpy(&b_bits, &b, sizeof b);
    return a_bits > b_bits ? a_bits - b_bits : b_bits - a_bits;
}

// The largest distance in ulp between exp_x[i] and std::exp(x[i]), and the x where it is.
struct UlpDistance {
    std::uint64_t ulps = 0;
    double at = 0.0;
};
inline UlpDistance farthest_from_exp(const std::vector<double>& x, const std::vector<double>& exp_x) {
    UlpDistance worst;
    for (std::size_t i = 0; i < x.size() && i < exp_x.size(); ++i) {
        const std::uint64_t apart = ulps_apart(exp_x[i], std::exp(x[i]));
        if (apart > worst.ulps) worst = {apart, x[i]};
    }
    return worst;
}

}  // namespace attn::test
