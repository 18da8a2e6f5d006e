// Replays the fuzz targets over saved inputs, without libFuzzer: `fuzz_replay <target> <dir>...`
// runs the target (golden, npy, settings or mathml) on every regular file in each directory (README* and dot
// files skipped), in name order, and prints "OK <n> inputs". It fails when the target is unknown, when
// a directory is missing or has no entries at all, when there is no input in any of them, or when the
// target throws; a target that finds a broken property calls abort(), and the name of the input is
// printed first. The three targets are compiled into this one program (meson.build), each under a
// name of its own (ATTN_FUZZ_ENTRY, fuzz_support.hpp).
#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" int attn_fuzz_golden(const std::uint8_t* data, std::size_t size);
extern "C" int attn_fuzz_npy(const std::uint8_t* data, std::size_t size);
extern "C" int attn_fuzz_settings(const std::uint8_t* data, std::size_t size);
extern "C" int attn_fuzz_mathml(const std::uint8_t* data, std::size_t size);

namespace fs = std::filesystem;

namespace {

// The input being run, for the message of a crash (a signal handler may only write(2)).
char current[4096];

extern "C" void report_crash(int sig) {
    const char before[] = "CRASH while replaying ";
    [[maybe_unused]] auto a = ::write(2, before, sizeof before - 1);
    [[maybe_unused]] auto b = ::write(2, current, std::strlen(current));
    [[maybe_unused]] auto c = ::write(2, "\n", 1);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

bool is_input(const fs::directory_entry& entry) {
    const std::string name = entry.path().filename().string();
    return entry.is_regular_file() && name.rfind("README", 0) != 0 && name.front() != '.';
}

}  // namespace

using Target = int (*)(const std::uint8_t* data, std::size_t size);

Target target_named(const std::string& name) {
    if (name == "golden") return attn_fuzz_golden;
    if (name == "npy") return attn_fuzz_npy;
    if (name == "settings") return attn_fuzz_settings;
    if (name == "mathml") return attn_fuzz_mathml;
    return nullptr;
}

int main(int argc, char** argv) {
    const Target target = argc < 2 ? nullptr : target_named(argv[1]);
    if (argc < 3 || target == nullptr) {
        std::fprintf(stderr, "usage: %s golden|npy|settings|mathml <corpus dir>...\n", argv[0]);
        return 2;
    }
    std::signal(SIGABRT, report_crash);
    std::signal(SIGSEGV, report_crash);
    std::signal(SIGFPE, report_crash);

    std::size_t count = 0;
    int status = 0;
    for (int i = 2; i < argc; ++i) {
        const fs::path dir = argv[i];
        std::error_code ec;
        if (!fs::is_directory(dir, ec)) {
            std::fprintf(stderr, "FAIL %s: not a directory\n", argv[i]);
            status = 1;
            continue;
        }
        std::vector<fs::path> files;
        bool any_entry = false;
        for (const auto& entry : fs::directory_iterator(dir)) {
            any_entry = true;
            if (is_input(entry)) files.push_back(entry.path());
        }
        if (!any_entry) {
            std::fprintf(stderr, "FAIL %s: the directory is empty\n", argv[i]);
            status = 1;
        }
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            std::ifstream in(file, std::ios::binary);
            const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            if (in.bad()) {
                std::fprintf(stderr, "FAIL %s: cannot read\n", file.c_str());
                status = 1;
                continue;
            }
            std::snprintf(current, sizeof current, "%s", file.c_str());
            try {
                target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
            } catch (const std::exception& e) {
                std::fprintf(stderr, "FAIL %s: uncaught exception: %s\n", file.c_str(), e.what());
                status = 1;
            } catch (...) {
                std::fprintf(stderr, "FAIL %s: uncaught exception of an unknown type\n", file.c_str());
                status = 1;
            }
            ++count;
        }
    }
    if (count == 0) {
        std::fprintf(stderr, "FAIL: no inputs\n");
        status = 1;
    }
    if (status == 0) std::printf("OK %zu inputs\n", count);
    return status;
}
