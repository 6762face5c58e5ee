//! Fails if the AVX2 or AVX-512 copy of the row loop silently stops being
//! vectorised.
//!
//! Why a speed ratio and not the assembly: the per-instruction-set copies are
//! the same generic source compiled under `#[target_feature]`, so nothing in
//! the source breaks when LLVM stops vectorising them (a new `exp` line that
//! does not lower to vector code, a bounds check in the loop, a compiler
//! upgrade). Reading the disassembly for ymm/zmm registers would need the
//! built artefact, a disassembler and stable symbol names (the copies are
//! inlined and renamed under LTO), and a few stray vector instructions would
//! still pass it. Instead this measures, in one process, each copy against
//! the plain scalar transcription (`bob_core::scalar`) on the contract's
//! shape (vocabulary 256, every row live, 10 updates, one thread).
//!
//! Threshold, measured with this test on two machines of 2 noisy cores: vectorised, AVX2 is 6.9-8x and
//! AVX-512 12-14x faster than the transcription on an AVX-512 Intel host, and AVX2 3.4x on an AMD EPYC
//! without AVX-512; built with LLVM's loop and SLP vectorisers off
//! (`RUSTFLAGS="-C llvm-args=-vectorize-loops=false -C
//! llvm-args=-vectorize-slp=false"`, which also slows the transcription's own
//! auto-vectorised AdamW loop), both copies are only 1.4-1.5x faster (the
//! blocking alone). The test asks for 2.5x: about 1.7 times the unvectorised
//! ratio, and three quarters of the slowest vectorised one, near their geometric
//! mean, so it separates the two with room for noise either way (3.5x, the line
//! once drawn from the Intel host alone, failed every run on the EPYC). It
//! catches a copy that has lost its vectorisation wholesale, not a small
//! slowdown: BENCHMARKS.md tracks those.
//!
//! Noise: a measurement below the line is taken again, up to three in all. In each, each side is the best
//! of several runs, taken alternately (scalar,
//! fast, scalar, fast...), so a burst of load elsewhere on the machine slows
//! a few samples of both rather than all samples of one. The best run is the
//! one least disturbed; a ratio of minima is stable where a ratio of means is
//! not. The test is alone in its test binary, so no other test of this crate
//! competes with it for the two cores under `cargo test`. It also holds
//! without `--release` (as `scripts/test.sh` runs it): `profile.test` builds at
//! opt-level 3, where on the EPYC AVX2 measures 4.2-4.7x vectorised and 1.4x
//! with the vectorisers off.

use std::time::{Duration, Instant};

use bob_core::{initialize, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED};

const MIN_SPEEDUP: f64 = 2.5;
const N: usize = 256;
const UPDATES: u64 = 10;
const CALLS: u64 = 1;

/// Wall time of CALLS `train` calls of UPDATES updates each from a fresh
/// state: the steps a run of CALLS invocations covers (one: the ratio is the
/// same at steps 0..100, measured, and one call keeps the test at ~0.1 s).
fn time_once(kernel: Kernel, contexts: &[u32], targets: &[u32]) -> Duration {
    let mut p = vec![0f32; N * N];
    initialize(&mut p, SEED);
    let (mut m, mut v) = (vec![0f32; N * N], vec![0f32; N * N]);
    let start = Instant::now();
    for call in 0..CALLS {
        let options = Options { kernel, threads: 1 };
        Planes::new(&mut p, &mut m, &mut v)
            .and_then(|planes| train(planes, contexts, targets, call * UPDATES, UPDATES, &BOB_V1_ADAMW, options)).unwrap();
    }
    let elapsed = start.elapsed();
    std::hint::black_box(&p);
    elapsed
}

#[test]
fn avx2_and_avx512_copies_are_vectorised() {
    let fast: Vec<Kernel> = [Kernel::Avx2, Kernel::Avx512].into_iter().filter(|k| k.is_available()).collect();
    if fast.is_empty() {
        eprintln!("no AVX2 or AVX-512 on this CPU: nothing to check");
        return;
    }
    // Every row live: pair k = (k, 7k + 3 mod 256), as in examples/bench_train.
    let contexts: Vec<u32> = (0..N as u32).collect();
    let targets: Vec<u32> = (0..N as u32).map(|k| (k * 7 + 3) % N as u32).collect();

    // Warm up: page in the planes, start the CPU's clock.
    for &k in &fast {
        time_once(k, &contexts, &targets);
    }
    // Up to three measurements, until each copy passes: load on a shared machine can take a whole
    // measurement below the line now and then (3.4x once, under a full test suite beside it); an
    // unvectorised copy stays near 1.5x in every one.
    let mut failures = vec![String::new()];
    for _attempt in 0..3 {
        if failures.is_empty() {
            break;
        }
        failures = measured_failures(&fast, &contexts, &targets);
    }
    assert!(
        failures.is_empty(),
        "{}; a vectorised copy measures about 7x (AVX2) or 12x (AVX-512) and an unvectorised one about 1.5x: \
         the kernel has most likely stopped being vectorised (see this file's header)",
        failures.join("; ")
    );
}

/// One measurement: each fast copy's speedup over the transcription, best runs against best runs; the
/// copies below MIN_SPEEDUP.
fn measured_failures(fast: &[Kernel], contexts: &[u32], targets: &[u32]) -> Vec<String> {
    let mut scalar_best = Duration::MAX;
    let mut fast_best = vec![Duration::MAX; fast.len()];
    for _ in 0..9 {
        scalar_best = scalar_best.min(time_once(Kernel::Scalar, contexts, targets));
        for (best, &k) in fast_best.iter_mut().zip(fast) {
            // Fast runs are short: take several per round so that their
            // minimum is as well sampled as the scalar one.
            for _ in 0..4 {
                *best = (*best).min(time_once(k, contexts, targets));
            }
        }
    }
    let mut failures = Vec::new();
    for (best, &k) in fast_best.iter().zip(fast) {
        let ratio = scalar_best.as_secs_f64() / best.as_secs_f64();
        eprintln!(
            "{}: {:.0} us per update, scalar transcription {:.0} us: {ratio:.1}x (need {MIN_SPEEDUP}x)",
            k.name(),
            best.as_secs_f64() * 1e6 / (UPDATES * CALLS) as f64,
            scalar_best.as_secs_f64() * 1e6 / (UPDATES * CALLS) as f64,
        );
        if ratio < MIN_SPEEDUP {
            failures.push(format!("{} is only {ratio:.1}x faster than the scalar transcription", k.name()));
        }
    }
    failures
}
