//! What the pool tests share.

use bob_core::{initialize, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED};

/// P, M and V, then the contexts and the targets of the pairs.
pub type State = ([Vec<f32>; 3], [Vec<u32>; 2]);

/// A seeded state at vocabulary 256 (P from the seed, M and V zero) and one
/// pair for every row.
pub fn all_rows_live() -> State {
    let n = 256;
    let mut p = vec![0f32; n * n];
    initialize(&mut p, SEED);
    let contexts: Vec<u32> = (0..n as u32).collect();
    let targets: Vec<u32> = (0..n as u32).map(|k| (k * 7 + 3) % n as u32).collect();
    ([p, vec![0f32; n * n], vec![0f32; n * n]], [contexts, targets])
}

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").expect("Linux's /proc").count()
}

/// The threads a first 2-thread call starts (the core's pool), after checking
/// that the call gives the scalar reference's bits, and that a 1-thread call
/// before it started none (bob-run's one call would pay for the pool).
#[allow(dead_code)] // each test binary compiles this module and uses only its part
pub fn threads_started_by_a_two_thread_call() -> usize {
    let ([p0, m0, v0], [contexts, targets]) = all_rows_live();
    let run = |kernel: Kernel, threads: usize| {
        let (mut p, mut m, mut v) = (p0.clone(), m0.clone(), v0.clone());
        Planes::new(&mut p, &mut m, &mut v)
            .and_then(|planes| train(planes, &contexts, &targets, 0, 10, &BOB_V1_ADAMW, Options { kernel, threads }))
            .expect("valid arguments");
        [p, m, v].map(|plane| plane.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
    };
    let expected = run(Kernel::Scalar, 1);
    let before = thread_count();
    assert!(run(Kernel::Auto, 1) == expected, "a 1-thread call gave other bits");
    assert_eq!(thread_count(), before, "a 1-thread call started threads");
    let two_threads = run(Kernel::Auto, 2);
    let started = thread_count() - before;
    assert!(two_threads == expected, "a 2-thread call gave other bits");
    started
}
