// Golden files: a Trace as JSON (format "attn-golden", version 1), read back
// bit-identically, and written atomically so no file is ever half-written.
#pragma once

#include "trace.hpp"

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attn {

inline constexpr int golden_format_version = 1;

// A golden file that is missing, unreadable or not valid format v1. The message names
// the file and, for a JSON syntax error, the line and column.
struct GoldenError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The file a lesson's golden lives in: "01_bottleneck.json".
std::string golden_file_name(int number, const std::string& slug);

// The whole trace as golden JSON text (UTF-8, LF line endings, one row of data per line,
// doubles in shortest round-trip form, non-finite numbers as "inf", "-inf", "nan").
std::string to_golden_json(const Trace& trace);

// Parses golden JSON text; `source` names the file in error messages.
Trace parse_golden_json(std::string_view text, const std::string& source);

// Reads and parses a golden file; throws GoldenError when it is missing or corrupt.
Trace read_golden(const std::filesystem::path& file);

// A student's numbers: any subset of a lesson's steps and tensors.
struct Submission {
    Trace trace;
    bool has_lesson = false;  // the file names its lesson (trace.lesson())
    bool has_config = false;  // the file gives its configuration (trace.config())
};

// Golden JSON relaxed for students: "format", "version", "lesson", "config", step titles,
// tensor shapes (inferred from the nesting) and checks may be left out; present, they are checked.
Submission parse_submission_json(std::string_view text, const std::string& source);

// A submission file (relaxed golden JSON) or a directory of "<step>.<tensor>.npy" files.
Submission read_submission(const std::filesystem::path& path);

// The folder inside an `attn export --format npy` directory that holds the export-only data
// (TensorRecord::export_only) as <step>.<tensor>.npy files: read_submission does not look into it,
// and --input skips it.
inline constexpr const char* export_data_dir = "data";

// What read_file_bytes reads at most unless told otherwise: golden files are under 100 KB, so a
// larger JSON file is a mistake, not worth reading and parsing for seconds.
inline constexpr std::uintmax_t max_file_bytes = std::uintmax_t{64} << 20;

// The bytes of a file; throws GoldenError naming it when it is a directory ("is a directory,
// not a <kind>"), cannot be opened or read, or holds more than `max_bytes` (refused before
// reading when the size is known, so a huge file costs no time).
std::string read_file_bytes(const std::filesystem::path& file, const std::string& kind,
                            std::uintmax_t max_bytes = max_file_bytes);

// `text` with every byte that is not part of well-formed UTF-8, and every control character but
// line break and tab (ESC, which starts a terminal's escape sequences, above all), written as
// \xHH: messages quote files, paths and command-line words, and must never put invalid UTF-8 or
// a terminal command on a terminal. (Every GoldenError is made so.)
std::string printable_utf8(std::string_view text);

// Throws the GoldenError "<source>: <what>" (escaped by printable_utf8): what every reader of a
// golden, .npy or --input file says when the file is wrong.
[[noreturn]] void fail_reading(const std::string& source, const std::string& what);

// "[i, j, k]": an element's position, as messages show it.
std::string index_text(const std::vector<std::size_t>& index);

// Writes `content` to a temporary file beside `file`, flushes it, then renames it over
// `file`: readers see the old or the new content, never a mixture. Throws
// std::runtime_error naming the file when any part fails (the old file is then untouched).
// A symlink is written through (its target gets the content, the link stays); the file keeps its
// mode (a read-only file stays read-only; a new one is 0644). The temporary file is named
// .<name>.tmp.<pid>.XXXXXX; those a killed process left behind are removed by the next write of
// the same file.
void write_file_atomic(const std::filesystem::path& file, const std::string& content);

}  // namespace attn
