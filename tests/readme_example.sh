#!/usr/bin/env bash
# Runs one of README's Python examples end to end, as a reader would.
#   readme_example.sh ATTN README numpy      lesson 1: attn export, the ```python block, attn compare
#   readme_example.sh ATTN README backprop   lesson 8: attn export backprop, the ```py block, which
#                                            checks dQ against numpy's central differences
# Exit 77 (meson's "skipped") when no python3 with numpy is found, and says so.
set -euo pipefail
attn="$1"
readme="$2"
example="$3"
case "$example" in
    numpy) fence='```python' fewest=5 ;;
    backprop) fence='```py' fewest=10 ;;
    *) echo "readme_example.sh: unknown example '$example' (numpy or backprop)"; exit 2 ;;
esac
python=""
for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$candidate" ] && "$candidate" -c "import numpy" 2>/dev/null; then
        python="$candidate"
        break
    fi
done
if [ -z "$python" ]; then
    echo "SKIPPED: no python3 with numpy found, so README's $example example was not run"
    exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
awk -v fence="$fence" '$0 == fence {inside=1; next} /^```/{inside=0} inside' "$readme" > example.py
lines=$(grep -cv '^\s*$' example.py)
[ "$lines" -ge "$fewest" ] || { echo "README's $example example ($fence block) not found ($lines lines)"; exit 1; }
if [ "$example" = numpy ]; then
    "$attn" export 1 --format npy --out lesson1
    "$python" example.py
    "$attn" compare mine --lesson 1
    echo "README's numpy example ran ($lines lines, $python) and attn compare accepted its numbers"
else
    "$attn" export backprop --format npy --out backprop
    "$python" example.py
    echo "README's gradient example ran ($lines lines, $python): lesson 8's dQ matches numpy's central differences"
fi
