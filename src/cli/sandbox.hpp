// Running untrusted code (a student's exercise files, compiled and run by `attn grade --sources`)
// inside bubblewrap (bwrap): new user, PID, network, IPC and UTS namespaces, so no network, no
// other process to signal, and a file system holding only /usr (read-only), an empty /tmp, /proc,
// a minimal /dev, and the paths the caller binds: read-only ones (headers, libraries, golden
// files) and one writable directory, the student's own. Limits: CPU seconds and address space per
// process (setrlimit, inherited by everything it starts), a file-size limit, and a wall-clock
// limit after which the whole sandbox is killed (its PID namespace dies with its first process).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attn {

struct SandboxLimits {
    double cpu_seconds = 60;                       // per process; the sandbox is killed at the wall limit
    double wall_seconds = 120;                     // for the whole command
    std::size_t memory_bytes = std::size_t{2} << 30;  // address space per process
    std::size_t file_bytes = std::size_t{64} << 20;   // largest file it may write
};

struct SandboxCommand {
    std::vector<std::string> argv;                        // argv[0] an absolute path inside the sandbox
    std::vector<std::filesystem::path> read_only;         // bound at the same path, read-only
    std::filesystem::path writable;                       // bound read-write at the same path; the working directory
    std::filesystem::path stdout_file, stderr_file;       // inside `writable`
    SandboxLimits limits;
};

struct SandboxResult {
    bool ran = false;            // bwrap started the command (false: `error` says why)
    int exit_code = -1;          // when it exited
    int signal = 0;              // when a signal ended it (SIGXCPU, SIGKILL at the CPU limit)
    bool wall_timeout = false;   // killed at the wall-clock limit
    double cpu_seconds = 0;      // used by the sandbox and everything in it
    std::string error;
};

// Why no sandbox can be created here (bwrap missing, user namespaces disabled), or nothing when
// one can: tried once, with a trivial command.
std::optional<std::string> sandbox_unavailable();

SandboxResult run_sandboxed(const SandboxCommand& command);

// The executable `name` on PATH (then /usr/bin and /bin), or `name` itself when it holds a '/'.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

// "signal 11 (SIGSEGV: segmentation fault)"
std::string signal_description(int signal);

}  // namespace attn
