// Running untrusted code (a student's exercise files, compiled and run by `attn grade --sources`)
// inside bubblewrap (bwrap): new user, PID, network, IPC, UTS and cgroup namespaces, so no network,
// no view of other processes, and a file system holding only /usr (read-only), an empty /tmp of a
// capped size, a fresh /proc, a minimal /dev, and the paths the caller binds: read-only ones (the
// kit: headers, libraries, objects) and at most one writable directory, the student's own.
//
// What leaves the sandbox goes through pipes only (its standard output and error, and a report
// pipe at file descriptor 3), read into memory with a cap: attn never opens a file the sandbox
// could have replaced by a link. The environment is fixed (PATH, HOME, LC_ALL), never the caller's.
// Started by root, the sandbox runs as the unprivileged host user `nobody` (65534), so that no
// file of root's is readable through a user namespace that maps the sandbox to root.
//
// Limits, each named in the result when it ended the command: CPU seconds of everything the
// command runs together, wall clock, memory, processes, output, disk (the writable folder and
// /tmp). Where a cgroup can be created (cgroup v2, or v1's cpuacct, memory and pids hierarchies,
// usually as root) the CPU time, memory and process count are those of the whole sandbox; where
// not, CPU is limited per process (RLIMIT_CPU) and summed from /proc while the command runs (a
// process that lives less than the polling interval may escape that sum), memory per process
// (RLIMIT_AS) and processes by RLIMIT_NPROC.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attn {

struct SandboxLimits {
    double cpu_seconds = 60;                           // everything the command runs, together
    double wall_seconds = 120;                         // the whole command
    std::size_t memory_bytes = std::size_t{2} << 30;   // the sandbox together (cgroup), and each process's address space
    std::size_t file_bytes = std::size_t{64} << 20;    // the largest file it may write (RLIMIT_FSIZE)
    std::size_t processes = 64;                        // processes and threads at once
    std::size_t output_bytes = std::size_t{16} << 20;  // each of stdout, stderr and the report pipe
    std::size_t disk_bytes = std::size_t{512} << 20;   // the writable folder's files together, and /tmp's size
};

// Which limit ended the command, if one did.
enum class SandboxLimit { none, cpu, wall, memory, processes, output, disk, file_size };

struct SandboxCommand {
    std::vector<std::string> argv;                 // argv[0] an absolute path inside the sandbox
    std::vector<std::filesystem::path> read_only;  // bound at the same path, read-only
    std::filesystem::path writable;                // bound read-write at the same path (may be empty: none)
    std::filesystem::path workdir;                 // the working directory (empty: `writable`, else /)
    bool report_pipe = false;                      // give the command a pipe at file descriptor 3
    SandboxLimits limits;
};

struct SandboxResult {
    bool ran = false;           // bwrap started the command (false: `error` says why)
    int exit_code = -1;         // when it exited
    int signal = 0;             // when a signal ended it
    SandboxLimit exceeded = SandboxLimit::none;  // the limit that ended it (its processes were then killed)
    bool interrupted = false;   // the caller was interrupted (SIGINT, SIGTERM): the sandbox was ended
    double cpu_seconds = 0;     // used by everything in the sandbox
    std::string out, err, report;  // what it wrote to stdout, stderr and the report pipe (each capped)
    std::string error;          // why it did not run; said by attn, never read from a file
};

// bwrap's own failure, its message on stderr ("bwrap: ..."), as attn reports it. "Can't fork" is
// the process limit of the sandbox's user (RLIMIT_NPROC counts every process of that user, and every
// attn grade run by root runs its sandboxes as the same user, nobody), not a sandbox that cannot be
// made: said so, not put down to user namespaces.
std::string bwrap_failure(const std::string& message);
bool bwrap_could_not_fork(const std::string& message);

// Why no sandbox can be created here (bwrap missing, user namespaces disabled, the sandbox user
// unable to create one), or nothing when one can: tried once, with a trivial command.
std::optional<std::string> sandbox_unavailable();

// How the limits are kept here, for messages and the report: "cgroup v2", "cgroup v1" or
// "per process (no cgroup can be created here)".
std::string sandbox_accounting();

// The host user and group the sandboxed code runs as: nobody (65534) when attn runs as root,
// nothing otherwise (it then runs as the caller). A writable folder must belong to this user.
struct HostUser {
    unsigned uid, gid;
};
std::optional<HostUser> sandbox_host_user();

SandboxResult run_sandboxed(const SandboxCommand& command);

// SIGINT and SIGTERM set a flag instead of ending the process: run_sandboxed then ends its
// sandbox and returns `interrupted`, and the caller cleans up and exits. Returns whether one came.
void catch_interruptions();
bool interruption_requested();
int interruption_signal();  // SIGINT or SIGTERM, or 0

// The executable `name` on PATH (then /usr/bin and /bin), or `name` itself when it holds a '/'.
std::optional<std::filesystem::path> find_on_path(const std::string& name);

// "signal 11 (SIGSEGV: segmentation fault)"
std::string signal_description(int signal);

// "the CPU limit", "the memory limit", ... for messages.
std::string limit_name(SandboxLimit limit);

}  // namespace attn
