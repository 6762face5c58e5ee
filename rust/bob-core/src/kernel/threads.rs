//! How a call's rows are shared among threads: the shares, the counter that
//! hands them out, the core's own pool, and how many threads a call uses.
//! Which thread runs a share changes no bit.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::rows::block_rows;
use super::{Run, Share};
use crate::Planes;

/// Below this much work (values x updates), threads cost more than they save.
pub(super) const MIN_PARALLEL_WORK: usize = 1 << 17;

/// The rows cut into shares of a few blocks, at least 16 per thread (the
/// last share decides how long the other threads idle), each with the loss
/// scratch of its slots.
pub(super) fn cut_shares<'a>(run: &Run<'_>, threads: usize, mut planes: Planes<'a>, mut logp: &'a mut [f64]) -> Vec<Share<'a>> {
    let (vocabulary, updates) = (planes.vocabulary(), run.schedule.len());
    let share_rows = (block_rows(vocabulary) * 2).max(vocabulary.div_ceil(threads * 16));
    let mut shares = Vec::new();
    let mut start = 0usize;
    while start < vocabulary {
        let end = (start + share_rows).min(vocabulary);
        let slots = (run.plan.row_offsets[end] - run.plan.row_offsets[start]) * updates;
        let (share, rest) = planes.split_rows(end - start);
        let (share_logp, rest_logp) = std::mem::take(&mut logp).split_at_mut(slots);
        shares.push(Share { first_row: start, planes: share, logp: share_logp });
        (planes, logp) = (rest, rest_logp);
        start = end;
    }
    shares
}

/// The calling thread and up to `threads - 1` pool threads take the shares
/// from a counter until none is left: a pool thread that comes late leaves
/// its shares to the others. Each share runs all its updates; nothing
/// synchronises in between, and which thread runs a share changes no bit.
pub(super) fn run_shares(pool: &rayon::ThreadPool, threads: usize, run: &Run<'_>, shares: Vec<Share<'_>>) {
    let helpers = threads.min(shares.len()) - 1;
    let shares: Vec<Mutex<Option<Share<'_>>>> = shares.into_iter().map(|share| Mutex::new(Some(share))).collect();
    let next_share = AtomicUsize::new(0);
    let helpers_working = AtomicUsize::new(0);
    let work = || {
        while let Some(share) = shares.get(next_share.fetch_add(1, Ordering::Relaxed)) {
            // Each share is taken exactly once (the counter hands out each
            // index once), so its lock is never contended.
            let taken = share.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(share) = taken {
                run.rows(share);
            }
        }
    };
    pool.in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| {
                helpers_working.fetch_add(1, Ordering::AcqRel);
                work();
                helpers_working.fetch_sub(1, Ordering::AcqRel);
            });
        }
        work();
        wait_awake_for_helpers(&helpers_working);
    });
}

/// How long the calling thread, out of shares, stays awake for pool threads
/// still running theirs. It is not one of rayon's threads, so at the end of
/// the scope it sleeps until they are done, and waking it again costs about
/// 25 µs on a 2-vCPU VM: more than a tenth of a whole 2-thread call at
/// vocabulary 256 on the AVX-512 host, whose shares take about 45 µs each.
/// Longer shares (large vocabularies, slower hosts) outlast the spin and it
/// sleeps as before.
pub(super) const AWAKE_FOR_HELPERS: std::time::Duration = std::time::Duration::from_micros(200);

/// Spins while a pool thread is inside a share, for at most
/// [`AWAKE_FOR_HELPERS`]. A pool thread that has not started yet (not
/// counted) is not waited for awake: it may be queued behind this very
/// thread on the same CPU.
pub(super) fn wait_awake_for_helpers(helpers_working: &AtomicUsize) {
    let start = std::time::Instant::now();
    while helpers_working.load(Ordering::Acquire) > 0 && start.elapsed() < AWAKE_FOR_HELPERS {
        std::hint::spin_loop();
    }
}

/// The core's own thread pool (a rayon pool of its own), started on first use and
/// kept for the process (`None` if not one thread could be started: calls
/// then run on the caller's thread, with the same bits). Not rayon's global
/// pool, which takes its size from `RAYON_NUM_THREADS` unchecked (100000
/// kept `bob.invoke` starting threads for minutes) and which other code in a
/// Rust program shares. Its size is the number of CPUs this process may
/// use, or `RAYON_NUM_THREADS` when that is a smaller positive number. It is
/// first used inside `train`'s default floating-point environment, which its
/// threads inherit, and it runs nothing but the core's shares.
///
/// A child `fork`ed from a process whose pool had started has the pool's
/// memory but none of its threads (a `ProcessPoolExecutor` worker): work
/// sent there would wait for ever, so in a process other than the one that
/// started the pool there is none, and calls run on the caller's thread.
/// A child forked while another thread was starting it has that start half
/// done and nobody to finish it: it is never waited for (a `OnceLock`'s
/// `get_or_init` would wait for ever in that child). While one thread of
/// this process starts it, the others' calls run on their own threads too.
pub(super) fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<(u32, Option<rayon::ThreadPool>)> = OnceLock::new();
    static STARTED_BY: AtomicU32 = AtomicU32::new(0); // the pid whose thread starts it (0: nobody yet)
    let here = std::process::id();
    if POOL.get().is_none() && STARTED_BY.compare_exchange(0, here, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let asked = std::env::var("RAYON_NUM_THREADS").ok().and_then(|s| s.trim().parse::<usize>().ok());
        let size = asked.filter(|&n| n > 0).map_or(cpus, |n| n.min(cpus));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(size)
            .thread_name(|i| format!("bob-core-{i}"))
            .start_handler(|_| block_process_signals())
            .build()
            .ok();
        let _ = POOL.set((here, pool)); // (only this thread of this process sets it)
    }
    POOL.get().and_then(|(started_in, pool)| pool.as_ref().filter(|_| *started_in == here))
}

/// A pool thread takes none of the signals sent to the process: the kernel
/// gives such a signal to any thread that does not block it, and a pool
/// thread would meet the default action (the process ends) where the
/// caller's thread handles the signal or holds it blocked on purpose (a
/// Python program ending: the status it printed must stay its own). The
/// signals a fault raises in the thread itself stay unblocked.
fn block_process_signals() {
    #[cfg(unix)]
    // SAFETY: the set is initialised by sigfillset before it is read, and
    // pthread_sigmask changes only this thread's mask.
    unsafe {
        let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigfillset(set.as_mut_ptr());
        let mut set = set.assume_init();
        for fault in [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGTRAP] {
            libc::sigdelset(&mut set, fault);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Threads a call uses: the caller and pool threads (as many as asked, or
/// with 0 one for small work, else the caller and all the pool's).
pub(super) fn thread_count(requested: usize, vocabulary: usize, updates: usize) -> usize {
    let wanted = if requested == 0 {
        let work = vocabulary.saturating_mul(vocabulary).saturating_mul(updates);
        if work < MIN_PARALLEL_WORK {
            1
        } else {
            pool().map_or(1, rayon::ThreadPool::current_num_threads)
        }
    } else {
        requested
    };
    wanted.clamp(1, vocabulary)
}
