//! `RAYON_NUM_THREADS` smaller than the machine sizes the core's pool (D18):
//! a user who limits threads is obeyed. Alone in its own test binary: the
//! pool is sized once per process, on first use, and the variable must be
//! set before any thread could read the environment.

#![cfg(target_os = "linux")]

mod support;

#[test]
fn rayon_num_threads_one_gives_a_pool_of_one_thread() {
    std::env::set_var("RAYON_NUM_THREADS", " 1 ");
    let started = support::threads_started_by_a_two_thread_call();
    assert_eq!(started, 1, "RAYON_NUM_THREADS=1 (spaces around it) is a pool of one thread");
}
