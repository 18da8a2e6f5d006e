"""The arrows of the layout (ARCHITECTURE.md: cli -> exercises -> lessons -> nn -> core), held by the build.

Each library is compiled with only the include directories its arrows allow. This test takes each
library's real compile command from the build's compile_commands.json and preprocesses a probe file
that includes one header with it: an include against an arrow must fail to resolve, and the same
include with a library the arrow allows must resolve (so a probe that fails for another reason,
a missing compiler say, cannot pass as a refusal). It also holds src/core free of any mention of
the exercises, and src/exercises free of any include of src/cli (the exercise machinery and its
commands compile with src/ as their root, where cli/ is too, so only their text can show it).

    python3 layout_check.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tempfile

build_dir, source_dir = (pathlib.Path(a).resolve() for a in sys.argv[1:3])

# (library, header, whether it may include it)
cases = [
    ("libattn_core", "nn/softmax.hpp", False),       # core knows nothing of the maths
    ("libattn_core", "lessons/run.hpp", False),      # nor of the lessons, by any path
    ("libattn_core", "run.hpp", False),
    ("libattn_core", "exercises/table.hpp", False),  # nor of the exercises
    ("libattn_nn", "core/tensor.hpp", True),         # nn -> core
    ("libattn_nn", "run.hpp", False),                # nn knows nothing of the lessons
    ("libattn_lessons", "nn/softmax.hpp", True),     # lessons -> nn
    ("libattn_lessons", "run.hpp", True),
]
libraries = {library for library, _, _ in cases}

# library (the prefix of its objects' folder) -> its compile command, split
commands = {}
for entry in json.loads((build_dir / "compile_commands.json").read_text(encoding="utf-8")):
    library = entry["output"].split(".a.p/")[0] if ".a.p/" in entry["output"] else None
    if library in libraries and library not in commands:
        commands[library] = (entry["directory"], shlex.split(entry["command"]))
missing = libraries - set(commands)
if missing:
    sys.exit(f"layout_check: no compile command for {', '.join(sorted(missing))} in {build_dir}/compile_commands.json")


def preprocess(library, header):
    """Whether `#include "header"` resolves with the library's include directories."""
    directory, command = commands[library]
    kept, skip = [], False
    for word in command:  # the compiler and its flags, without the object, source and dependency file
        if skip:
            skip = False
        elif word in ("-o", "-c", "-MQ", "-MF", "-MT"):
            skip = True
        elif word not in ("-MD", "-MMD"):
            kept.append(word)
    with tempfile.TemporaryDirectory(prefix="attn_layout_") as probe_dir:
        probe = pathlib.Path(probe_dir) / "probe.cpp"
        probe.write_text(f'#include "{header}"\n', encoding="utf-8")
        done = subprocess.run(kept + ["-E", "-o", os.devnull, str(probe)], cwd=directory,
                              capture_output=True, text=True)
    if done.returncode != 0 and "No such file" not in done.stderr and "not found" not in done.stderr:
        sys.exit(f"layout_check: preprocessing failed for another reason than a missing header:\n{done.stderr}")
    return done.returncode == 0


failures = []
for library, header, allowed in cases:
    resolved = preprocess(library, header)
    print(f"{library}: #include \"{header}\" {'resolves' if resolved else 'does not resolve'}"
          f" ({'allowed' if allowed else 'against the arrows'})")
    if resolved != allowed:
        failures.append(f"{library} {'cannot' if allowed else 'can'} include {header}")

mentions = [str(p.relative_to(source_dir)) for p in sorted((source_dir / "src" / "core").iterdir())
            if p.is_file() and "exercise" in p.read_text(encoding="utf-8").lower()]
if mentions:
    failures.append("src/core mentions the exercises: " + ", ".join(mentions))

upward = [f"{p.relative_to(source_dir)}:{n}" for p in sorted((source_dir / "src" / "exercises").iterdir()) if p.is_file()
          for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
          if line.lstrip().startswith("#include") and '"cli/' in line]
if upward:
    failures.append("src/exercises includes src/cli (an arrow up, against cli -> exercises): " + ", ".join(upward))

for failure in failures:
    print("FAILED:", failure)
print(f"layout_check: {len(cases) + 2 - len(failures)} of {len(cases) + 2} checks hold")
sys.exit(1 if failures else 0)
