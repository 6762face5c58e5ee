//! The core's pool threads compute in the default floating-point environment
//! even when the process's first call into the core, which starts the pool,
//! comes from a thread in a hostile one (a new thread inherits its creator's
//! MXCSR), and when other code started rayon's global pool from such a
//! thread (the core does not use that pool). Alone in its own test binary,
//! so that nothing else starts either pool first.
#![cfg(target_arch = "x86_64")]

#[path = "support/mxcsr.rs"]
mod mxcsr;

use bob_core::{initialize, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED};
use mxcsr::{DEFAULT, DENORMALS_ARE_ZERO, FLUSH_TO_ZERO, ROUND_TOWARD_ZERO};

/// Flush-to-zero, denormals-are-zero and round toward zero, exceptions masked.
const HOSTILE: u32 = DEFAULT | FLUSH_TO_ZERO | DENORMALS_ARE_ZERO | ROUND_TOWARD_ZERO;

#[test]
fn pools_started_from_a_hostile_thread_give_the_default_bits() {
    // Eight shares of ~0.15 ms each: a pool thread, started ~0.03 ms into
    // the call, takes several of them.
    let n = 512;
    let mut p0 = vec![0f32; n * n];
    initialize(&mut p0, SEED);
    let (m0, v0) = (vec![0f32; n * n], vec![0f32; n * n]);
    let contexts: Vec<u32> = (0..n as u32).collect();
    let targets: Vec<u32> = (0..n as u32).map(|k| (k * 7 + 3) % n as u32).collect();
    let run = |kernel: Kernel, threads: usize| {
        let (mut p, mut m, mut v) = (p0.clone(), m0.clone(), v0.clone());
        Planes::new(&mut p, &mut m, &mut v)
            .and_then(|planes| train(planes, &contexts, &targets, 0, 10, &BOB_V1_ADAMW, Options { kernel, threads }))
            .expect("valid arguments");
        [p, m, v].map(|plane| plane.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    };
    // One thread and the scalar kernel: no pool is started yet.
    let expected = run(Kernel::Scalar, 1);
    mxcsr::write(HOSTILE);
    // Other code starts rayon's global pool; its threads inherit HOSTILE.
    assert!(rayon::current_num_threads() >= 1);
    // The core's first 2-thread call starts the core's pool from here.
    let two_threads = std::hint::black_box(run(Kernel::Auto, 2));
    mxcsr::write(DEFAULT);
    assert!(two_threads == expected, "a pool thread's shares did not run in the default environment");
}
