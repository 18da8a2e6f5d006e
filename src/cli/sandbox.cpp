#include "cli/sandbox.hpp"

#include "core/golden.hpp"
#include "core/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attn {

namespace {

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; }

double children_cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    return seconds_of(usage.ru_utime) + seconds_of(usage.ru_stime);
}

std::vector<std::string> bwrap_arguments(const std::filesystem::path& bwrap, const SandboxCommand& c) {
    std::vector<std::string> a = {bwrap.string(), "--unshare-all", "--die-with-parent", "--new-session",
                                  "--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME",
                                  c.writable.string(), "--setenv", "LC_ALL", "C", "--setenv", "NO_COLOR", "1",
                                  "--ro-bind", "/usr", "/usr"};
    // the merged /usr of Debian: /bin, /lib and /lib64 are links into it
    for (const char* link : {"bin", "sbin", "lib", "lib64", "lib32", "libx32"}) {
        std::error_code ec;
        if (std::filesystem::exists(std::filesystem::path("/usr") / link, ec))
            a.insert(a.end(), {"--symlink", std::string("usr/") + link, std::string("/") + link});
    }
    a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"});
    for (const auto& p : c.read_only) a.insert(a.end(), {"--ro-bind", p.string(), p.string()});
    a.insert(a.end(), {"--bind", c.writable.string(), c.writable.string(), "--chdir", c.writable.string()});
    // nobody inside: even a sandbox started by root runs the code as an unprivileged user
    a.insert(a.end(), {"--uid", "65534", "--gid", "65534", "--"});
    a.insert(a.end(), c.argv.begin(), c.argv.end());
    return a;
}

[[noreturn]] void exec_child(const std::vector<std::string>& args, const SandboxCommand& c) {
    ::setpgid(0, 0);
    const auto limit = [](int resource, rlim_t soft, rlim_t hard) {
        rlimit r{soft, hard};
        ::setrlimit(resource, &r);
    };
    const auto cpu = static_cast<rlim_t>(std::max(1.0, c.limits.cpu_seconds));
    limit(RLIMIT_CPU, cpu, cpu + 1);  // SIGXCPU at the limit, SIGKILL a second later
    limit(RLIMIT_AS, c.limits.memory_bytes, c.limits.memory_bytes);
    limit(RLIMIT_FSIZE, c.limits.file_bytes, c.limits.file_bytes);
    limit(RLIMIT_CORE, 0, 0);
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(c.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(c.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);  // nothing of ours leaks into the sandbox
    std::vector<char*> argv;
    for (const auto& s : args) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
}

}  // namespace

std::optional<std::filesystem::path> find_on_path(const std::string& name) {
    if (name.find('/') != std::string::npos)
        return ::access(name.c_str(), X_OK) == 0 ? std::optional<std::filesystem::path>(name) : std::nullopt;
    const char* path = std::getenv("PATH");
    const std::string dirs = std::string(path && *path ? path : "") + ":/usr/bin:/bin";
    std::size_t at = 0;
    while (at <= dirs.size()) {
        const std::size_t end = std::min(dirs.find(':', at), dirs.size());
        const std::filesystem::path candidate = std::filesystem::path(dirs.substr(at, end - at)) / name;
        if (!candidate.parent_path().empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
        at = end + 1;
    }
    return std::nullopt;
}

SandboxResult run_sandboxed(const SandboxCommand& command) {
    SandboxResult result;
    const auto bwrap = find_on_path("bwrap");
    if (!bwrap) {
        result.error = "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)";
        return result;
    }
    const auto args = bwrap_arguments(*bwrap, command);
    const double cpu_before = children_cpu_seconds();
    const pid_t pid = ::fork();
    if (pid < 0) {
        result.error = fmt::format("cannot start a process: {}", std::strerror(errno));
        return result;
    }
    if (pid == 0) exec_child(args, command);
    const auto start = std::chrono::steady_clock::now();
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) {
            result.error = fmt::format("lost the sandbox process: {}", std::strerror(errno));
            return result;
        }
        const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
        if (waited.count() > command.limits.wall_seconds) {
            // bwrap's death takes the sandbox with it (--die-with-parent, and its PID namespace)
            ::kill(-pid, SIGKILL);
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            result.wall_timeout = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    result.cpu_seconds = children_cpu_seconds() - cpu_before;
    if (result.wall_timeout) {
        result.ran = true;
        result.signal = SIGKILL;
        return result;
    }
    if (WIFSIGNALED(status)) {  // bwrap itself died (SIGXCPU of its own would be ours)
        result.ran = true;
        result.signal = WTERMSIG(status);
        return result;
    }
    const int code = WEXITSTATUS(status);
    // bwrap's own failures (no user namespaces, a missing path) exit 1 with "bwrap: ..." on stderr;
    // 126 is our child failing to open its output files, 127 bwrap not starting at all
    if (code == 1 || code == 126 || code == 127) {
        std::string message;
        try {
            message = read_file_bytes(command.stderr_file, "sandbox messages", 4096);
        } catch (const std::exception&) {
        }
        while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
        if (message.rfind("bwrap:", 0) == 0 || code == 126) {
            result.error = message.empty() ? "bwrap could not start" : printable_utf8(message);
            return result;
        }
    }
    result.ran = true;
    // bwrap passes on a signal that ended the command as 128 + the signal's number
    if (code > 128 && code <= 128 + 64) result.signal = code - 128;
    else result.exit_code = code;
    return result;
}

std::optional<std::string> sandbox_unavailable() {
    if (!find_on_path("bwrap")) return std::string("bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)");
    char pattern[] = "/tmp/attn-sandbox-probe.XXXXXX";
    const char* dir = ::mkdtemp(pattern);
    if (!dir) return fmt::format("cannot create a directory in /tmp: {}", std::strerror(errno));
    SandboxCommand probe;
    probe.writable = dir;
    probe.stdout_file = probe.writable / "out";
    probe.stderr_file = probe.writable / "err";
    probe.argv = {"/usr/bin/true"};
    probe.limits.wall_seconds = 20;
    const SandboxResult r = run_sandboxed(probe);
    std::error_code ec;
    std::filesystem::remove_all(probe.writable, ec);
    if (!r.ran) return fmt::format("bwrap cannot create a sandbox here ({})", r.error);
    if (r.exit_code != 0)
        return fmt::format("bwrap cannot create a sandbox here (a trivial command exited {})", r.exit_code);
    return std::nullopt;
}

std::string signal_description(int signal) {
    const char* name = signal == SIGSEGV   ? "SIGSEGV"
                       : signal == SIGABRT ? "SIGABRT"
                       : signal == SIGFPE  ? "SIGFPE"
                       : signal == SIGBUS  ? "SIGBUS"
                       : signal == SIGILL  ? "SIGILL"
                       : signal == SIGKILL ? "SIGKILL"
                       : signal == SIGXCPU ? "SIGXCPU"
                       : signal == SIGXFSZ ? "SIGXFSZ"
                                           : nullptr;
    const char* text = ::strsignal(signal);
    return name ? fmt::format("signal {} ({}: {})", signal, name, text ? text : "")
                : fmt::format("signal {} ({})", signal, text ? text : "");
}

}  // namespace attn
