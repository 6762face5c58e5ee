//! The cargo-fuzz targets of `fuzz/` (nightly) run on stable too: this test
//! includes their code (fuzz/src/lib.rs) and replays every committed corpus
//! and regression file through it, so CI keeps them passing.

#[allow(dead_code)]
#[path = "../../../fuzz/src/lib.rs"]
mod targets;

use std::path::PathBuf;

fn replay(name: &str, target: fn(&[u8])) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let files = targets::replay_dir(&root.join("corpus").join(name), target)
        + targets::replay_dir(&root.join("regressions").join(name), target);
    // A few fixed inputs too, so the test means something in a checkout without corpora.
    for seed in [&b""[..], &[0xff; 64][..], &(0..=255u8).collect::<Vec<_>>()[..]] {
        target(seed);
    }
    eprintln!("{name}: {files} corpus and regression files replayed");
}

#[test]
fn kernels_corpus_and_regressions() {
    replay("kernels", targets::kernels);
}

#[test]
fn predict_corpus_and_regressions() {
    replay("predict", targets::predict);
}

#[test]
fn resume_corpus_and_regressions() {
    replay("resume", targets::resume);
}
