//! The pool threads' shares give the contract's bits even when rayon's
//! global pool was started by other code (a Rust program shares one pool
//! with every crate in it) from a thread in a hostile floating-point
//! environment: a new thread inherits its creator's MXCSR. `train` itself
//! starts the pool in the default environment. Alone in its own test
//! binary, so that nothing else starts the pool first.
#![cfg(target_arch = "x86_64")]

use std::arch::asm;

use bob_core::{initialize, train, Kernel, Options, BOB_V1_ADAMW, SEED};

/// Flush-to-zero, denormals-are-zero and round toward zero, exceptions masked.
const HOSTILE: u32 = 0x1f80 | (1 << 15) | (1 << 6) | (0b11 << 13);

fn set_mxcsr(value: u32) {
    // SAFETY: ldmxcsr loads the 4 bytes of `value`, which sets no reserved bit.
    unsafe { asm!("ldmxcsr [{}]", in(reg) &value, options(nostack, preserves_flags)) };
}

#[test]
fn a_pool_started_in_a_hostile_environment_gives_the_default_bits() {
    // Eight shares of ~0.15 ms each: the pool thread, started ~0.03 ms into
    // the call, takes several of them.
    let n = 512;
    let mut p0 = vec![0f32; n * n];
    initialize(&mut p0, SEED);
    let (m0, v0) = (vec![0f32; n * n], vec![0f32; n * n]);
    let contexts: Vec<u32> = (0..n as u32).collect();
    let targets: Vec<u32> = (0..n as u32).map(|k| (k * 7 + 3) % n as u32).collect();
    let run = |kernel: Kernel, threads: usize| {
        let (mut p, mut m, mut v) = (p0.clone(), m0.clone(), v0.clone());
        train(&mut p, &mut m, &mut v, &contexts, &targets, 0, 10, &BOB_V1_ADAMW, Options { kernel, threads })
            .expect("valid arguments");
        [p, m, v].map(|plane| plane.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    };
    // One thread and the scalar kernel: rayon's pool is not started yet.
    let expected = run(Kernel::Scalar, 1);
    set_mxcsr(HOSTILE);
    // The pool starts here, its threads inheriting HOSTILE.
    assert!(rayon::current_num_threads() >= 1);
    set_mxcsr(0x1f80);
    let two_threads = run(Kernel::Auto, 2);
    assert!(two_threads == expected, "the pool threads' shares did not run in the default environment");
}
