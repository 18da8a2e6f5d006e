#!/usr/bin/env bash
# The student edition of the course: a copy of the source tree in which the reference functions of
# the exercises (the `exercises` list of meson.build) and the unit cases' oracles
# (src/exercises/cases.cpp) are not source but objects compiled by this build, in prebuilt/; the
# starters stay in lessons/exercises/. meson.build sees prebuilt/ and links those objects where it
# would compile the references, so `attn run` runs every lesson and attn-student works as usual.
# The tests are left out (they use the references' sources).
#   meson compile -C build student-edition      writes build/student-edition/ and build/attn-student-edition.tar.gz
#   bash src/tools/student-edition.sh SOURCE_DIR BUILD_DIR OUT_DIR
# The objects are for this platform and compiler (Debian 12's GCC 12 on x86-64 here): make the
# edition from a default (unsanitized) build, with the compiler the students will use.
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 SOURCE_DIR BUILD_DIR OUT_DIR" >&2
    exit 2
fi
src="$(cd "$1" && pwd)"
build="$(cd "$2" && pwd)"
out="$3"
fail() { echo "student-edition: $*" >&2; exit 1; }

[ -d "$src/prebuilt" ] && fail "$src is itself a student edition (it has prebuilt/)"
mapfile -t refs < <(sed -n -E "s/^  \['[a-z-]+', '(src\/nn\/[a-z_]+\.cpp)'\],?$/\1/p" "$src/meson.build")
[ "${#refs[@]}" -gt 0 ] || fail "found no exercises in $src/meson.build"
if grep -q '"name": "b_sanitize", "value": "[a-z,]*"' "$build/meson-info/intro-buildoptions.json" 2>/dev/null &&
   ! grep -q '"name": "b_sanitize", "value": "none"' "$build/meson-info/intro-buildoptions.json"; then
    fail "$build is a sanitized build: make the edition from a default build"
fi

tmp="$out.tmp.$$"
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp"
mkdir -p "$tmp/prebuilt"
for item in meson.build meson_options.txt README.md ARCHITECTURE.md src lessons golden .ci; do
    [ -e "$src/$item" ] && cp -a "$src/$item" "$tmp/"
done
# the edition's README is its own: what a student does with it (the course's speaks of tests and
# references the edition does not have)
cp "$src/src/tools/student-edition-README.md" "$tmp/README.md"
rm -rf "$tmp/src/tools"
# code that only the references include (a vectorised softmax): out with their sources
rm -rf "$tmp/src/nn/reference"
for source in "${refs[@]}" src/exercises/cases.cpp; do
    # the library that compiled it (meson.build): the exercises' machinery, the references that
    # vectorise a softmax of their own, or the store of every other version
    object=""
    for library in libattn_exercises.a.p libattn_reference_fast.a.p libattn_exercise_code.a.p; do
        if [ -f "$build/$library/${source//\//_}.o" ]; then
            object="$build/$library/${source//\//_}.o"
            break
        fi
    done
    [ -n "$object" ] || fail "the object of $source is missing: build first (meson compile -C $build)"
    cp "$object" "$tmp/prebuilt/$(printf '%s' "$source" | sed 's/[^A-Za-z0-9]/_/g').o"
    rm -f "$tmp/$source"
done
cat > "$tmp/prebuilt/README.md" <<'TXT'
# prebuilt/

The reference functions of the exercises, compiled for this platform (x86-64, Debian 12, GCC 12):
the course's `attn` links them, and `attn-student` links your files from `lessons/exercises/`
(or the folder given by `meson setup -Dexercises_dir=...`) instead. Their source is not part of
this edition: write your own.
TXT
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "student-edition: wrote $out (${#refs[@]} exercises prebuilt, their sources left out)"
