#include "inputs.hpp"

#include "golden.hpp"
#include "npy.hpp"

#include <algorithm>
#include <vector>

namespace attn {

namespace {

[[noreturn]] void fail_input(const std::string& source, const std::string& what) {
    fail_reading("--input " + source, what);
}

std::map<std::string, Array> read_directory(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> files;
    // an unreadable folder (no read or search permission) is the user's to fix, not a bug: named
    // with the system's reason, never a filesystem_error escaping as an internal error
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        const auto& entry = *it;
        const std::string file_name = entry.path().filename().string();
        if (file_name.empty() || file_name[0] == '.') continue;
        // the export-only data of an `attn export --format npy` folder: never inputs
        std::error_code kind;
        if (file_name == export_data_dir && entry.is_directory(kind)) continue;
        if (entry.path().extension() != ".npy")
            fail_input(entry.path().string(), "is not a .npy file; the folder should hold only <tensor>.npy files");
        files.push_back(entry.path());
    }
    if (ec) fail_input(dir.string(), "cannot read the folder: " + ec.message());
    if (files.empty()) fail_input(dir.string(), "has no <tensor>.npy files");
    std::sort(files.begin(), files.end());
    std::map<std::string, Array> inputs;
    for (const auto& file : files) {
        const std::string stem = file.stem().string();
        if (stem.empty() || stem.back() == '.') fail_input(file.string(), "is not named <tensor>.npy or <step>.<tensor>.npy");
        // the names reach messages and the terminal
        if (printable_utf8(stem) != stem) fail_input(file.string(), "the name is not valid UTF-8");
        inputs.emplace(stem, read_npy(file));
    }
    return inputs;
}

}  // namespace

std::map<std::string, Array> read_inputs(const std::filesystem::path& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        fail_input(path.string(), ec && ec != std::errc::no_such_file_or_directory ? "cannot be reached: " + ec.message()
                                                                                   : "no such file or directory");
    if (std::filesystem::is_directory(path, ec)) return read_directory(path);
    const Submission sub = parse_submission_json(read_file_bytes(path, "JSON file"), path.string());
    std::map<std::string, Array> inputs;
    std::size_t data = 0;
    for (const auto& s : sub.trace.steps())
        for (const auto& t : s.tensors) {
            // export-only data (a corpus, initial weights) is what a lesson hands out, never an input
            if (t.export_only) ++data;
            else inputs.emplace(s.id + "." + t.name, t.value);
        }
    if (inputs.empty())
        fail_input(path.string(), data == 0 ? "holds no tensors"
                                            : "holds only export-only data (\"export_only\": true), which is never "
                                              "an input");
    return inputs;
}

}  // namespace attn
