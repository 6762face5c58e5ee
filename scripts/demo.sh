#!/usr/bin/env bash
# The main job on the embedded default: builds what it needs, writes the input
# record for the bundled corpus, then runs bob-run a few times in a working
# directory (work/demo), each invocation resuming from the last checkpoint,
# and shows what the model learned with bob-inspect.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "demo: setting up .venv and the native core (scripts/bootstrap.sh; the first build takes a minute or two)"
scripts/bootstrap.sh >/dev/null
bin=.venv/bin
dir=work/demo
invocations="${BOB_DEMO_INVOCATIONS:-5}"
mkdir -p "$dir"
rm -f "$dir/checkpoint.bob" "$dir/predictions.bin"
echo "demo: writing the input record for the bundled corpus ($bin/bob-fixture), then $invocations invocations of $bin/bob-run in $dir"
"$bin/bob-fixture" --corpus python/bob/data/default-corpus.txt \
    --prompt "the c" --prompt "the do" --prompt "" --output "$dir/record.bin"
for i in $(seq 1 "$invocations"); do
    "$bin/bob-run" --input "$dir/record.bin" --checkpoint "$dir/checkpoint.bob" --predictions "$dir/predictions.bin"
done
echo
updates="$("$bin/python" -c 'from bob.formats.constants import UPDATES_PER_INVOCATION as u; print(u)')"
echo "what the model has learned after $((invocations * updates)) updates (bob-inspect checkpoint --rows):"
"$bin/bob-inspect" checkpoint "$dir/checkpoint.bob" --rows "tco " | sed -n '/^rows:/,/^verdict/p'
echo "files in $dir: record.bin, checkpoint.bob, predictions.bin"
