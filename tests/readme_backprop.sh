#!/usr/bin/env bash
# Runs README's gradient example end to end: attn export backprop, then the README's ```py block,
# which checks lesson 8's dQ against numpy central differences and fails when they disagree.
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
    echo "SKIPPED: no python3 with numpy found, so README's gradient example was not run"
    exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
awk '/^```py$/{inside=1; next} /^```/{inside=0} inside' "$readme" > example.py
lines=$(grep -cv '^\s*$' example.py)
[ "$lines" -ge 10 ] || { echo "README's gradient example (the \`\`\`py block) not found ($lines lines)"; exit 1; }
"$attn" export backprop --format npy --out backprop
"$python" example.py
echo "README's gradient example ran ($lines lines, $python): lesson 8's dQ matches numpy's central differences"
