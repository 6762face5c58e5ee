//! `RAYON_NUM_THREADS` larger than the machine does not size the core's pool
//! (D18): 100000 would have kept a call starting threads for minutes. Alone
//! in its own test binary: the pool is sized once per process, on first
//! use, and the variable must be set before any thread could read the
//! environment.

#![cfg(target_os = "linux")]

mod support;

#[test]
fn rayon_num_threads_beyond_the_cpus_gives_a_pool_of_the_cpus() {
    std::env::set_var("RAYON_NUM_THREADS", "100000");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = support::threads_started_by_a_two_thread_call();
    assert_eq!(started, cpus, "the pool has as many threads as the CPUs this process may use");
}
