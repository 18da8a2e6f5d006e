// The sandbox of `attn grade --sources` (src/cli/sandbox.cpp) against what a hostile student's
// code tries: busy processes, fork bombs, memory, output, disk, the caller's environment and
// files, links planted for attn to follow, the network. Skipped, saying why, where no sandbox can
// be created here (bwrap missing, or no user namespaces).
#include "cli/sandbox.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test_sandbox {

using namespace attn;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Whether a sandbox can be made here (asked once); a WARN says why not.
bool sandbox_here() {
    static const std::optional<std::string> why = sandbox_unavailable();
    if (why) WARN("skipped: no sandbox can be created here (" << *why << ")");
    return !why;
}

// Whether the sandbox's `what` ("processes", "memory") is limited by a cgroup here.
bool cgroup_for(const std::string& what) {
    const std::string a = sandbox_accounting();
    return a == "cgroup v1" || a == "cgroup v2" || a.find(what + " by cgroup") != std::string::npos;
}

// A temporary folder, the sandbox's host user's when there is one; removed at the end.
struct Folder {
    fs::path dir;
    explicit Folder(bool for_sandbox = true) {
        std::string pattern = (fs::temp_directory_path() / "attn-test-sandbox.XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        dir = pattern;
        const auto user = sandbox_host_user();
        if (for_sandbox && user) REQUIRE(::chown(dir.c_str(), user->uid, user->gid) == 0);
        if (!for_sandbox) fs::permissions(dir, fs::perms(0755));
    }
    ~Folder() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    Folder(const Folder&) = delete;
    Folder& operator=(const Folder&) = delete;
};

SandboxCommand shell(const std::string& script, const Folder& folder, const std::string& name = "sh") {
    SandboxCommand c;
    c.argv = {"/usr/bin/sh", "-c", script, name};
    c.writable = folder.dir;
    c.limits.cpu_seconds = 2;
    c.limits.wall_seconds = 20;
    return c;
}

std::string read_whole(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The processes whose command line holds `marker` (other than this test program).
std::vector<pid_t> processes_with(const std::string& marker) {
    std::vector<pid_t> found;
    DIR* proc = ::opendir("/proc");
    REQUIRE(proc != nullptr);
    while (const dirent* e = ::readdir(proc)) {
        const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
        if (pid <= 0 || pid == ::getpid()) continue;
        std::string line = read_whole(fs::path("/proc") / e->d_name / "cmdline");
        for (char& ch : line)
            if (ch == '\0') ch = ' ';
        if (line.find(marker) != std::string::npos) found.push_back(pid);
    }
    ::closedir(proc);
    return found;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string marker(const std::string& what) { return "attn-test-" + what + "-" + std::to_string(::getpid()); }

}  // namespace

TEST_CASE("sandbox: the CPU time of every process together is limited", "[sandbox]") {
    if (!sandbox_here()) return;
    INFO("accounting: " << sandbox_accounting());
    Folder folder;
    const auto start = Clock::now();
    const SandboxResult r =
        run_sandboxed(shell("for i in 1 2 3 4; do (while :; do :; done) & done; wait", folder));
    const double wall = seconds_since(start);
    INFO("cpu " << r.cpu_seconds << " s, wall " << wall << " s, error " << r.error);
    CHECK(r.ran);
    CHECK(r.exceeded == SandboxLimit::cpu);
    CHECK(r.cpu_seconds >= 1.9);
    CHECK(r.cpu_seconds < 4.5);  // four processes each under a per-process limit would reach 12 s
}

TEST_CASE("sandbox: a process that ignores SIGXCPU ends as over the CPU limit, not as a crash", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    const SandboxResult r = run_sandboxed(shell("trap '' XCPU; while :; do :; done", folder));
    INFO("signal " << r.signal << ", cpu " << r.cpu_seconds << ", error " << r.error);
    CHECK(r.ran);
    CHECK(r.exceeded == SandboxLimit::cpu);
    CHECK(r.cpu_seconds >= 1.5);
}

TEST_CASE("sandbox: a fork bomb ends, and nothing of it survives", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    const std::string name = marker("bomb");
    SandboxCommand c = shell("f() { f & f & wait; }; f", folder, name);
    c.limits.processes = 32;
    const SandboxResult r = run_sandboxed(c);
    INFO("accounting: " << sandbox_accounting() << "; error " << r.error << "; cpu " << r.cpu_seconds << "; exit "
                         << r.exit_code << "; signal " << r.signal);
    CHECK(r.ran);
    if (cgroup_for("processes")) CHECK(r.exceeded == SandboxLimit::processes);
    else CHECK((r.exceeded == SandboxLimit::processes || r.exceeded == SandboxLimit::cpu));
    CHECK(processes_with(name).empty());
}

TEST_CASE("sandbox: the memory of all its processes together is limited", "[sandbox]") {
    if (!sandbox_here()) return;
    if (!cgroup_for("memory")) {
        WARN("skipped: no memory cgroup here (" << sandbox_accounting() << ")");
        return;
    }
    Folder folder;
    SandboxCommand c = shell("for i in 1 2 3; do /usr/bin/python3 -c 'import time; b = b\"x\" * (300 << 20); "
                             "time.sleep(5)' & done; wait",
                             folder);
    c.limits.memory_bytes = std::size_t{512} << 20;
    c.limits.cpu_seconds = 10;
    const auto start = Clock::now();
    const SandboxResult r = run_sandboxed(c);
    INFO("error " << r.error << "; err " << r.err);
    CHECK(r.ran);
    CHECK(r.exceeded == SandboxLimit::memory);
    CHECK(seconds_since(start) < 20);  // killed, not left to the wall limit (no timing: the machine may be loaded)
}

TEST_CASE("sandbox: output beyond its cap ends the command", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    SandboxCommand c = shell("head -c 50000000 /dev/zero", folder);
    c.limits.output_bytes = std::size_t{1} << 20;
    const SandboxResult r = run_sandboxed(c);
    CHECK(r.ran);
    CHECK(r.exceeded == SandboxLimit::output);
    CHECK(r.out.size() <= (std::size_t{1} << 20));
    CHECK(r.out.size() > 0);
}

TEST_CASE("sandbox: the writable folder and /tmp are limited in size", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    SandboxCommand c = shell("for i in $(seq 30); do dd if=/dev/zero of=f$i bs=1M count=10 status=none || exit 9; done",
                             folder);
    c.limits.disk_bytes = std::size_t{64} << 20;
    c.limits.cpu_seconds = 10;
    const SandboxResult r = run_sandboxed(c);
    INFO("exit " << r.exit_code << ", error " << r.error << ", err " << r.err);
    CHECK(r.ran);
    CHECK(r.exceeded == SandboxLimit::disk);

    Folder other;
    SandboxCommand tmp = shell("dd if=/dev/zero of=/tmp/big bs=1M count=100 status=none", other);
    tmp.limits.disk_bytes = std::size_t{64} << 20;
    tmp.limits.file_bytes = std::size_t{1} << 30;  // the size of /tmp stops it, not the file size limit
    const SandboxResult t = run_sandboxed(tmp);
    CHECK(t.ran);
    CHECK(t.exit_code != 0);
    CHECK_THAT(t.err, Catch::Contains("No space left on device"));
}

TEST_CASE("sandbox: a file beyond file_bytes ends the command", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    SandboxCommand c = shell("dd if=/dev/zero of=big bs=1M count=8 status=none", folder);
    c.limits.file_bytes = std::size_t{1} << 20;
    const SandboxResult r = run_sandboxed(c);
    CHECK(r.ran);
    CHECK(r.exceeded == SandboxLimit::file_size);
}

TEST_CASE("sandbox: the caller's environment does not reach the sandbox", "[sandbox]") {
    if (!sandbox_here()) return;
    REQUIRE(::setenv("ATTN_TEST_SECRET", "s3cr3t-of-the-teacher", 1) == 0);
    Folder folder;
    const SandboxResult r = run_sandboxed(shell("cat /proc/1/environ /proc/self/environ", folder));
    SandboxCommand env;
    env.argv = {"/usr/bin/env"};
    env.writable = folder.dir;
    const SandboxResult e = run_sandboxed(env);
    ::unsetenv("ATTN_TEST_SECRET");
    CHECK(r.ran);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("PATH=") != std::string::npos);  // the files were read
    CHECK(r.out.find("s3cr3t") == std::string::npos);
    CHECK(e.exit_code == 0);
    std::vector<std::string> names;
    std::istringstream lines(e.out);
    for (std::string line; std::getline(lines, line);) names.push_back(line.substr(0, line.find('=')));
    std::sort(names.begin(), names.end());
    // PWD is bwrap's own, set to the working directory
    CHECK(names == std::vector<std::string>{"HOME", "LC_ALL", "NO_COLOR", "PATH", "PWD"});
}

TEST_CASE("sandbox: run by root, it is the host's nobody and cannot read root's files", "[sandbox]") {
    if (!sandbox_here()) return;
    if (!sandbox_host_user()) {
        WARN("skipped: not root, so the sandbox runs as the caller");
        return;
    }
    Folder folder;
    Folder decoys(false);
    const fs::path secret = decoys.dir / "secret.txt";
    std::ofstream(secret) << "top-secret-of-root\n";
    fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
    SandboxCommand c = shell("id -u; touch made; cat " + secret.string() + "; true", folder);
    c.read_only = {secret};
    const SandboxResult r = run_sandboxed(c);
    INFO("error " << r.error << "; err " << r.err);
    CHECK(r.ran);
    CHECK(r.out.find("top-secret") == std::string::npos);
    struct stat st {};
    REQUIRE(::stat((folder.dir / "made").c_str(), &st) == 0);
    CHECK(st.st_uid == 65534);
    CHECK(st.st_gid == 65534);
}

TEST_CASE("sandbox: links planted in the writable folder make attn write nowhere", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    Folder decoys(false);
    const fs::path decoy = decoys.dir / "precious.txt";
    std::ofstream(decoy) << "unchanged\n";
    std::string script;
    for (const char* name : {"out", "err", "stdout", "stderr", "report", "out.txt", "err.txt", "log"})
        script += "ln -s " + decoy.string() + " " + name + "; ";
    SandboxCommand c = shell(script + "echo to-stdout; echo to-stderr >&2; echo to-report >&3", folder);
    c.report_pipe = true;
    const SandboxResult r = run_sandboxed(c);
    CHECK(r.ran);
    CHECK(r.exit_code == 0);
    CHECK(r.out == "to-stdout\n");
    CHECK(r.err == "to-stderr\n");
    CHECK(r.report == "to-report\n");
    CHECK(read_whole(decoy) == "unchanged\n");
    CHECK(fs::is_symlink(folder.dir / "out"));
}

TEST_CASE("sandbox: the report pipe is file descriptor 3, and there is no other", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    const std::string others = "for i in $(seq 4 40); do [ -e /proc/$$/fd/$i ] && echo open $i; done; ";
    SandboxCommand c = shell(others + "echo hello >&3", folder);
    c.report_pipe = true;
    const SandboxResult r = run_sandboxed(c);
    CHECK(r.exit_code == 0);
    CHECK(r.report == "hello\n");
    CHECK(r.out == "");

    SandboxCommand without = shell(others + "[ -e /proc/$$/fd/3 ] && echo open 3; echo hello >&3", folder);
    const SandboxResult w = run_sandboxed(without);
    CHECK(w.ran);
    CHECK(w.exit_code != 0);
    CHECK(w.out == "");
    CHECK(w.report == "");
}

TEST_CASE("sandbox: no network, not even the host's loopback", "[sandbox]") {
    if (!sandbox_here()) return;
    // a listener on the host's 127.0.0.1, which the sandbox must not reach
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listener >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener, 4) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    const int port = ntohs(address.sin_port);
    Folder folder;
    for (const std::string host : {"127.0.0.1", "1.1.1.1"}) {
        SandboxCommand c;
        c.argv = {"/usr/bin/python3", "-c",
                  "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)", host,
                  host == "1.1.1.1" ? "53" : std::to_string(port)};
        c.writable = folder.dir;
        const SandboxResult r = run_sandboxed(c);
        INFO(host << ": " << r.err);
        CHECK(r.ran);
        CHECK(r.exit_code != 0);
    }
    ::close(listener);
}

TEST_CASE("sandbox: an interruption ends the sandbox at once", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    const std::string name = marker("interrupted");
    // in a process of its own: the flag set by the signal stays set for the rest of a process
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        catch_interruptions();
        std::thread interrupter([] {
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
            ::kill(::getpid(), SIGINT);
        });
        const auto start = Clock::now();
        const SandboxResult r = run_sandboxed(shell("sleep 30; true", folder, name));
        const double took = seconds_since(start);
        interrupter.join();
        const char verdict[3] = {r.interrupted ? 'i' : '-', took < 20 ? 'q' : '-',
                                 interruption_signal() == SIGINT ? 's' : '-'};
        if (::write(pipe_fds[1], verdict, sizeof verdict) != sizeof verdict) ::_exit(2);
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    char verdict[4] = {};
    const ssize_t n = ::read(pipe_fds[0], verdict, 3);
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(n == 3);
    CHECK(std::string(verdict) == "iqs");
    CHECK(processes_with(name).empty());
}

TEST_CASE("sandbox: the wall-clock limit", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    SandboxCommand c = shell("sleep 30", folder);
    c.limits.wall_seconds = 1;
    const auto start = Clock::now();
    const SandboxResult r = run_sandboxed(c);
    CHECK(r.ran);
    CHECK(r.exceeded == SandboxLimit::wall);
    CHECK(seconds_since(start) < 20);  // not the command's 30 s
}

// Issue 40, 5g: bwrap's "Can't fork" is the process limit of the sandbox's user (as root, nobody,
// shared by every grader), not user namespaces that may be off.
TEST_CASE("sandbox: bwrap's Can't fork is said as the sandbox user's process limit", "[sandbox]") {
    const std::string fork = bwrap_failure("bwrap: Can't fork: Resource temporarily unavailable");
    CHECK_THAT(fork, Catch::StartsWith("the process limit of the sandbox's user was reached (bwrap: Can't fork: "
                                       "Resource temporarily unavailable)"));
    CHECK_THAT(fork, Catch::Contains("run by root") && Catch::Contains("nobody") && Catch::Contains("--jobs"));
    CHECK_THAT(fork, !Catch::Contains("namespace"));
    CHECK(bwrap_could_not_fork(fork));
    const std::string other = "bwrap: Can't find source path /nonexistent/attn-test-path: No such file or directory";
    CHECK(bwrap_failure(other) == other);
    CHECK_FALSE(bwrap_could_not_fork(other));
}

TEST_CASE("sandbox: bwrap's own failure is said, not run", "[sandbox]") {
    if (!sandbox_here()) return;
    Folder folder;
    SandboxCommand c = shell("true", folder);
    c.read_only = {"/nonexistent/attn-test-path"};
    const SandboxResult r = run_sandboxed(c);
    CHECK_FALSE(r.ran);
    CHECK_THAT(r.error, Catch::Contains("bwrap:"));
    CHECK(limit_name(SandboxLimit::disk) == "the disk limit");
}

}  // namespace test_sandbox
