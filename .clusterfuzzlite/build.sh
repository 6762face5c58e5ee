#!/bin/bash -eu
# Build bob's fuzzers for OSS-Fuzz / ClusterFuzzLite: $SRC holds the checkout
# (at $SRC/bob), fuzzers and their <name>.dict / <name>_seed_corpus.zip go to $OUT.
cd "$SRC/bob"

# bob with its native core (maturin builds rust/bob-py), then the harnesses,
# dictionaries and seed corpora that bob.fuzz.oss derives from the targets.
python3 -m pip install ".[fuzz]"
harnesses="$WORK/bob-harnesses"
fuzzers=$(python3 -m bob.fuzz.oss "$harnesses" "$OUT")
for fuzzer in $fuzzers; do
    compile_python_fuzzer "$harnesses/$fuzzer.py"
done

# The Rust core's cargo-fuzz targets (fuzz/, its own workspace).
cargo fuzz build -O --fuzz-dir fuzz
for target in kernels predict resume; do
    cp "fuzz/target/x86_64-unknown-linux-gnu/release/$target" "$OUT/"
done
