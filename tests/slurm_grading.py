#!/usr/bin/env python3
"""`attn grade --sources --slurm` on a single-node Slurm cluster started by this test.

A class of four (all correct; a compile error in one file; a causal mask off by one; nothing
handed in) is graded locally and through `sbatch --array`: the reports must be equal byte for byte
(the JSON's `meta` aside: its date and command differ). Then one student's result is removed and
the batch run again: only that student is submitted, and the reports are the same again.

Needs root (to start munged, slurmctld and slurmd) and Debian's slurm-wlm and munge: without them
the test is skipped (exit 77) saying why, and fails instead under CI=true, where .ci/run installs
them. The daemons run on ports of their own, with their state in a temporary folder, and are
stopped at the end.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ATTN = os.environ["ATTN_BIN"]
SOURCE = os.environ["ATTN_SOURCE_DIR"]
EXERCISES = ["softmax", "scaled-attention", "causal-mask"]


def skip(why):
    if os.environ.get("CI", "") == "true":
        print("FAIL: under CI=true the Slurm test must run:", why)
        return 1
    print("skipped:", why)
    return 77


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cluster(root):
    """munged (unless one runs), slurmctld and slurmd with a configuration of this test's own."""
    host = socket.gethostname().split(".")[0]
    conf = os.path.join(root, "slurm.conf")
    for d in ("state", "spool"):
        os.makedirs(os.path.join(root, d))
    with open(conf, "w") as f:
        f.write(f"""ClusterName=attntest
SlurmctldHost={host}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmUser=root
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmdSpoolDir={root}/spool
StateSaveLocation={root}/state
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
NodeName={host} CPUs={os.cpu_count()} RealMemory=1000 State=UNKNOWN
PartitionName=attntest Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    env = dict(os.environ, SLURM_CONF=conf)
    started_munge = False
    if subprocess.run(["munge", "-n"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        if not os.path.exists("/etc/munge/munge.key"):
            subprocess.run(["mungekey", "-c", "-k", "/etc/munge/munge.key"], check=True)
            shutil.chown("/etc/munge/munge.key", "munge", "munge")
        os.makedirs("/run/munge", exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        subprocess.run(["su", "-s", "/bin/sh", "munge", "-c", "/usr/sbin/munged"], check=True)
        started_munge = True
    subprocess.run(["slurmctld", "-f", conf], env=env, check=True)
    subprocess.run(["slurmd", "-f", conf], env=env, check=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        r = subprocess.run(["sinfo", "--noheader", "-o", "%t"], env=env, stdout=subprocess.PIPE, text=True)
        if r.stdout.strip() in ("idle", "mix", "alloc"):
            return env, started_munge
        time.sleep(1)
    raise RuntimeError("the test cluster did not come up: " + open(os.path.join(root, "slurmctld.log")).read()[-2000:])


def stop_cluster(root, started_munge):
    for name in ("slurmd", "slurmctld"):
        try:
            with open(os.path.join(root, name + ".pid")) as f:
                os.kill(int(f.read()), signal.SIGTERM)
        except (OSError, ValueError):
            pass
    if started_munge:
        subprocess.run(["pkill", "-x", "munged"])
    time.sleep(1)


def make_class(subs):
    files = {"softmax.cpp": "softmax.cpp", "scaled_attention.cpp": "self_attention_scaled.cpp",
             "causal_mask.cpp": "self_attention_masks.cpp"}
    for student in ("all-right", "compile-error", "off-by-one"):
        os.makedirs(os.path.join(subs, student))
        for name, reference in files.items():
            shutil.copy(os.path.join(SOURCE, "src/nn", reference), os.path.join(subs, student, name))
    with open(os.path.join(subs, "compile-error", "scaled_attention.cpp"), "a") as f:
        f.write("\nint broken = ;\n")
    mask = os.path.join(subs, "off-by-one", "causal_mask.cpp")
    text = open(mask).read()
    assert "j = i + 1; j < T" in text
    open(mask, "w").write(text.replace("j = i + 1; j < T", "j = i; j < T"))
    os.makedirs(os.path.join(subs, "nothing"))
    return [os.path.join(subs, s) for s in ("all-right", "compile-error", "off-by-one", "nothing")]


def reports(out):
    """The report files, the JSON without its meta."""
    texts = {ext: open(out + ext, "rb").read() for ext in (".csv", ".long.csv")}
    doc = json.load(open(out + ".json"))
    doc.pop("meta")
    texts[".json"] = json.dumps(doc, sort_keys=True).encode()
    for name in sorted(os.listdir(out + ".feedback")):
        lines = open(os.path.join(out + ".feedback", name)).read().splitlines()
        texts[name] = "\n".join(l for l in lines if not l.startswith("Graded by attn")).encode()
    return texts


def grade(students, out, env, slurm):
    args = [ATTN, "grade", "--sources", *students, "--out", out, "--cpu-limit", "60"]
    for x in EXERCISES:
        args += ["--exercise", x]
    if slurm:
        args.append("--slurm")
    r = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    print(r.stdout, flush=True)
    return r


def main():
    if os.geteuid() != 0:
        return skip("starting a Slurm cluster needs root")
    missing = [t for t in ("slurmctld", "slurmd", "sbatch", "munged") if not shutil.which(t) and
               not os.path.exists("/usr/sbin/" + t)]
    if missing:
        return skip("Slurm is not installed (" + ", ".join(missing) + "; Debian: slurm-wlm munge)")
    root = tempfile.mkdtemp(prefix="attn_slurm_")
    os.chmod(root, 0o711)  # the sandbox's user must reach the builds
    started_munge = False
    failures = []
    try:
        env, started_munge = start_cluster(os.path.join(root, "cluster"))
        students = make_class(os.path.join(root, "class"))
        local = grade(students, os.path.join(root, "local"), env, False)
        remote = grade(students, os.path.join(root, "remote"), env, True)
        if local.returncode != 1 or remote.returncode != 1:
            failures.append(f"exit codes {local.returncode} (local) and {remote.returncode} (Slurm), both 1 expected")
        if "submitted 4 grading tasks" not in remote.stdout:
            failures.append("the Slurm run did not submit four tasks")
        if reports(os.path.join(root, "local")) != reports(os.path.join(root, "remote")):
            failures.append("the Slurm run's reports differ from the local run's")
        # one result lost: only that student is submitted again
        os.remove(os.path.join(root, "remote.slurm", "results", "2.json"))
        again = grade(students, os.path.join(root, "remote"), env, True)
        if "submitted 1 grading tasks" not in again.stdout:
            failures.append("the second run did not submit exactly the missing student")
        if reports(os.path.join(root, "local")) != reports(os.path.join(root, "remote")):
            failures.append("after the second run the reports differ from the local run's")
        long_csv = open(os.path.join(root, "remote.long.csv")).read()
        if "off-by-one,self-attention,causal-mask,fail" not in long_csv:
            failures.append("the off-by-one mask is not a fail")
    finally:
        stop_cluster(os.path.join(root, "cluster"), started_munge)
        shutil.rmtree(root, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
