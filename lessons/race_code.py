#!/usr/bin/env python3
"""Writes race_code.hpp: a digest of the sources that train lesson 12's race (transformer_race.hpp).

    race_code.py OUTPUT DEPFILE ROOT FOLDER...

Every .cpp, .hpp and .o file under the FOLDERs (relative to ROOT; lessons/exercises, the students'
starters, left out), in sorted order, path and bytes, goes into one SHA-256 digest; the depfile
names them all, so that ninja writes the header anew when any of them changes. A race kept in a file
names this digest, and a program refuses a file trained by other code.
"""
import hashlib
import os
import sys


def sources(root, folders):
    for folder in folders:
        for here, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = sorted(d for d in dirs if os.path.relpath(os.path.join(here, d), root) != "lessons/exercises")
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp", ".o")):
                    yield os.path.join(here, name)


def main():
    output, depfile, root, *folders = sys.argv[1:]
    digest = hashlib.sha256()
    paths = sorted(sources(root, folders))
    for path in paths:
        relative = os.path.relpath(path, root).encode()
        with open(path, "rb") as f:
            data = f.read()
        digest.update(b"%d %s %d\n" % (len(relative), relative, len(data)))
        digest.update(data)
    text = ("// Written by lessons/race_code.py: the digest of the sources that train lesson 12's race.\n"
            "#pragma once\n#define ATTN_RACE_CODE \"%s\"\n" % digest.hexdigest()[:32])
    old = None
    if os.path.exists(output):
        with open(output) as f:
            old = f.read()
    if old != text:  # unchanged, the header keeps its time and nothing that includes it rebuilds
        with open(output + ".tmp", "w") as f:
            f.write(text)
        os.replace(output + ".tmp", output)
    with open(depfile, "w") as f:
        f.write("%s: %s\n" % (output, " ".join(p.replace(" ", "\\ ") for p in paths)))


if __name__ == "__main__":
    main()
