#!/usr/bin/env python3
"""Writes a C++ header with the code behind every lesson step, for the book (attn book).

    step_code.py OUTPUT DEPFILE SOURCE_ROOT

For every step a lesson records (`trace.step("id", ...)` in lessons/NN_*.cpp), the functions of
namespace attn::nn its code calls: the calls written since the step recorded before it in the same
top-level function (or since the function's start), and for a function's last step also those after
it, followed one level into the lesson's own functions called there that record no step themselves (a
lesson computes, then records; a function that records steps is those steps' code). Each function's definition is then read from src/nn/*.cpp (its
comment, signature and body, up to the closing brace at column 0). Left out: the matrix, reduction and
kernel helpers (nn/linalg, nn/reductions, nn/kernels: what every step uses, not what it teaches) and
definitions over 80 lines. A function whose file is not in this tree (the student edition leaves the
exercises' references out) is not shown: the book never holds code the tree does not.

Also the header comment of each exercise's starter (lessons/exercises/*.cpp): the task as the student
reads it.

The output is written only when it changes, so nothing that includes it rebuilds for nothing.
"""
import glob
import os
import re
import sys

from embed_text import raw_string, write_if_changed

HELPER_FILES = {"linalg.cpp", "reductions.cpp", "kernels.cpp", "kernel_parts.cpp"}
MAX_LINES = 80
STEP = re.compile(r'\btrace\.step\(\s*"([A-Za-z0-9_-]+)"')
CALL = re.compile(r'\bnn::([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^<>;]*>)?\s*\(')
LOCAL_CALL = re.compile(r'(?<![:.>\w])([a-z_][A-Za-z0-9_]*)\s*\(')


def strip_comments_and_strings(text):
    """The text with comments and string literals blanked (same length, newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def top_level_blocks(code):
    """(start, end, name) of each definition whose body opens on a line at column 0 and closes with '}' at
    column 0; name is the identifier before the first '(' of its first line ('' when none)."""
    blocks = []
    lines = code.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    k = 0
    while k < len(lines):
        line = lines[k]
        if line and not line[0].isspace() and line[0] not in "}#" and not line.startswith("namespace") and \
                "(" in line and not line.rstrip().endswith(";"):
            # the signature may go on for some lines; the body ends at the first '}' at column 0
            start = k
            while start > 0 and lines[start - 1].startswith("template"):
                start -= 1
            end = k
            while end < len(lines) and lines[end] != "}" and not lines[end].startswith("};"):
                end += 1
            m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", line)
            blocks.append((offsets[start], offsets[min(end + 1, len(lines))], m.group(1) if m else "", start, end))
            k = end + 1
            continue
        k += 1
    return blocks


def nn_definitions(root):
    """name -> list of (file, first line, text with its comment) of src/nn's top-level definitions."""
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "src", "nn", "*.cpp"))):
        base = os.path.basename(path)
        if base in HELPER_FILES:
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.split("\n")
        code = strip_comments_and_strings(text)
        for start, end, name, first, last in top_level_blocks(code):
            if not name or last - first + 1 > MAX_LINES:
                continue
            # the comment right above it belongs to it
            top = first
            while top > 0 and lines[top - 1].startswith("//"):
                top -= 1
            body = "\n".join(lines[top:last + 1])
            found.setdefault(name, []).append(("src/nn/" + base, first + 1, body))
    return found


def lesson_steps(path, definitions):
    """[(step id, [nn function names])] of one lesson file, in the file's order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    code = strip_comments_and_strings(text)
    blocks = top_level_blocks(code)
    # the lesson's own helpers; those that record steps themselves are other steps' code, not this one's
    local = {name: code[s:e] for s, e, name, _, _ in blocks if name and not STEP.search(text[s:e])}
    steps = []
    for s, e, name, _, _ in blocks:
        body = code[s:e]
        raw = text[s:e]
        marks = [(m.start(), m.group(1)) for m in STEP.finditer(raw)]
        for k, (at, step) in enumerate(marks):
            # the code since the step before (or the function's start): a lesson computes, then records;
            # the last step of a function also owns what follows it
            lo = marks[k - 1][0] if k > 0 else 0
            hi = at if k + 1 < len(marks) else len(body)
            region = body[lo:hi]
            names = []

            def add(fragment, depth):
                for m in CALL.finditer(fragment):
                    if m.group(1) in definitions and m.group(1) not in names:
                        names.append(m.group(1))
                if depth == 0:
                    for m in LOCAL_CALL.finditer(fragment):
                        callee = m.group(1)
                        if callee in local and callee != name:
                            add(local[callee], 1)

            add(region, 0)
            steps.append((step, names))
    return steps


def starter_task(path):
    """The starter's header comment without its comment marks."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    task = []
    for line in lines:
        if not line.startswith("//"):
            break
        task.append(line[3:] if line.startswith("// ") else line[2:])
    return "\n".join(task).strip("\n")


def main():
    output, depfile, root = sys.argv[1:]
    definitions = nn_definitions(root)
    lesson_files = sorted(glob.glob(os.path.join(root, "lessons", "[0-9][0-9]_*.cpp")))
    used = []
    entries = []
    for path in lesson_files:
        number = int(os.path.basename(path)[:2])
        for step, names in lesson_steps(path, definitions):
            entries.append((number, step, names))
            used += [n for n in names if n not in used]
    starters = sorted(glob.glob(os.path.join(root, "lessons", "exercises", "*.cpp")))
    out = ["// Written by lessons/step_code.py from lessons/ and src/nn/: do not edit.", "#pragma once", "",
           "#include <string_view>", "", "namespace attn::step_code {", "",
           "struct Function {", "    std::string_view name, file;", "    int line;", "    std::string_view code;", "};",
           "", "inline constexpr Function functions[] = {"]
    for name in used:
        for file, line, body in definitions[name]:
            out.append("    {%s, %s, %d, %s}," % (raw_string(name), raw_string(file), line, raw_string(body)))
    out += ["    {{}, {}, 0, {}},", "};", "", "struct Step {", "    int lesson;", "    std::string_view step;",
            "    std::string_view functions;  // names separated by spaces, in the order the code calls them", "};", "",
            "inline constexpr Step steps[] = {"]
    for number, step, names in entries:
        out.append('    {%d, "%s", "%s"},' % (number, step, " ".join(names)))
    out += ["    {0, {}, {}},", "};", "", "struct Starter {", "    std::string_view file, task;", "};", "",
            "inline constexpr Starter starters[] = {"]
    for path in starters:
        out.append("    {%s, %s}," % (raw_string(os.path.basename(path)), raw_string(starter_task(path))))
    out += ["    {{}, {}},", "};", "", "}  // namespace attn::step_code", ""]
    write_if_changed(output, "\n".join(out))
    inputs = lesson_files + starters + sorted(glob.glob(os.path.join(root, "src", "nn", "*.cpp"))) + [
        os.path.join(root, "lessons", "embed_text.py")]
    with open(depfile, "w", encoding="utf-8") as f:
        f.write("%s: %s\n" % (output.replace(" ", "\\ "), " ".join(p.replace(" ", "\\ ") for p in inputs)))


if __name__ == "__main__":
    main()
