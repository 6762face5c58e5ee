//! The core against its floor microbenchmarks, interleaved in one run:
//! µs per update (65,536 values at vocabulary 256) of the whole core
//! (`train`, 10 updates per call from the seeded start: steps 1 to 10) and
//! of one update's fused loops alone, on a state 5 updates in (steps 6 to 15)
//! and on the core's own start (steps 1 to 10 from zero moments: the same
//! operands for the dividers as the core's call), and of the dividers alone.
//!
//! cargo run --release -p bob-core --example floor -- [vocabulary] [threads] [rounds] [kernel]
use bob_core::floor::{time, Floor, State, FLOOR_PASSES};
use bob_core::{initialize, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(256);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(30);
    let kernel = args.get(4).and_then(|s| Kernel::from_name(s)).unwrap_or(Kernel::Auto);
    let state = State::new(n, 5);
    let start = State::new(n, 0);
    let contexts: Vec<u32> = (0..n as u32).collect();
    let targets: Vec<u32> = (0..n as u32).map(|k| (k * 7 + 3) % n as u32).collect();
    let mut core = Vec::new();
    let (mut fused, mut fused_start, mut dividers) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let mut p = vec![0f32; n * n];
        initialize(&mut p, SEED);
        let (mut m, mut v) = (vec![0f32; n * n], vec![0f32; n * n]);
        // Touch every page first: the clock is for arithmetic, not page faults.
        m.fill(std::hint::black_box(0.0));
        v.fill(std::hint::black_box(0.0));
        let clock = Instant::now();
        Planes::new(&mut p, &mut m, &mut v)
            .and_then(|planes| train(planes, &contexts, &targets, 0, 10, &BOB_V1_ADAMW, Options { kernel, threads })).unwrap();
        core.push(clock.elapsed().as_secs_f64() / 10.0);
        fused.push(time(kernel, Floor::FusedLoop, &state, threads).as_secs_f64() / FLOOR_PASSES as f64);
        fused_start.push(time(kernel, Floor::FusedLoop, &start, threads).as_secs_f64() / FLOOR_PASSES as f64);
        dividers.push(time(kernel, Floor::Dividers, &state, threads).as_secs_f64() / FLOOR_PASSES as f64);
    }
    let stats = |xs: &mut Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        (xs[xs.len() / 2] * 1e6, xs[0] * 1e6)
    };
    let (core_med, core_min) = stats(&mut core);
    let (fused_med, fused_min) = stats(&mut fused);
    let (start_med, start_min) = stats(&mut fused_start);
    let (div_med, div_min) = stats(&mut dividers);
    println!("vocabulary {n}, kernel {}, threads {threads}, {rounds} interleaved rounds (median / min, us per update)",
             kernel.resolve().name());
    println!("  core (train, 10 updates per call)  {core_med:9.1} / {core_min:9.1}");
    println!("  floor: fused loop, steps 6-15      {fused_med:9.1} / {fused_min:9.1}");
    println!("  floor: fused loop, steps 1-10      {start_med:9.1} / {start_min:9.1}");
    println!("  floor: dividers only, steps 6-15   {div_med:9.1} / {div_min:9.1}");
    println!("  core / fused-loop floor, 6-15      {:9.2} / {:9.2}", core_med / fused_med, core_min / fused_min);
    println!("  core / fused-loop floor, 1-10      {:9.2} / {:9.2}", core_med / start_med, core_min / start_min);
}
