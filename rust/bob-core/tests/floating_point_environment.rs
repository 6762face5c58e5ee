//! The core's entry points give the contract's bits whatever floating-point
//! environment the calling thread is in. Another library loaded into the same
//! process can change it: a shared object built with `-ffast-math` sets
//! flush-to-zero and denormals-are-zero on load, and `fesetround` changes the
//! rounding mode. On x86_64 all of it lives in MXCSR, per thread. Each test
//! computes the expected result in the default environment, then calls the
//! entry point with MXCSR changed on the calling thread.
#![cfg(target_arch = "x86_64")]

#[path = "support/mxcsr.rs"]
mod mxcsr;

use bob_core::{initialize, predict, resume_state_problem, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED};
use mxcsr::{DEFAULT, DENORMALS_ARE_ZERO, FLAGS, FLUSH_TO_ZERO, ROUND_TOWARD_ZERO, ROUND_UP};

/// The environments a library might leave behind.
const HOSTILE: [(&str, u32); 4] = [
    ("flush-to-zero and denormals-are-zero", DEFAULT | FLUSH_TO_ZERO | DENORMALS_ARE_ZERO),
    ("denormals-are-zero", DEFAULT | DENORMALS_ARE_ZERO),
    ("round toward zero", DEFAULT | ROUND_TOWARD_ZERO),
    ("round up", DEFAULT | ROUND_UP),
];

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// A state 3 updates in whose planes hold subnormals (what DAZ reads as zero
/// and FTZ makes zero), beside ordinary values.
fn state_with_subnormals(n: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut p = vec![0f32; n * n];
    initialize(&mut p, SEED);
    let mut m: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 1e-3 - 3e-3).collect();
    let mut v: Vec<f32> = (0..n * n).map(|i| (i % 5) as f32 * 1e-5).collect();
    for i in (0..n * n).step_by(3) {
        let subnormal = f32::from_bits(1 + (i as u32).wrapping_mul(2_654_435_761) % 0x7f_ffff);
        p[i] = if i % 2 == 0 { subnormal } else { -subnormal };
        m[i] = -subnormal;
        v[i] = subnormal;
    }
    (p, m, v)
}

#[test]
fn train_gives_the_default_environments_bits_in_any_environment() {
    let n = 64;
    // Rows 32..64 have no pairs (g = +0.0): their moments only decay, so a
    // subnormal moment stays subnormal, and flush-to-zero would zero it.
    let contexts: Vec<u32> = (0..200).map(|k| (k * 13 % 32) as u32).collect();
    let targets: Vec<u32> = (0..200).map(|k| (k * 29 % n) as u32).collect();
    let (p0, m0, v0) = state_with_subnormals(n);
    let run = |kernel: Kernel, threads: usize, environment: u32| {
        let (mut p, mut m, mut v) = (p0.clone(), m0.clone(), v0.clone());
        let losses = mxcsr::with(environment, || {
            Planes::new(&mut p, &mut m, &mut v)
                .and_then(|planes| train(planes, &contexts, &targets, 3, 12, &BOB_V1_ADAMW, Options { kernel, threads }))
        })
        .expect("valid arguments");
        (bits(&p), bits(&m), bits(&v), losses.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    };
    let expected = run(Kernel::Scalar, 1, DEFAULT);
    for (name, environment) in HOSTILE {
        for kernel in Kernel::ALL.into_iter().filter(|k| k.is_available()) {
            for threads in [1, 2] {
                assert!(
                    run(kernel, threads, environment) == expected,
                    "train with {name}, kernel {}, {threads} threads: not the default environment's bits",
                    kernel.name()
                );
            }
        }
        assert_eq!(mxcsr::read() & !FLAGS, DEFAULT, "the test thread's environment was not given back");
    }
}

#[test]
fn train_gives_the_callers_environment_back() {
    let n = 16;
    let (mut p, mut m, mut v) = state_with_subnormals(n);
    for (name, environment) in HOSTILE {
        let after = mxcsr::with(environment, || {
            Planes::new(&mut p, &mut m, &mut v)
                .and_then(|planes| train(planes, &[1, 2], &[3, 4], 3, 1, &BOB_V1_ADAMW, Options::default())).expect("valid");
            mxcsr::read()
        });
        assert_eq!(after & !FLAGS, environment, "train left MXCSR changed under {name}");
    }
}

#[test]
fn predict_gives_the_default_environments_tokens_in_any_environment() {
    // Row 1's largest value is a subnormal: denormals-are-zero would make it
    // tie with the 0.0 at index 0, and the lowest index would win.
    let n = 8;
    let mut p = vec![-1.0f32; n * n];
    p[n] = 0.0;
    p[n + 5] = f32::from_bits(1);
    let words = [1u32, 0, u32::MAX];
    let expected = predict(&p, &words).expect("valid");
    assert_eq!(expected[0], (5, 1));
    for (name, environment) in HOSTILE {
        assert_eq!(mxcsr::with(environment, || predict(&p, &words)).expect("valid"), expected, "predict with {name}");
    }
}

#[test]
fn the_entry_points_raise_no_exception_flag_in_the_callers_environment() {
    // What they compute raises flags in the default environment they switch
    // to; the caller's are given back as they were, none raised. (A length
    // the compiler cannot see: a known one is folded, its flags with it.)
    let n = std::hint::black_box(8);
    let (mut p, mut m, mut v) = (vec![0f32; n * n], vec![0f32; n * n], vec![0f32; n * n]);
    let after = mxcsr::with(DEFAULT, || {
        initialize(&mut p, SEED);
        predict(&p, &[1, 2]).expect("valid");
        resume_state_problem(&p, &m, &v, 0, 10);
        Planes::new(&mut p, &mut m, &mut v)
            .and_then(|planes| train(planes, &[1, 2], &[3, 4], 0, 2, &BOB_V1_ADAMW, Options::default()))
            .expect("valid");
        mxcsr::read()
    });
    assert_eq!(after, DEFAULT, "an exception flag was raised in the caller's environment");
}

#[test]
fn initialize_gives_the_default_environments_bits_in_any_environment() {
    let mut expected = vec![0f32; 4096];
    initialize(&mut expected, SEED);
    for (name, environment) in HOSTILE {
        let mut p = vec![0f32; 4096];
        mxcsr::with(environment, || initialize(&mut p, SEED));
        assert!(bits(&p) == bits(&expected), "initialize with {name}: not the default environment's bits");
    }
}

#[test]
fn the_state_check_refuses_subnormal_moments_in_any_environment() {
    // At step 0 both moments must be exactly zero (§5); a subnormal is not
    // zero, and a negative subnormal V is negative, whatever DAZ says.
    let n = 4;
    let p = vec![0f32; n * n];
    let (mut m, mut v) = (vec![0f32; n * n], vec![0f32; n * n]);
    m[5] = f32::from_bits(1);
    let expected_moments = resume_state_problem(&p, &m, &v, 0, 10);
    assert!(expected_moments.is_some());
    m[5] = 0.0;
    v[7] = -f32::from_bits(3);
    let expected_negative = resume_state_problem(&p, &m, &v, 4, 10);
    assert!(expected_negative.is_some());
    for (name, environment) in HOSTILE {
        assert_eq!(mxcsr::with(environment, || resume_state_problem(&p, &m, &v, 4, 10)), expected_negative, "{name}");
        v[7] = 0.0;
        m[5] = f32::from_bits(1);
        assert_eq!(mxcsr::with(environment, || resume_state_problem(&p, &m, &v, 0, 10)), expected_moments, "{name}");
        m[5] = 0.0;
        v[7] = -f32::from_bits(3);
    }
}
