//! Times the core at vocabulary 256 with all rows live (no Python).
//! cargo run --release -p bob-core --example bench_train -- [threads] [kernel] [vocabulary]
use bob_core::{initialize, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED, UPDATES_PER_INVOCATION};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let kernel = args.get(2).and_then(|s| Kernel::from_name(s)).unwrap_or(Kernel::Auto);
    let n: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(256);
    // Every row live: pair k = (k, k * 7 + 3 mod n).
    let contexts: Vec<u32> = (0..n as u32).collect();
    let targets: Vec<u32> = (0..n as u32).map(|k| (k * 7 + 3) % n as u32).collect();
    let options = Options { kernel, threads };
    let mut best = f64::INFINITY;
    for _ in 0..30 {
        // Each repeat trains a fresh state through the steps a run of ten
        // invocations covers (a state trained for thousands of
        // steps drifts toward subnormal moments, which time differently).
        let mut p = vec![0f32; n * n];
        initialize(&mut p, SEED);
        let mut m = vec![0f32; n * n];
        let mut v = vec![0f32; n * n];
        let t0 = Instant::now();
        for call in 0..10u64 {
            let (step, updates) = (call * UPDATES_PER_INVOCATION, UPDATES_PER_INVOCATION);
            Planes::new(&mut p, &mut m, &mut v)
                .and_then(|planes| train(planes, &contexts, &targets, step, updates, &BOB_V1_ADAMW, options)).unwrap();
        }
        best = best.min(t0.elapsed().as_secs_f64() / (10 * UPDATES_PER_INVOCATION) as f64);
    }
    println!(
        "vocabulary {n}, all rows live, kernel {}, threads {threads}: {:.1} us per update (best of 30 runs of 10 x {} updates from a fresh state)",
        kernel.resolve().name(),
        best * 1e6,
        UPDATES_PER_INVOCATION
    );
}
