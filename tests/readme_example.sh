#!/usr/bin/env bash
# Runs one of the documentation's Python examples end to end, as a reader would (numpy, backprop and torch
# are in docs/your-numbers.md, checkpoint in docs/translator.md; the tests keep their names readme_*).
#   readme_example.sh ATTN DOC numpy      lesson 1: attn export, the ```python block, attn compare
#   readme_example.sh ATTN DOC backprop   lesson 8: attn export backprop, the ```py block, which
#                                            checks dQ against numpy's central differences
#   readme_example.sh ATTN DOC torch      lesson 9: attn export 9, the ```python3 block, which
#                                            trains both models for one epoch in PyTorch and exits 1
#                                            unless its losses agree with lesson 9's
#   readme_example.sh ATTN DOC checkpoint lesson 14: a small attn train, then the ```python3 checkpoint
#                                            block, which rebuilds the GRU models and the Transformer from the checkpoint and
#                                            exits 1 unless -log p of John 1:1 agrees to 1e-12
# (Each example is the one block of DOC whose fence names that language exactly.)
# Exit 77 (meson's "skipped") when no python3 with numpy (torch: PyTorch) is found, and says so;
# for torch under CI=true a failure instead, since CI installs it (.ci/torch-packages.txt).
set -euo pipefail
attn="$1"
readme="$2"
example="$3"
module=numpy
case "$example" in
    numpy) fence='```python' fewest=5 ;;
    backprop) fence='```py' fewest=10 ;;
    torch) fence='```python3' fewest=40 module=torch ;;
    checkpoint) fence='```python3 checkpoint' fewest=30 module=torch ;;
    *) echo "readme_example.sh: unknown example '$example' (numpy, backprop, torch or checkpoint)"; exit 2 ;;
esac
python=""
for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    if [ -n "$candidate" ] && "$candidate" -c "import $module" 2>/dev/null; then
        python="$candidate"
        break
    fi
done
if [ -z "$python" ]; then
    if [ "$module" = torch ] && [ "${CI:-}" = true ]; then
        echo "FAIL: no python3 with PyTorch under CI=true (bash .ci/install-deps --ci installs python3-torch)"
        exit 1
    fi
    echo "SKIPPED: no python3 with $module found, so the documentation's $example example was not run"
    exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
awk -v fence="$fence" '$0 == fence {inside=1; next} /^```/{inside=0} inside' "$readme" > example.py
lines=$(grep -cv '^\s*$' example.py)
[ "$lines" -ge "$fewest" ] || { echo "the documentation's $example example ($fence block) not found ($lines lines)"; exit 1; }
if [ "$example" = numpy ]; then
    "$attn" export 1 --format npy --out lesson1
    "$python" example.py
    "$attn" compare mine --lesson 1
    echo "the documentation's numpy example ran ($lines lines, $python) and attn compare accepted its numbers"
elif [ "$example" = backprop ]; then
    "$attn" export backprop --format npy --out backprop
    "$python" example.py
    echo "the documentation's gradient example ran ($lines lines, $python): lesson 8's dQ matches numpy's central differences"
elif [ "$example" = checkpoint ]; then
    # a small run (32 verse pairs, one epoch, two Transformer layers, so that the script's stacking is
    # checked too): seconds, most of them reading the Bible's two modules
    "$attn" train --out model --set pairs=32 --set validation=8 --set test=8 --set epochs=1 --set layers=2 > train.txt ||
        { cat train.txt; exit 1; }
    "$python" example.py model/checkpoint.npz | tee printed.txt
    [ "$(grep -c 'relative difference' printed.txt)" -eq 3 ] ||
        { echo "the documentation's checkpoint script did not print the three models' numbers"; exit 1; }
    echo "the documentation's checkpoint script ran ($lines lines, $python): the GRU models and the Transformer (two layers) rebuilt from the checkpoint give attn's -log p to 1e-12"
else
    "$attn" export learning-to-align --out lesson9
    # the script prints both models' epoch-1 losses beside lesson 9's and exits 1 when they differ
    "$python" example.py | tee printed.txt
    [ "$(grep -c 'relative difference' printed.txt)" -eq 4 ] ||
        { echo "the documentation's PyTorch script did not print the four losses"; exit 1; }
    echo "the documentation's PyTorch script ran ($lines lines, $python): lesson 9's epoch-1 losses reproduced"
fi
