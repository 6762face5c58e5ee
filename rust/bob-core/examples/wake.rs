//! What a 2-thread call pays to the operating system, apart from its work:
//! how long the calling thread spends waking a sleeping rayon pool thread
//! (the spawn), how late that thread starts, and how late a calling thread
//! that went to sleep waiting for it is woken again (the join). The floor
//! microbenchmarks start their threads before the clock and pay none of this;
//! `train` pays the first two on every call, and the third when the calling
//! thread sleeps (see `AWAKE_FOR_HELPERS` in kernel.rs).
//!
//! Each round: the calling thread runs for 2 ms, or sleeps for 2 ms with
//! `idle` (the pool threads go to sleep either way, as between two calls),
//! then asks for one pool thread (whose job takes 300 µs) and works for
//! 100 µs itself. It asks either with
//! one `spawn` (rayon wakes one sleeping thread) or, with `broadcast`, with
//! `spawn_broadcast` (every pool thread is woken; the first to start takes
//! the work, the others return).
//!
//! cargo run --release -p bob-core --example wake -- [rounds] [idle] [broadcast]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn busy(time: Duration) {
    let start = Instant::now();
    while start.elapsed() < time {
        std::hint::spin_loop();
    }
}

fn quartiles(mut xs: Vec<f64>) -> String {
    xs.sort_by(f64::total_cmp);
    let at = |q: usize| xs[(xs.len() - 1) * q / 4];
    format!("{:7.1} {:7.1} {:7.1} {:7.1}", at(0), at(1), at(2), at(3))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rounds: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let idle = args.iter().any(|a| a == "idle");
    let broadcast = args.iter().any(|a| a == "broadcast");
    rayon::in_place_scope(|scope| scope.spawn(|_| {})); // start the pool
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let (mut spawn, mut start, mut join) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        if idle {
            std::thread::sleep(Duration::from_millis(2));
        } else {
            busy(Duration::from_millis(2));
        }
        let clock = Instant::now();
        let started = AtomicU64::new(0);
        let finished = AtomicU64::new(0);
        let taken = AtomicBool::new(false);
        let job = || {
            if !taken.swap(true, Ordering::AcqRel) {
                started.store(clock.elapsed().as_nanos() as u64, Ordering::Release);
                busy(Duration::from_micros(300));
                finished.store(clock.elapsed().as_nanos() as u64, Ordering::Release);
            }
        };
        rayon::in_place_scope(|scope| {
            if broadcast {
                scope.spawn_broadcast(|_, _| job());
            } else {
                scope.spawn(|_| job());
            }
            spawn.push(micros(clock.elapsed()));
            busy(Duration::from_micros(100)); // done first: sleeps in the scope's latch
        });
        let joined = clock.elapsed().as_nanos() as u64;
        start.push(started.load(Ordering::Acquire) as f64 / 1e3);
        join.push((joined - finished.load(Ordering::Acquire)) as f64 / 1e3);
    }
    let how = if broadcast { "spawn_broadcast" } else { "spawn" };
    let before = if idle { "asleep" } else { "busy" };
    println!("{rounds} rounds, {how}, caller {before} before, µs:  min     p25  median     p75");
    println!("  spawn: the caller's cost      {}", quartiles(spawn));
    println!("  the pool thread starts after  {}", quartiles(start));
    println!("  join: the caller wakes after  {}", quartiles(join));
}
