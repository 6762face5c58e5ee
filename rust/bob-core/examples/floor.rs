//! The core against its floor microbenchmarks, interleaved in one run:
//! µs per update (65,536 values at vocabulary 256) of the whole core
//! (`train`, one invocation's updates per call from the seeded start) and
//! of one update's fused loops alone, on a state 5 updates in (the next
//! invocation's steps from there) and on the core's own start (the first
//! invocation's steps from zero moments: the same
//! operands for the dividers as the core's call), and of the dividers alone.
//!
//! cargo run --release -p bob-core --example floor -- [vocabulary] [threads] [rounds] [kernel]
use bob_core::floor::{time, Floor, State, FLOOR_PASSES};
use bob_core::{initialize, train, Kernel, Options, Planes, BOB_V1_ADAMW, SEED, UPDATES_PER_INVOCATION};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(256);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(30);
    let kernel = args.get(4).and_then(|s| Kernel::from_name(s)).unwrap_or(Kernel::Auto);
    let state = State::new(n, 5).expect("a state 5 updates in");
    let start = State::new(n, 0).expect("the seeded start");
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
            .and_then(|planes| train(planes, &contexts, &targets, 0, UPDATES_PER_INVOCATION, &BOB_V1_ADAMW, Options { kernel, threads }))
            .unwrap();
        core.push(clock.elapsed().as_secs_f64() / UPDATES_PER_INVOCATION as f64);
        let floor = |floor, state| {
            time(kernel, floor, state, threads).expect("the floor's threads").as_secs_f64() / FLOOR_PASSES as f64
        };
        fused.push(floor(Floor::FusedLoop, &state));
        fused_start.push(floor(Floor::FusedLoop, &start));
        dividers.push(floor(Floor::Dividers, &state));
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
    let u = UPDATES_PER_INVOCATION;
    let (later, first) = (format!("6-{}", 5 + u), format!("1-{u}"));
    println!("  {:<35}{core_med:9.1} / {core_min:9.1}", format!("core (train, {u} updates per call)"));
    println!("  {:<35}{fused_med:9.1} / {fused_min:9.1}", format!("floor: fused loop, steps {later}"));
    println!("  {:<35}{start_med:9.1} / {start_min:9.1}", format!("floor: fused loop, steps {first}"));
    println!("  {:<35}{div_med:9.1} / {div_min:9.1}", format!("floor: dividers only, steps {later}"));
    println!("  {:<35}{:9.2} / {:9.2}", format!("core / fused-loop floor, {later}"), core_med / fused_med, core_min / fused_min);
    println!("  {:<35}{:9.2} / {:9.2}", format!("core / fused-loop floor, {first}"), core_med / start_med, core_min / start_min);
}
