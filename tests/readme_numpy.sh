#!/usr/bin/env bash
# Runs README's numpy example end to end: attn export, the README's Python code, attn compare.
# Exit 77 (meson's "skipped") when no python3 with numpy is found, and says so.
set -euo pipefail
attn="$1"
readme="$2"
python=""
for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$candidate" ] && "$candidate" -c "import numpy" 2>/dev/null; then
        python="$candidate"
        break
    fi
done
if [ -z "$python" ]; then
    echo "SKIPPED: no python3 with numpy found, so README's numpy example was not run"
    exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
awk '/^```python/{inside=1; next} /^```/{inside=0} inside' "$readme" > example.py
lines=$(grep -cv '^\s*$' example.py)
[ "$lines" -ge 5 ] || { echo "README's python example not found ($lines lines)"; exit 1; }
"$attn" export 1 --format npy --out lesson1
"$python" example.py
"$attn" compare mine --lesson 1
echo "README's numpy example ran ($lines lines, $python) and attn compare accepted its numbers"
