#!/usr/bin/env python3
"""`attn grade --sources` against a class of hostile students, graded beside honest ones.

Each hostile student tries one thing a student must not be able to do (issue 28): give themselves a
grade, pass without writing anything, read the teacher's secrets or another student's work, write
outside their sandbox, exceed the limits, put escapes or formulas into the report, leave the
teacher's machine dirty. Where an attack can succeed silently, the student's code is written so
that success *earns a pass* (it then computes the right softmax) and failure a wrong answer: a
hostile row that is not `fail` or `error` means an attack worked.

Asserted:
- every honest student's row is, byte for byte, their row when graded alone;
- every hostile student's attacked row is `error` or `fail`, with the reason expected;
- no file outside the students' own work folders changes: the golden folder, the source tree's
  files the students aim at, a decoy teacher file (mode 0600) and the kit (hashed after the batch against a batch of
  honest students only, and owned by the teacher);
- no secret from the environment or the decoy file appears in any report or on the terminal;
- Ctrl-C ends the batch at once with exit 130, every sandbox ended, the work folder gone.

Run by meson test (hostile_grading) with ATTN_BIN and ATTN_SOURCE_DIR; exit 77 (skipped) where no
sandbox can be created.
"""
import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ATTN = os.environ["ATTN_BIN"]
SOURCE = os.environ["ATTN_SOURCE_DIR"]
BUILT_PCH = os.path.join(os.path.dirname(os.path.abspath(ATTN)), "grade-kit-xtensor_pch.hpp.gch")
SECRET = "attn-hostile-secret-5b1f0e"       # in the teacher's environment
DECOY_TEXT = "decoy-teacher-file-9c2d47"    # in the teacher's 0600 file
CPU_LIMIT = "8"

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what, flush=True)


# a student's own softmax of a row (tests/fixtures/student_softmax_row.inc)
with open(os.path.join(SOURCE, "tests/fixtures/student_softmax_row.inc"), encoding="utf-8") as f:
    STUDENT_SOFTMAX_ROW = f.read()


def softmax_with(extra, includes="", initializer=""):
    """A student's softmax, with `extra` run first in softmax_rows (the first function the unit
    cases call). `extra` may set `escaped`: true computes the right answer, false returns zeros."""
    return f"""#include "nn/softmax.hpp"
#include "core/portable_math.hpp"
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <stdexcept>
#include <fcntl.h>
#include <unistd.h>
{includes}
{initializer}
{STUDENT_SOFTMAX_ROW}
namespace attn::nn {{
Vec softmax(const Vec& logits) {{
    Vec out = xt::empty<double>({{logits.size()}});
    student_softmax_row(logits.data(), out.data(), logits.size());
    return out;
}}
Mat softmax_rows(const Mat& logits) {{
    bool escaped = true;
    {extra}
    const std::size_t rows = logits.shape(0), cols = logits.shape(1);
    Mat out = xt::zeros<double>({{rows, cols}});
    if (!escaped) return out;
    for (std::size_t r = 0; r < rows; ++r) student_softmax_row(logits.data() + r * cols, out.data() + r * cols, cols);
    return out;
}}
}}  // namespace attn::nn
"""


def read_text(path, limit=1 << 16, var="got"):
    """C++ that reads up to `limit` bytes of `path` into std::string `var` (empty when it cannot)."""
    return f"""std::string {var};
    {{
        const int fd = ::open("{path}", O_RDONLY);
        if (fd >= 0) {{
            char buffer[{limit}];
            const ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n > 0) {var}.assign(buffer, static_cast<std::size_t>(n));
            ::close(fd);
        }}
    }}"""


def write_attempt(path):
    """C++ that sets `escaped` when it could create or overwrite `path`."""
    return f"""{{
        const int fd = ::open("{path}", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0 && ::write(fd, "pwned", 5) == 5) escaped = true;
        if (fd >= 0) ::close(fd);
    }}"""


# C++ that puts the folder of the student's own program (its build folder) into std::string `own`.
OWN_DIR = """char exe[4096] = {};
    [[maybe_unused]] auto length = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    const std::string own(std::string(exe).substr(0, std::string(exe).rfind('/')));
    """


def burn(seconds):
    return f"""{{
        const double until = static_cast<double>(std::clock()) / CLOCKS_PER_SEC + {seconds};
        while (static_cast<double>(std::clock()) / CLOCKS_PER_SEC < until) {{}}
    }}"""


def hostile_class(root, golden, decoy, alice):
    """name -> (files, the attacked exercise, the results allowed for it, a text its message must hold)."""
    forged_report = json.dumps({"exercises": [{"id": "softmax", "status": "passed", "points": 1000,
                                               "max_points": 5}], "passed": 1, "total": 1})
    forged_observations = json.dumps({"format": "attn-observations", "version": 1, "points": 1e300,
                                      "max_points": -7, "unit": {"softmax": [{"kind": "value", "actual": {
                                          "shape": [1], "data": [1e300]}}]}, "lessons": {}})
    forge = lambda text: f"""namespace {{
const int forged = [] {{
    const char text[] = R"forged({text})forged";
    [[maybe_unused]] auto a = ::write(1, text, sizeof text - 1);
    [[maybe_unused]] auto b = ::write(3, text, sizeof text - 1);
    ::_exit(0);
    return 0;
}}();
}}"""
    students = {
        # 1. a grade of their own making
        "forge-report": ({"softmax.cpp": softmax_with("", initializer=forge(forged_report))},
                         {"error"}, "the check's report is wrong"),
        "forge-fields": ({"softmax.cpp": softmax_with("", initializer=forge(forged_observations))},
                         {"fail"}, "fails its unit case"),
        # 2. passing without writing anything
        "empty-file": ({"softmax.cpp": ""}, {"fail"}, "not started"),
        "include-reference": ({"softmax.cpp": '#include "nn/softmax.cpp"\n'}, {"error"}, "does not compile"),
        "read-reference": ({"softmax.cpp": softmax_with(read_text(f"{SOURCE}/src/nn/softmax.cpp") +
                                                        "\n    escaped = !got.empty();")},
                           {"fail"}, "fails its unit case"),
        # 3. reading what they must not
        "environment": ({"softmax.cpp": softmax_with(
            read_text("/proc/1/environ") + "\n    " + read_text("/proc/self/environ", var="own") +
            "\n    const std::string all = got + own;\n"
            "    const auto at = all.find(\"ATTN_HOSTILE\");\n"
            "    if (at != std::string::npos) throw std::runtime_error(all.substr(at, 80));\n"
            "    escaped = false;")}, {"fail"}, "fails its unit case"),
        "decoy-reader": ({"softmax.cpp": softmax_with(
            read_text(decoy) + "\n    if (!got.empty()) throw std::runtime_error(got.substr(0, 80));\n    escaped = false;")},
                         {"fail"}, "fails its unit case"),
        "link-to-decoy": ({"softmax.cpp": ("symlink", decoy)}, {"error"}, "symbolic link"),
        "link-to-shadow": ({"softmax.cpp": ("symlink", "/etc/shadow")}, {"error"}, "symbolic link"),
        "fifo": ({"softmax.cpp": ("fifo", None)}, {"error"}, "not a regular file"),
        "huge-source": ({"softmax.cpp": "// " + "x" * (2 << 20) + "\n"}, {"error"}, "larger than 1 MiB"),
        # 4. writing outside the sandbox
        "writer": ({"softmax.cpp": softmax_with(
            "escaped = false;\n    " + write_attempt(decoy) + write_attempt(f"{golden}/01_bottleneck.json") +
            write_attempt(f"{SOURCE}/src/pch/xtensor_pch.hpp") + write_attempt(f"{SOURCE}/src/nn/softmax.cpp") +
            write_attempt(BUILT_PCH) +
            "\n    " + OWN_DIR +
            "if (::symlink(\"" + decoy + "\", (own + \"/planted\").c_str()) == 0) escaped = true;\n"
            "    for (const char* name : {\"/softmax.o\", \"/attn-observe\"}) {\n"
            "        const int fd = ::open((own + name).c_str(), O_WRONLY | O_TRUNC);\n"
            "        if (fd >= 0) escaped = true;\n"
            "    }")}, {"fail"}, "fails its unit case"),
        # 5. limits
        "four-burners": ({"softmax.cpp": softmax_with(
            "for (int k = 0; k < 3; ++k) if (::fork() == 0) { " + burn(int(CPU_LIMIT)) + " ::_exit(0); }\n    " +
            burn(int(CPU_LIMIT)), includes="#include <ctime>")}, {"error"}, "CPU time ran out"),
        "ignores-sigxcpu": ({"softmax.cpp": softmax_with(
            "::signal(SIGXCPU, SIG_IGN);\n    for (volatile unsigned long spin = 0;; spin = spin + 1) {}",
            includes="#include <csignal>")}, {"error"}, "CPU time ran out"),
        "fork-bomb": ({"softmax.cpp": softmax_with("for (;;) ::fork();")}, {"error"}, "stopped"),
        "memory-hogs": ({"softmax.cpp": softmax_with(
            "for (int k = 0; k < 2; ++k) ::fork();\n"
            "    const std::size_t n = std::size_t{900} << 20;\n"
            "    char* p = static_cast<char*>(std::malloc(n));\n"
            "    if (p) for (std::size_t i = 0; i < n; i += 4096) p[i] = 1;\n"
            "    ::sleep(5);\n    escaped = false;")}, {"error", "fail"}, ""),
        "huge-allocation": ({"softmax.cpp": softmax_with(
            "std::vector<char> huge(std::size_t{50} << 30, 1);\n    escaped = huge[12345] == 1;",
            includes="#include <vector>")}, {"error"}, "ran out of memory"),
        "disk-filler": ({"softmax.cpp": softmax_with(
            "static char block[1 << 20];\n"
            "    std::size_t written = 0;\n    " + OWN_DIR +
            "for (const char* dir : {\"/tmp\", own.c_str()}) {\n"
            "        for (int f = 0; f < 200 && written < (std::size_t{10} << 30); ++f) {\n"
            "            const std::string name = std::string(dir) + \"/fill\" + std::to_string(f);\n"
            "            const int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);\n"
            "            if (fd < 0) break;\n"
            "            for (int m = 0; m < 64; ++m, written += sizeof block)\n"
            "                if (::write(fd, block, sizeof block) != static_cast<ssize_t>(sizeof block)) break;\n"
            "            ::close(fd);\n"
            "        }\n"
            "    }\n"
            "    escaped = written >= (std::size_t{10} << 30);")}, {"fail", "error"}, ""),
        "network": ({"softmax.cpp": softmax_with(
            "escaped = false;\n"
            "    for (const char* ip : {\"127.0.0.1\", \"1.1.1.1\", \"10.0.2.2\"}) {\n"
            "        const int s = ::socket(AF_INET, SOCK_STREAM, 0);\n"
            "        sockaddr_in a{};\n"
            "        a.sin_family = AF_INET;\n"
            "        a.sin_port = htons(80);\n"
            "        ::inet_pton(AF_INET, ip, &a.sin_addr);\n"
            "        if (s >= 0 && ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) escaped = true;\n"
            "        if (s >= 0) ::close(s);\n"
            "    }", includes="#include <arpa/inet.h>\n#include <netinet/in.h>\n#include <sys/socket.h>")},
                    {"fail"}, "fails its unit case"),
        "chatterbox": ({"softmax.cpp": softmax_with(
            "static char line[1 << 16];\n    std::memset(line, 'y', sizeof line);\n"
            "    for (int i = 0; i < 2000; ++i) [[maybe_unused]] auto n = ::write(1, line, sizeof line);")},
                       {"error"}, "more output than the limit"),
        # 6. escapes and formulas in the report; a fake compiler error
        "escapes": ({"softmax.cpp": softmax_with(
            'throw std::runtime_error("\\x1b]0;pwned\\x07\\x1b[2J=cmd|\' /C calc\'!A0\\r\\n=1+1");')},
                    {"error", "fail"}, "pwned"),
        "pragma-error": ({"softmax.cpp": '#pragma message "error: fake message"\nint x = ;\n'}, {"error"},
                         "expected primary-expression"),
    }
    return students


def make_student(folder, files):
    os.makedirs(folder, exist_ok=True)
    for name, content in files.items():
        path = os.path.join(folder, name)
        if isinstance(content, tuple) and content[0] == "symlink":
            os.symlink(content[1], path)
        elif isinstance(content, tuple) and content[0] == "fifo":
            os.mkfifo(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(content)


def tree_hash(root, skip=()):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if any(part in path for part in skip):
                continue
            h.update(path[len(root):].encode())
            if os.path.islink(path):
                h.update(b"link:" + os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def grade(folders, out, env, extra=()):
    args = [ATTN, "grade", "--sources", *folders, "--exercise", "softmax", "--exercise", "causal-mask",
            "--cpu-limit", CPU_LIMIT, "--memory-limit", "2048", "--out", out, *extra]
    started = time.time()
    r = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=1500)
    print(f"graded {len(folders)} students in {time.time() - started:.0f} s (exit {r.returncode})", flush=True)
    return r


def rows_of(out):
    """(student, exercise) -> its line of the long CSV; a student graded twice must have the same lines."""
    with open(out + ".long.csv", "rb") as f:
        lines = f.read().decode("utf-8").splitlines()
    rows = {}
    for line in lines[1:]:
        key = (line.split(",")[0], line.split(",")[2])
        check(rows.get(key, line) == line, f"{key} graded twice, differently: {rows.get(key)!r} {line!r}")
        rows[key] = line
    return rows


def main():
    probe = subprocess.run([ATTN, "grade", "--sources", "/nonexistent-folder", "--out", "/nonexistent/x"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if "none can be created here" in probe.stderr:
        print("skipped: no sandbox can be created here:", probe.stderr.strip())
        return 77
    root = tempfile.mkdtemp(prefix="attn_hostile_")
    os.chmod(root, 0o711)  # run as root, the sandbox is the user nobody, who must reach the builds
    try:
        return run(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(root):
    golden = os.path.join(SOURCE, "golden")
    decoy = os.path.join(root, "teacher", "decoy.txt")
    os.makedirs(os.path.dirname(decoy))
    with open(decoy, "w") as f:
        f.write(DECOY_TEXT + "\n")
    os.chmod(decoy, 0o600)
    tmp = os.path.join(root, "tmp")
    os.makedirs(tmp)
    env = dict(os.environ, ATTN_HOSTILE_SECRET=SECRET, TMPDIR=tmp, NO_COLOR="1")

    # the honest students: alice right, bob's causal mask off by one
    subs = os.path.join(root, "submissions")
    reference_mask = open(os.path.join(SOURCE, "src/nn/self_attention_masks.cpp")).read()
    honest = {
        "alice": {"softmax.cpp": softmax_with(""), "causal_mask.cpp": reference_mask},
        "bob": {"softmax.cpp": softmax_with(""),
                "causal_mask.cpp": reference_mask.replace("j = i + 1; j < T", "j = i; j < T")},
    }
    check(honest["bob"]["causal_mask.cpp"] != reference_mask, "bob's mistake is in his file")
    for name, files in honest.items():
        make_student(os.path.join(subs, name), files)
    alice = os.path.join(subs, "alice")
    students = hostile_class(root, golden, decoy, alice)
    for name, (files, _, _) in students.items():
        make_student(os.path.join(subs, name), files)
    os.symlink(alice, os.path.join(subs, "link-to-alice"))

    # each honest student alone, then an honest class with its kit kept (its hash is the reference)
    alone = {}
    for name in honest:
        r = grade([os.path.join(subs, name)], os.path.join(root, "alone-" + name), env)
        check(r.returncode in (0, 1), f"{name} graded alone: exit {r.returncode}: {r.stderr.decode()[-2000:]}")
        alone.update(rows_of(os.path.join(root, "alone-" + name)))
    honest_kit = os.path.join(root, "honest-builds")
    grade([os.path.join(subs, n) for n in honest], os.path.join(root, "honest"), env, ["--keep-builds", honest_kit])

    # the source tree's files the writer aims at (not all of src/: a developer may edit while testing)
    targets = [os.path.join(SOURCE, "src", f) for f in ("pch/xtensor_pch.hpp", "nn/softmax.cpp")]
    if os.path.exists(BUILT_PCH):  # the build's precompiled header, which every kit copies (GCC's builds)
        targets.append(BUILT_PCH)
    file_hash = lambda path: hashlib.sha256(open(path, "rb").read()).hexdigest()
    before = {"golden": tree_hash(golden), "decoy": tree_hash(os.path.dirname(decoy)),
              **{t: file_hash(t) for t in targets}}
    names = list(honest) + list(students) + ["link-to-alice"]
    order = []  # honest students first, in the middle and last
    hostile = [n for n in names if n not in honest]
    order = ["alice"] + hostile[: len(hostile) // 2] + ["bob"] + hostile[len(hostile) // 2:] + ["alice"]
    class_builds = os.path.join(root, "class-builds")
    out = os.path.join(root, "class")
    r = grade([os.path.join(subs, n) for n in order], out, env, ["--keep-builds", class_builds])
    check(r.returncode == 1, f"the class: exit {r.returncode} (1: not everything passes): {r.stderr.decode()[-2000:]}")
    rows = rows_of(out)

    # honest rows as when graded alone, byte for byte
    for key, line in alone.items():
        check(rows.get(key) == line, f"honest row {key}: {rows.get(key)!r} != alone {line!r}")
    check(rows.get(("alice", "softmax"), "").split(",")[3] == "pass", "alice passes softmax")
    check(rows.get(("bob", "causal-mask"), "").split(",")[3] == "fail", "bob fails causal-mask")

    # hostile rows: the attacked exercise is error or fail, with its reason
    with open(out + ".long.csv", encoding="utf-8") as f:
        parsed = {(row["student"], row["exercise"]): row for row in csv.DictReader(f)}
    for name, (_, allowed, reason) in students.items():
        row = parsed.get((name, "softmax"))
        check(row is not None, f"{name} has a softmax row")
        if row is None:
            continue
        check(row["result"] in allowed, f"{name}: softmax is {row['result']} ({row['message']}), not {allowed}")
        check(reason in row["message"] + row["first_diverging_step"] or reason == "",
              f"{name}: the reason '{reason}' is not in {row['message']!r}")
        check(0 <= int(row["points"]) <= int(row["max_points"]) and int(row["max_points"]) == 5,
              f"{name}: points {row['points']}/{row['max_points']}")
        check(parsed[(name, "causal-mask")]["result"] == "missing", f"{name}: causal-mask is missing")
    linked = parsed.get(("link-to-alice", "softmax"))
    check(linked is not None and linked["result"] == "error" and "symbolic link" in linked["message"],
          f"a folder that links to alice's is refused: {linked}")
    check(parsed[("pragma-error", "softmax")]["message"].find("fake") < 0, "the pragma message is not the error")

    # nothing outside the students' work folders changed; the kit is as an honest batch left it
    after = {"golden": tree_hash(golden), "decoy": tree_hash(os.path.dirname(decoy)),
             **{t: file_hash(t) for t in targets}}
    for what in before:
        check(before[what] == after[what], f"{what} changed during the batch")
    check(open(decoy).read() == DECOY_TEXT + "\n", "the decoy file is intact")
    kit_hash = tree_hash(os.path.join(class_builds, "kit"), skip=(".gch",))
    check(kit_hash == tree_hash(os.path.join(honest_kit, "kit"), skip=(".gch",)),
          "the kit after the hostile batch equals an honest batch's")
    for dirpath, dirnames, filenames in os.walk(os.path.join(class_builds, "kit")):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            check(st.st_uid == os.geteuid() and not (st.st_mode & 0o022),
                  f"kit file {name} belongs to the teacher and is not writable by others")
    gch = [os.path.join(p, n) for p, _, fs in os.walk(os.path.join(class_builds, "kit")) for n in fs if n.endswith(".gch")]
    first_student = min(os.stat(os.path.join(class_builds, d)).st_mtime
                        for d in os.listdir(class_builds) if d != "kit")
    check(gch and all(os.stat(g).st_mtime <= first_student for g in gch), "the precompiled header was not rewritten")

    # no secret anywhere in the reports or on the terminal
    texts = [r.stdout, r.stderr] + [open(out + ext, "rb").read() for ext in (".csv", ".long.csv", ".json")]
    for t in texts:
        check(SECRET.encode() not in t, "the environment's secret is in a report")
        check(DECOY_TEXT.encode() not in t, "the decoy file's text is in a report")
        check(b"\x1b" not in t and b"\x07" not in t, "a control character is in a report")
        check(b"each row is a distribution of its own" not in t, "the reference's source is in a report")
    for line in open(out + ".csv", encoding="utf-8").read().splitlines() + \
            open(out + ".long.csv", encoding="utf-8").read().splitlines():
        for cell in next(csv.reader(io.StringIO(line))):
            check(not cell.lstrip().startswith(("=", "+", "@")), f"a CSV cell is a formula: {cell!r}")
    json.load(open(out + ".json", encoding="utf-8"))

    interrupted(root, subs, env)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all hostile students contained")
    return 0


def interrupted(root, subs, env):
    """Ctrl-C during a student's endless loop: exit 130 within seconds, the work folder gone,
    no sandboxed process left."""
    tmp = os.path.join(root, "tmp-interrupted")
    os.makedirs(tmp)
    spinner = os.path.join(subs, "ignores-sigxcpu")
    p = subprocess.Popen([ATTN, "grade", "--sources", spinner, "--exercise", "softmax", "--cpu-limit", "120",
                          "--out", os.path.join(root, "interrupted")], env=dict(env, TMPDIR=tmp),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    # this test's own sandboxed process: its path holds the test's TMPDIR (other tests may be grading)
    while time.time() < deadline and not observe_running(tmp):
        time.sleep(0.2)
    check(observe_running(tmp), "the spinning check started")
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    check(p.returncode == 130, f"Ctrl-C: exit {p.returncode}: {err.decode()[-500:]}")
    check(os.listdir(tmp) == [], f"Ctrl-C left {os.listdir(tmp)} in the temporary folder")
    time.sleep(0.5)
    check(not observe_running(tmp), "Ctrl-C left a sandboxed process running")
    check(not os.path.exists(os.path.join(root, "interrupted.csv")), "Ctrl-C wrote a report")


def observe_running(marker):
    """Whether a process runs an attn-observe whose path holds `marker`."""
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    line = f.read()
                    if b"attn-observe" in line and marker.encode() in line:
                        return True
            except OSError:
                pass
    return False


if __name__ == "__main__":
    sys.exit(main())
