//! An idle pool burns no CPU: shortly after its last call (rayon's threads
//! yield a few rounds, then sleep), every one of the core's pool threads is
//! asleep, and the process uses next to no CPU time over a second of sleep.
//! Alone in its own test binary, so that no other test's calls keep the pool
//! awake.

#![cfg(target_os = "linux")]

use std::time::Duration;

mod support;

use bob_core::{train, Kernel, Options, Planes, BOB_V1_ADAMW};

/// (name, state) of each thread of this process, from /proc/self/task.
fn threads() -> Vec<(String, char)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").expect("Linux's /proc") {
        let path = task.expect("a task entry").path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else { continue };
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default().trim().to_string();
        // The state follows the parenthesised name, which may hold spaces.
        let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next()).unwrap_or('?');
        out.push((name, state));
    }
    out
}

/// User + system CPU time of the whole process, in clock ticks.
fn process_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("Linux's /proc");
    let fields: Vec<&str> = stat.rsplit_once(") ").expect("a stat line").1.split_whitespace().collect();
    // Fields 14 and 15 of stat(5) (utime, stime); the state is field 3.
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

#[test]
fn an_idle_pool_sleeps_and_uses_no_cpu() {
    let ([mut p, mut m, mut v], [contexts, targets]) = support::all_rows_live();
    for call in 0..5 {
        let planes = Planes::new(&mut p, &mut m, &mut v).expect("a square table");
        train(planes, &contexts, &targets, 10 * call, 10, &BOB_V1_ADAMW, Options { kernel: Kernel::Auto, threads: 2 })
            .expect("valid arguments");
    }
    let pool: Vec<_> = threads().into_iter().filter(|(name, _)| name.starts_with("bob-core-")).collect();
    assert!(!pool.is_empty(), "the 2-thread calls started the core's pool");
    // Rayon's threads yield a few rounds, then sleep: on a loaded machine a yielding thread can wait its turn
    // (state R) for a while, so they are looked at until all sleep, for up to 10 s; one that spins never does.
    let asleep_by = std::time::Instant::now() + Duration::from_secs(10);
    let mut awake: Vec<_>;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        awake = threads().into_iter().filter(|(name, state)| name.starts_with("bob-core-") && *state != 'S').collect();
        if awake.is_empty() || std::time::Instant::now() > asleep_by {
            break;
        }
    }
    assert!(awake.is_empty(), "pool threads not asleep 10 s after the last call: {awake:?}");
    let before = process_ticks();
    std::thread::sleep(Duration::from_secs(1));
    let used = process_ticks() - before;
    // A thread that kept spinning would use about 100 ticks (1 s) here.
    assert!(used <= 5, "the idle process used {used} clock ticks of CPU in 1 s");
}
