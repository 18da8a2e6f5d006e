#include "cli/sandbox.hpp"

#include "core/golden.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attn {

namespace {
// A name of its own: this file is compiled in one unity file with the rest of the command line.
namespace sb {

using Clock = std::chrono::steady_clock;

constexpr unsigned nobody = 65534;
constexpr std::size_t max_disk_entries = 100000;  // more files than this in the writable folder: over the disk limit
constexpr int max_disk_depth = 64;                // and so is a deeper tree (each level holds a descriptor)
constexpr int error_fd = 4;                       // where the child reports a failure before bwrap runs

volatile std::sig_atomic_t pending_signal = 0;

void on_interruption(int signal) { pending_signal = signal; }

// A small file of /proc or /sys (never one the sandbox can write), read whole.
std::string read_text(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    std::string text;
    char buffer[4096];
    ssize_t n = 0;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0 && text.size() < (std::size_t{1} << 20))
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    return text;
}

bool write_text(const std::string& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
}

bool file_exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

// The number after `key` in a file of "key value" lines (cpu.stat, pids.events, memory.events,
// memory.oom_control), or -1.
long long keyed_value(const std::string& text, const std::string& key) {
    std::istringstream lines(text);
    std::string k;
    long long v = 0;
    while (lines >> k >> v)
        if (k == key) return v;
    return -1;
}

std::vector<pid_t> pids_in(const std::string& cgroup) {
    std::istringstream in(read_text(cgroup + "/cgroup.procs"));
    std::vector<pid_t> pids;
    for (long pid = 0; in >> pid;) pids.push_back(static_cast<pid_t>(pid));
    return pids;
}

// The cgroup hierarchies mounted here: where each is mounted and what it holds.
struct Hierarchy {
    std::string root, point, options;  // the mount's root in the hierarchy, its mount point, its super options
    bool v2 = false;
};

std::vector<Hierarchy> cgroup_hierarchies() {
    std::vector<Hierarchy> found;
    std::istringstream lines(read_text("/proc/self/mountinfo"));
    for (std::string line; std::getline(lines, line);) {
        // id parent major:minor root mount-point options [optional...] - fstype source super-options
        std::istringstream f(line);
        std::string id, parent, device, root, point, options, word, fstype, source, super;
        f >> id >> parent >> device >> root >> point >> options;
        while (f >> word && word != "-") {
        }
        f >> fstype >> source >> super;
        if (fstype == "cgroup2" || fstype == "cgroup") found.push_back({root, point, super, fstype == "cgroup2"});
    }
    return found;
}

// Our own cgroup in each hierarchy, from /proc/self/cgroup: controller -> path ("" for cgroup v2).
std::map<std::string, std::string> own_cgroups() {
    std::map<std::string, std::string> own;
    std::istringstream lines(read_text("/proc/self/cgroup"));
    for (std::string line; std::getline(lines, line);) {
        const std::size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (controllers.empty()) own[""] = path;
        std::istringstream names(controllers);
        for (std::string name; std::getline(names, name, ',');) own[name] = path;
    }
    return own;
}

// The folder of our own cgroup in a hierarchy (the path is relative to the hierarchy's root, the
// mount may show only a part of it).
std::string own_folder(const Hierarchy& h, const std::string& path) {
    std::string rest = path;
    if (h.root != "/" && rest.compare(0, h.root.size(), h.root) == 0) rest = rest.substr(h.root.size());
    return h.point + rest;
}

bool has_option(const std::string& options, const std::string& name) {
    std::istringstream in(options);
    for (std::string o; std::getline(in, o, ',');)
        if (o == name) return true;
    return false;
}

// A fresh child cgroup named `name` under `parent`, or "" when none can be made there.
std::string make_cgroup(const std::string& parent, const std::string& name) {
    const std::string dir = parent + "/" + name;
    if (::mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno == EEXIST && ::rmdir(dir.c_str()) == 0 && ::mkdir(dir.c_str(), 0755) == 0) return dir;  // a leftover
    return "";
}

// The cgroups of one sandbox: cgroup v2 where it has the file needed, else cgroup v1's cpuacct,
// pids and memory hierarchies (a hybrid machine mixes them). Each is a fresh child of our own
// cgroup, removed at the end.
class Cgroups {
public:
    Cgroups(const SandboxLimits& limits, const std::string& name) {
        const auto hierarchies = cgroup_hierarchies();
        const auto own = own_cgroups();
        for (const auto& h : hierarchies)
            if (h.v2 && own.count("") && v2_.empty()) v2_ = make_cgroup(own_folder(h, own.at("")), name);
        if (!v2_.empty() && !file_exists(v2_ + "/cpu.stat")) remove(v2_);
        const auto v1 = [&](const std::string& controller) {
            for (const auto& h : hierarchies)
                if (!h.v2 && has_option(h.options, controller) && own.count(controller))
                    return make_cgroup(own_folder(h, own.at(controller)), name);
            return std::string();
        };
        if (v2_.empty()) cpuacct_ = v1("cpuacct");
        set_up_pids(limits, v1);
        set_up_memory(limits, v1);
    }
    ~Cgroups() { destroy(); }
    Cgroups(const Cgroups&) = delete;
    Cgroups& operator=(const Cgroups&) = delete;

    // "v2", "v1" or "" for each of CPU time, processes and memory.
    std::string cpu_kind() const { return !v2_.empty() ? "v2" : !cpuacct_.empty() ? "v1" : ""; }
    std::string pids_kind() const { return pids_.empty() ? "" : pids_ == v2_ ? "v2" : "v1"; }
    std::string memory_kind() const { return memory_.empty() ? "" : memory_ == v2_ ? "v2" : "v1"; }

    std::vector<std::string> folders() const {
        std::vector<std::string> all;
        for (const auto* d : {&v2_, &cpuacct_, &pids_, &memory_})
            if (!d->empty() && std::find(all.begin(), all.end(), *d) == all.end()) all.push_back(*d);
        return all;
    }

    // The CPU seconds of everything in the sandbox, or -1 without a cgroup for it.
    double cpu_seconds() const {
        if (!v2_.empty()) return static_cast<double>(keyed_value(read_text(v2_ + "/cpu.stat"), "usage_usec")) * 1e-6;
        if (!cpuacct_.empty()) return std::strtod(read_text(cpuacct_ + "/cpuacct.usage").c_str(), nullptr) * 1e-9;
        return -1;
    }

    // The kernel killed a process of the sandbox for its memory limit.
    bool memory_exhausted() const {
        if (memory_.empty()) return false;
        if (memory_ == v2_) return keyed_value(read_text(memory_ + "/memory.events"), "oom_kill") > 0;
        return keyed_value(read_text(memory_ + "/memory.oom_control"), "oom_kill") > 0;
    }

    // A fork or clone of the sandbox failed at the process limit.
    bool processes_exhausted() const {
        return !pids_.empty() && keyed_value(read_text(pids_ + "/pids.events"), "max") > 0;
    }

    // Every process of the sandbox killed: cgroup v2's cgroup.kill where there is one (it cannot
    // miss a process forked meanwhile), and a SIGKILL to each process listed.
    void kill_all() const {
        if (!v2_.empty() && file_exists(v2_ + "/cgroup.kill")) write_text(v2_ + "/cgroup.kill", "1");
        for (const auto& d : folders())
            for (pid_t pid : pids_in(d)) ::kill(pid, SIGKILL);
    }

    bool empty() const {
        for (const auto& d : folders())
            if (!pids_in(d).empty()) return false;
        return true;
    }

    // Kills what is left and removes the cgroups, retrying for a while (a killed process leaves
    // its cgroup a moment after the signal).
    void destroy() {
        const auto deadline = Clock::now() + std::chrono::seconds(3);
        for (;;) {
            kill_all();
            for (const auto& d : folders())
                if (::rmdir(d.c_str()) == 0 || errno == ENOENT) forget(d);
            if (folders().empty() || Clock::now() > deadline) break;
            ::usleep(5000);
        }
    }

private:
    template <class V1>
    void set_up_pids(const SandboxLimits& limits, const V1& v1) {
        // two more for bwrap's own processes (its parent and the namespace's init)
        const std::string max = std::to_string(limits.processes + 2);
        if (!v2_.empty() && file_exists(v2_ + "/pids.max") && write_text(v2_ + "/pids.max", max)) {
            pids_ = v2_;
            return;
        }
        pids_ = v1("pids");
        if (!pids_.empty() && !write_text(pids_ + "/pids.max", max)) remove(pids_);
    }

    template <class V1>
    void set_up_memory(const SandboxLimits& limits, const V1& v1) {
        const std::string max = std::to_string(limits.memory_bytes);
        if (!v2_.empty() && file_exists(v2_ + "/memory.max") && write_text(v2_ + "/memory.max", max)) {
            write_text(v2_ + "/memory.swap.max", "0");  // where swap is accounted: none
            memory_ = v2_;
            return;
        }
        memory_ = v1("memory");
        if (memory_.empty()) return;
        if (!write_text(memory_ + "/memory.limit_in_bytes", max)) {
            remove(memory_);
            return;
        }
        write_text(memory_ + "/memory.memsw.limit_in_bytes", max);  // memory and swap together, where accounted
    }

    void remove(std::string& d) {
        const std::string gone = d;
        ::rmdir(gone.c_str());
        forget(gone);
    }

    void forget(const std::string& gone) {
        for (auto* d : {&v2_, &cpuacct_, &pids_, &memory_})
            if (*d == gone) d->clear();
    }

    std::string v2_, cpuacct_, pids_, memory_;
};

std::string cgroup_name() {
    static std::atomic<unsigned> count{0};
    return fmt::format("attn-sandbox-{}-{}", ::getpid(), count++);
}

// Without a cgroup for CPU time: the CPU time of bwrap and every process below it, summed from
// /proc at each poll. Each process counts with the largest time seen for it (its children's
// reaped time included), so a process that lives and dies between two polls escapes the sum
// unless its parent reaps it, and one reaped by a process seen is counted twice (the sum errs on
// the side of the limit). RLIMIT_CPU still bounds each process.
class ProcessTreeCpu {
public:
    double sample(pid_t root) {
        std::map<pid_t, std::vector<pid_t>> children;
        std::map<pid_t, double> seconds;
        read_processes(children, seconds);
        std::vector<pid_t> todo = {root};
        tree_.clear();
        while (!todo.empty()) {
            const pid_t pid = todo.back();
            todo.pop_back();
            tree_.push_back(pid);
            if (seconds.count(pid)) largest_[pid] = std::max(largest_[pid], seconds[pid]);
            for (pid_t c : children[pid]) todo.push_back(c);
        }
        double total = 0;
        for (const auto& [pid, s] : largest_) total += s;
        return total;
    }
    const std::vector<pid_t>& last_tree() const { return tree_; }

private:
    static void read_processes(std::map<pid_t, std::vector<pid_t>>& children, std::map<pid_t, double>& seconds) {
        static const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
        DIR* proc = ::opendir("/proc");
        if (!proc) return;
        while (const dirent* e = ::readdir(proc)) {
            const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
            if (pid <= 0) continue;
            const std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
            const std::size_t close = stat.rfind(')');  // the name may hold spaces and parentheses
            if (close == std::string::npos) continue;
            std::istringstream f(stat.substr(close + 2));
            std::string field;
            long long v[16] = {};
            f >> field;  // state
            for (int i = 0; i < 14 && f >> v[i]; ++i) {
            }
            // after the state: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
            children[static_cast<pid_t>(v[0])].push_back(pid);
            seconds[pid] = static_cast<double>(v[10] + v[11] + v[12] + v[13]) / tick;
        }
        ::closedir(proc);
    }

    std::map<pid_t, double> largest_;
    std::vector<pid_t> tree_;
};

// The space the files of a folder take (st_blocks), never following a link. `too_many` when the
// walk stopped at max_disk_entries or max_disk_depth: that counts as over the limit.
struct DiskUse {
    std::uintmax_t bytes = 0;
    std::size_t entries = 0;
    bool too_many = false;
};

void add_folder(int folder, DiskUse& use, int depth) {
    DIR* d = ::fdopendir(folder);
    if (!d) {
        ::close(folder);
        return;
    }
    while (const dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        if (++use.entries > max_disk_entries || depth > max_disk_depth) {
            use.too_many = true;
            break;
        }
        struct stat st {};
        if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        use.bytes += static_cast<std::uintmax_t>(st.st_blocks) * 512;
        if (!S_ISDIR(st.st_mode)) continue;
        const int sub = ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) add_folder(sub, use, depth + 1);
        if (use.too_many) break;
    }
    ::closedir(d);
}

DiskUse disk_use(const std::filesystem::path& folder) {
    DiskUse use;
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) add_folder(fd, use, 0);
    return use;
}

std::vector<std::string> bwrap_arguments(const std::filesystem::path& bwrap, const SandboxCommand& c) {
    const std::string home = c.writable.empty() ? "/tmp" : c.writable.string();
    std::vector<std::string> a = {bwrap.string(), "--unshare-all", "--unshare-user", "--die-with-parent",
                                  "--new-session", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin",
                                  "--setenv", "HOME", home, "--setenv", "LC_ALL", "C", "--setenv", "NO_COLOR", "1",
                                  // nobody inside, and no user namespace of its own to become root in
                                  "--uid", "65534", "--gid", "65534", "--disable-userns",
                                  "--ro-bind", "/usr", "/usr"};
    // the merged /usr of Debian: /bin, /lib and /lib64 are links into it
    for (const char* link : {"bin", "sbin", "lib", "lib64", "lib32", "libx32"}) {
        std::error_code ec;
        if (std::filesystem::exists(std::filesystem::path("/usr") / link, ec))
            a.insert(a.end(), {"--symlink", std::string("usr/") + link, std::string("/") + link});
    }
    a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--size", std::to_string(c.limits.disk_bytes), "--tmpfs", "/tmp"});
    for (const auto& p : c.read_only) a.insert(a.end(), {"--ro-bind", p.string(), p.string()});
    if (!c.writable.empty()) a.insert(a.end(), {"--bind", c.writable.string(), c.writable.string()});
    const std::filesystem::path workdir = !c.workdir.empty() ? c.workdir : !c.writable.empty() ? c.writable : "/";
    a.insert(a.end(), {"--chdir", workdir.string(), "--"});
    a.insert(a.end(), c.argv.begin(), c.argv.end());
    return a;
}

// What the child does between fork and exec, prepared beforehand: the parent may have threads,
// so the child makes async-signal-safe calls only (no allocation).
struct ChildPlan {
    std::vector<char*> argv, envp;
    int fds[4] = {-1, -1, -1, -1};   // to become 0, 1, 2 and 3 (-1: no report pipe)
    int error_pipe = -1;             // where a failure before bwrap runs is told (close-on-exec)
    std::vector<int> cgroup_procs;   // the cgroups' cgroup.procs, open for writing
    bool become_nobody = false;
    rlim_t cpu = 0, memory = 0, file = 0, processes = 0;
};

// The steps of the child that can fail, for the parent's message.
enum ChildStep : int { join_cgroup = 1, drop_identity, move_descriptors, exec_bwrap };

[[noreturn]] void child_failed(const ChildPlan& p, int step) {
    const int report[2] = {step, errno};
    if (::write(p.error_pipe, report, sizeof report) < 0) ::_exit(127);
    ::_exit(127);
}

void set_limit(int resource, rlim_t soft, rlim_t hard) {
    const rlimit r{soft, hard};
    ::setrlimit(resource, &r);
}

// Descriptors 0 to 3 from the plan, the error pipe at error_fd, everything else closed.
bool arrange_descriptors(ChildPlan& p) {
    int high[5];
    const int sources[5] = {p.fds[0], p.fds[1], p.fds[2], p.fds[3], p.error_pipe};
    for (int i = 0; i < 5; ++i)  // first out of the way of the targets (a source may be 0 to 4 itself)
        high[i] = sources[i] < 0 ? -1 : ::fcntl(sources[i], F_DUPFD_CLOEXEC, 16);
    for (int i = 0; i < 4; ++i) {
        if (high[i] >= 0 && ::dup2(high[i], i) < 0) return false;
        if (high[i] < 0) ::close(i);
    }
    if (high[4] < 0 || ::dup3(high[4], error_fd, O_CLOEXEC) < 0) return false;
    p.error_pipe = error_fd;
    if (::close_range(error_fd + 1, ~0U, 0) != 0) {
        rlimit r{};
        ::getrlimit(RLIMIT_NOFILE, &r);
        for (rlim_t fd = error_fd + 1; fd < std::min<rlim_t>(r.rlim_cur, 1 << 20); ++fd) ::close(static_cast<int>(fd));
    }
    return true;
}

[[noreturn]] void run_child(ChildPlan& p, const char* bwrap) {
    ::setpgid(0, 0);  // a process group of its own, killed as one
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    for (int s : {SIGPIPE, SIGXCPU, SIGXFSZ, SIGINT, SIGTERM}) ::sigaction(s, &fallback, nullptr);
    // into the cgroups while still allowed to (as root), so that all bwrap starts is counted there
    for (int fd : p.cgroup_procs) {
        char digits[24];
        char* end = digits + sizeof digits;
        char* at = end;
        for (long pid = ::getpid(); pid > 0; pid /= 10) *--at = static_cast<char>('0' + pid % 10);
        if (::write(fd, at, static_cast<std::size_t>(end - at)) < 0) child_failed(p, join_cgroup);
    }
    set_limit(RLIMIT_CPU, p.cpu, p.cpu + 1);  // a backstop: SIGXCPU, then SIGKILL a second later
    set_limit(RLIMIT_AS, p.memory, p.memory);
    set_limit(RLIMIT_FSIZE, p.file, p.file);
    set_limit(RLIMIT_CORE, 0, 0);
    if (p.become_nobody) {
        set_limit(RLIMIT_NPROC, p.processes, p.processes);
        if (::setgroups(0, nullptr) != 0 || ::setresgid(nobody, nobody, nobody) != 0 ||
            ::setresuid(nobody, nobody, nobody) != 0)
            child_failed(p, drop_identity);
    }
    if (!arrange_descriptors(p)) child_failed(p, move_descriptors);
    if (::chdir("/") != 0) child_failed(p, move_descriptors);
    ::execve(bwrap, p.argv.data(), p.envp.data());
    child_failed(p, exec_bwrap);
}

std::string child_step_text(int step) {
    switch (step) {
    case join_cgroup: return "cannot join the sandbox's cgroup";
    case drop_identity: return "cannot become the user nobody (65534)";
    case move_descriptors: return "cannot set up the sandbox's files";
    default: return "cannot start bwrap";
    }
}

// One read end of a pipe from the sandbox, read into `text` up to `cap` bytes. Its owner closes it.
struct Stream {
    int fd = -1;
    std::string* text = nullptr;
    bool open = true;   // no end of file yet
    bool over = false;  // more came than the cap
};

// Reads what the streams hold, waiting up to `wait_ms` for something; false when one went over its cap.
bool pump(std::vector<Stream>& streams, std::size_t cap, int wait_ms) {
    std::vector<pollfd> polled;
    for (const auto& s : streams)
        if (s.open) polled.push_back({s.fd, POLLIN, 0});
    if (polled.empty()) {
        ::usleep(static_cast<useconds_t>(wait_ms) * 1000);
        return true;
    }
    if (::poll(polled.data(), polled.size(), wait_ms) <= 0) return true;  // nothing, or a signal came
    bool fine = true;
    for (auto& s : streams) {
        if (!s.open) continue;
        char buffer[65536];
        const ssize_t n = ::read(s.fd, buffer, sizeof buffer);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            s.open = false;
        } else if (n > 0) {
            const std::size_t room = cap - std::min(cap, s.text->size());
            s.text->append(buffer, std::min(room, static_cast<std::size_t>(n)));
            if (static_cast<std::size_t>(n) > room) s.over = true;
            fine = fine && !s.over;
        }
    }
    return fine;
}

bool streams_open(const std::vector<Stream>& streams) {
    return std::any_of(streams.begin(), streams.end(), [](const Stream& s) { return s.open; });
}

// A pipe whose both ends close on exec (the child moves its end into place); the parent's end
// does not block.
bool make_pipe(int& read_end, int& write_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read_end = fds[0];
    write_end = fds[1];
    ::fcntl(read_end, F_SETFL, O_NONBLOCK);
    return true;
}

// One run: the child started, the wait loop watching the limits, the result.
class Run {
public:
    explicit Run(const SandboxCommand& c) : c_(c), cgroups_(c.limits, cgroup_name()) {}
    ~Run() {
        for (int fd : owned_)
            if (fd >= 0) ::close(fd);
    }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    SandboxResult go(const std::filesystem::path& bwrap) {
        ChildPlan plan;
        std::vector<Stream> streams;
        if (!prepare(plan, streams)) return std::move(result_);
        const auto args = bwrap_arguments(bwrap, c_);
        for (const auto& s : args) plan.argv.push_back(const_cast<char*>(s.c_str()));
        plan.argv.push_back(nullptr);
        // bwrap's own init (pid 1 inside) keeps bwrap's environment: so it gets a fixed one too
        static const char* const environment[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", nullptr};
        for (const char* e : environment) plan.envp.push_back(const_cast<char*>(e));
        pid_ = ::fork();
        if (pid_ < 0) {
            result_.error = fmt::format("cannot start a process: {}", std::strerror(errno));
            return std::move(result_);
        }
        if (pid_ == 0) run_child(plan, args[0].c_str());
        for (int fd : {plan.fds[0], plan.fds[1], plan.fds[2], plan.fds[3], plan.error_pipe}) close_owned(fd);
        for (int fd : plan.cgroup_procs) close_owned(fd);
        watch(streams);
        finish();
        return std::move(result_);
    }

private:
    bool prepare(ChildPlan& plan, std::vector<Stream>& streams) {
        plan.fds[0] = own(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (plan.fds[0] < 0) return fail(fmt::format("cannot open /dev/null: {}", std::strerror(errno)));
        std::string* texts[3] = {&result_.out, &result_.err, &result_.report};
        for (int i = 1; i <= (c_.report_pipe ? 3 : 2); ++i) {
            int r = -1, w = -1;
            if (!make_pipe(r, w)) return fail(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
            plan.fds[i] = own(w);
            streams.push_back({own(r), texts[i - 1]});
        }
        if (!make_pipe(error_read_, plan.error_pipe))
            return fail(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
        own(error_read_);
        own(plan.error_pipe);
        for (const auto& d : cgroups_.folders()) {
            const int fd = own(::open((d + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
            if (fd < 0) return fail(fmt::format("cannot open {}/cgroup.procs: {}", d, std::strerror(errno)));
            plan.cgroup_procs.push_back(fd);
        }
        const SandboxLimits& l = c_.limits;
        plan.cpu = static_cast<rlim_t>(std::ceil(std::max(0.0, l.cpu_seconds))) + 1;
        plan.memory = l.memory_bytes;
        plan.file = l.file_bytes;
        // RLIMIT_NPROC counts every process of the user, other sandboxes' too: with a pids cgroup it
        // is only a backstop, so that the cgroup's limit is the one a fork bomb meets (and is told)
        plan.processes = cgroups_.pids_kind().empty() ? l.processes + 2 : 2 * (l.processes + 2);
        plan.become_nobody = ::geteuid() == 0;
        return true;
    }

    // The wait loop: the pipes read, the limits watched every ~10 ms (the disk every ~100 ms),
    // until bwrap has ended and its pipes are closed.
    void watch(std::vector<Stream>& streams) {
        const auto start = Clock::now();
        auto next_disk = start;
        std::optional<Clock::time_point> reaped;
        while (!reaped || streams_open(streams)) {
            if (!pump(streams, c_.limits.output_bytes, 10)) stop(SandboxLimit::output);
            if (!reaped) {
                const pid_t done = ::waitpid(pid_, &status_, WNOHANG);
                if (done == pid_) reaped = Clock::now();
            }
            const auto now = Clock::now();
            if (reaped) {
                // a process still holding a pipe after bwrap ended (it cannot outlive the PID
                // namespace, but may be dying): give it a moment, then kill everything left
                if (now - *reaped > std::chrono::seconds(1)) kill_sandbox();
                if (now - *reaped > std::chrono::seconds(2)) break;
                continue;
            }
            if (interruption_requested()) {
                result_.interrupted = true;
                kill_sandbox();
            }
            check_limits(now - start);
            if (now >= next_disk) {
                check_disk();
                next_disk = now + std::chrono::milliseconds(100);
            }
            if (killing_) kill_sandbox();  // again: a fork may have raced the last kill
        }
    }

    void check_limits(std::chrono::duration<double> waited) {
        if (measured_cpu() >= c_.limits.cpu_seconds) stop(SandboxLimit::cpu);
        if (cgroups_.memory_exhausted()) stop(SandboxLimit::memory);
        if (cgroups_.processes_exhausted()) stop(SandboxLimit::processes);
        if (waited.count() >= c_.limits.wall_seconds) stop(SandboxLimit::wall);
    }

    void check_disk() {
        if (c_.writable.empty()) return;
        const DiskUse use = disk_use(c_.writable);
        if (use.too_many || use.bytes > c_.limits.disk_bytes) stop(SandboxLimit::disk);
    }

    double measured_cpu() {
        const double in_cgroup = cgroups_.cpu_seconds();
        if (in_cgroup >= 0) return cpu_ = in_cgroup;
        if (pid_ > 0) cpu_ = std::max(cpu_, tree_.sample(pid_));
        return cpu_;
    }

    void stop(SandboxLimit limit) {
        if (result_.exceeded == SandboxLimit::none && !result_.interrupted) result_.exceeded = limit;
        kill_sandbox();
    }

    // bwrap's death ends the sandbox (--die-with-parent and the PID namespace); the cgroup and
    // the process group make sure of it.
    void kill_sandbox() {
        killing_ = true;
        cgroups_.kill_all();
        if (cgroups_.cpu_kind().empty())
            for (pid_t pid : tree_.last_tree())
                if (pid != pid_) ::kill(pid, SIGKILL);
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
    }

    // Without a cgroup: the processes seen last are killed and waited for (the kernel ends the
    // PID namespace's processes when its init dies, a many-process one takes a moment).
    void wait_for_tree() {
        const auto deadline = Clock::now() + std::chrono::seconds(3);
        for (;;) {
            bool alive = false;
            for (pid_t pid : tree_.last_tree()) {
                const std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
                const std::size_t close = stat.rfind(')');
                if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z') continue;
                ::kill(pid, SIGKILL);
                alive = true;
            }
            if (!alive || Clock::now() > deadline) return;
            ::usleep(5000);
        }
    }

    void finish() {
        measured_cpu();
        result_.cpu_seconds = cpu_;
        if (result_.exceeded == SandboxLimit::none && !result_.interrupted) check_disk();
        const bool out_of_memory = cgroups_.memory_exhausted(), out_of_processes = cgroups_.processes_exhausted();
        cgroups_.destroy();
        if (cgroups_.cpu_kind().empty()) wait_for_tree();
        int report[2] = {0, 0};
        if (::read(error_read_, report, sizeof report) == static_cast<ssize_t>(sizeof report)) {
            result_.error = fmt::format("{}: {}", child_step_text(report[0]), std::strerror(report[1]));
            return;
        }
        if (WIFEXITED(status_)) {
            const int code = WEXITSTATUS(status_);
            // bwrap's own failures (no user namespace, a path to bind missing) exit 1 with "bwrap: ..."
            if (code == 1 && !killing_ && result_.err.rfind("bwrap:", 0) == 0) {
                std::string message = result_.err.substr(0, 300);
                while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
                result_.error = bwrap_failure(printable_utf8(message));
                return;
            }
            // bwrap passes on a signal that ended the command as 128 + its number
            if (code > 128 && code <= 128 + 64) result_.signal = code - 128;
            else result_.exit_code = code;
        } else if (WIFSIGNALED(status_)) {
            result_.signal = WTERMSIG(status_);
        }
        result_.ran = true;
        classify(out_of_memory, out_of_processes);
    }

    // The limit that ended the command when the wait loop did not see it first.
    void classify(bool out_of_memory, bool out_of_processes) {
        if (result_.exceeded != SandboxLimit::none || result_.interrupted) return;
        const bool failed = result_.signal != 0 || result_.exit_code != 0;
        // a process that ignores SIGXCPU is killed at the hard limit: its CPU time says why
        if (result_.signal == SIGXCPU || (result_.signal == SIGKILL && cpu_ >= c_.limits.cpu_seconds - 0.5))
            result_.exceeded = SandboxLimit::cpu;
        else if (result_.signal == SIGXFSZ)
            result_.exceeded = SandboxLimit::file_size;
        else if (out_of_memory && failed)
            result_.exceeded = SandboxLimit::memory;
        else if (out_of_processes && failed)
            result_.exceeded = SandboxLimit::processes;
    }

    bool fail(std::string why) {
        result_.error = std::move(why);
        return false;
    }
    int own(int fd) {
        if (fd >= 0) owned_.push_back(fd);
        return fd;
    }
    void close_owned(int fd) {
        const auto at = std::find(owned_.begin(), owned_.end(), fd);
        if (fd < 0 || at == owned_.end()) return;
        ::close(fd);
        owned_.erase(at);
    }

    const SandboxCommand& c_;
    Cgroups cgroups_;
    ProcessTreeCpu tree_;
    SandboxResult result_;
    std::vector<int> owned_;
    int error_read_ = -1;
    pid_t pid_ = -1;
    int status_ = 0;
    bool killing_ = false;
    double cpu_ = 0;
};

}  // namespace sb
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

std::optional<HostUser> sandbox_host_user() {
    if (::geteuid() != 0) return std::nullopt;
    return HostUser{sb::nobody, sb::nobody};
}

SandboxResult run_sandboxed(const SandboxCommand& command) {
    SandboxResult result;
    if (interruption_requested()) {
        result.interrupted = true;
        result.error = "interrupted before the sandbox started";
        return result;
    }
    const auto bwrap = find_on_path("bwrap");
    if (!bwrap) {
        result.error = "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)";
        return result;
    }
    if (command.argv.empty()) {
        result.error = "no command to run";
        return result;
    }
    sb::Run run(command);
    return run.go(*bwrap);
}

bool bwrap_could_not_fork(const std::string& message) { return message.find("Can't fork") != std::string::npos; }

std::string bwrap_failure(const std::string& message) {
    if (!bwrap_could_not_fork(message)) return message;
    return fmt::format("the process limit of the sandbox's user was reached ({}): every process of that user "
                       "counts, and every attn grade run by root runs its sandboxes as the same user, nobody; "
                       "grade with fewer --jobs, or fewer graders at once",
                       message);
}

std::optional<std::string> sandbox_unavailable() {
    if (!find_on_path("bwrap")) return std::string("bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)");
    char pattern[] = "/tmp/attn-sandbox-probe.XXXXXX";
    const char* dir = ::mkdtemp(pattern);
    if (!dir) return fmt::format("cannot create a directory in /tmp: {}", std::strerror(errno));
    SandboxCommand probe;
    probe.writable = dir;
    probe.argv = {"/usr/bin/true"};
    probe.limits.wall_seconds = 20;
    const auto user = sandbox_host_user();
    std::optional<std::string> why;
    if (user && ::chown(dir, user->uid, user->gid) != 0)
        why = fmt::format("cannot give a directory to the user nobody: {}", std::strerror(errno));
    const std::string as = user ? " as the user nobody (65534)" : "";
    if (!why) {
        const SandboxResult r = run_sandboxed(probe);
        // inside a container or a chroot, user namespaces are often off (kernel.unprivileged_userns_clone,
        // user.max_user_namespaces) or bwrap may not mount /proc
        if (!r.ran && bwrap_could_not_fork(r.error))
            why = fmt::format("bwrap cannot create a sandbox here{} now: {}", as, r.error);
        else if (!r.ran)
            why = fmt::format("bwrap cannot create a sandbox here{} ({}); inside a container or a chroot, user "
                              "namespaces are often disabled: check user.max_user_namespaces, or grade on the "
                              "host",
                              as, r.error);
        else if (r.exit_code != 0)
            why = fmt::format("bwrap cannot create a sandbox here{} (a trivial command exited {}{}{})", as,
                              r.exit_code, r.err.empty() ? "" : ": ", printable_utf8(r.err.substr(0, 300)));
    }
    std::error_code ec;
    std::filesystem::remove_all(probe.writable, ec);
    return why;
}

std::string sandbox_accounting() {
    const sb::Cgroups probe(SandboxLimits{}, sb::cgroup_name());
    const std::string cpu = probe.cpu_kind(), pids = probe.pids_kind(), memory = probe.memory_kind();
    if (cpu.empty()) return "per process (no cgroup can be created here)";
    if (cpu == pids && cpu == memory) return "cgroup " + cpu;
    const auto part = [](const std::string& what, const std::string& kind) {
        return kind.empty() ? what + " per process" : what + " by cgroup " + kind;
    };
    return fmt::format("{}, {}, {}", part("CPU time", cpu), part("processes", pids), part("memory", memory));
}

void catch_interruptions() {
    struct sigaction action {};
    action.sa_handler = sb::on_interruption;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a blocking call returns, and the loop sees the flag
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
}

bool interruption_requested() { return sb::pending_signal != 0; }

int interruption_signal() { return static_cast<int>(sb::pending_signal); }

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

std::string limit_name(SandboxLimit limit) {
    switch (limit) {
    case SandboxLimit::none: return "no limit";
    case SandboxLimit::cpu: return "the CPU limit";
    case SandboxLimit::wall: return "the wall-clock limit";
    case SandboxLimit::memory: return "the memory limit";
    case SandboxLimit::processes: return "the process limit";
    case SandboxLimit::output: return "the output limit";
    case SandboxLimit::disk: return "the disk limit";
    case SandboxLimit::file_size: return "the file size limit";
    }
    return "a limit";
}

}  // namespace attn
