//! The core's own thread pool: helper threads that stay awake for a moment
//! after a call, so that back-to-back calls do not each pay a wake-up, and
//! then park, so that an idle process burns no CPU.
//!
//! A call publishes one job (the calling thread's share loop, which takes
//! shares from a counter) for its first `helpers` threads, runs the same
//! loop itself, then retracts the job and waits for the helpers that are
//! inside it. A helper that comes late finds the job retracted, or its
//! shares all taken, and does nothing: which thread runs a share changes no
//! bit of the result.
//!
//! Waking a parked thread costs the caller a system call, and the thread
//! starts tens of microseconds later (more on a loaded machine); at
//! vocabulary 256 a 2-thread call takes about 200 µs in all. A helper that
//! has just run a job therefore spins for [`SPIN`] before it parks, and a
//! call made within that time finds it awake. Helpers beyond a call's
//! `helpers` are not woken by it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long a helper that ran a job stays awake for the next one. Longer
/// than the gap between two calls a Python loop makes (tens of µs), short
/// enough that an idle process spends a millisecond of CPU per helper once.
const SPIN: Duration = Duration::from_millis(1);

/// How long the calling thread spins for helpers still inside its job
/// before it parks until the last one leaves (long shares at large
/// vocabularies outlast it).
const CALLER_SPIN: Duration = Duration::from_micros(200);

/// One call's job, on the calling thread's stack while it is published.
struct Job<'a> {
    work: &'a (dyn Fn() + Sync),
    /// Helpers 0..helpers run it; the others leave it alone.
    helpers: usize,
    caller: Thread,
    panicked: AtomicBool,
}

struct Shared {
    /// The published job, or null. Only dereferenced by a helper counted in
    /// `inside`, and the caller waits for `inside` to fall to 0 after it
    /// sets this back to null and before the job leaves its stack.
    job: AtomicPtr<Job<'static>>,
    /// Bumped when a job is published: a helper runs each job once.
    epoch: AtomicU64,
    /// Helpers between reading `job` and being done with it.
    inside: AtomicUsize,
}

/// The helpers: started once, kept for the process.
pub(super) struct Pool {
    shared: Arc<Shared>,
    threads: Vec<Thread>,
}

impl Pool {
    /// `size` helper threads named `bob-core-<i>`, or `None` if not one could
    /// be started. They inherit the floating-point environment of the
    /// thread that starts them.
    pub(super) fn start(size: usize) -> Option<Pool> {
        let shared =
            Arc::new(Shared { job: AtomicPtr::new(std::ptr::null_mut()), epoch: AtomicU64::new(0), inside: AtomicUsize::new(0) });
        let mut threads = Vec::new();
        for index in 0..size {
            let for_helper = Arc::clone(&shared);
            let started = std::thread::Builder::new()
                .name(format!("bob-core-{index}"))
                .spawn(move || helper(&for_helper, index));
            match started {
                Ok(handle) => threads.push(handle.thread().clone()),
                Err(_) => break,
            }
        }
        (!threads.is_empty()).then_some(Pool { shared, threads })
    }

    /// Helper threads in the pool.
    pub(super) fn size(&self) -> usize {
        self.threads.len()
    }

    /// Runs `work` on this thread and on up to `helpers` pool threads at
    /// once; returns when every one of them is out of it. A panic in a
    /// helper's `work` is raised here again.
    pub(super) fn run(&self, helpers: usize, work: &(dyn Fn() + Sync)) {
        let helpers = helpers.min(self.threads.len());
        if helpers == 0 {
            return work();
        }
        let job = Job { work, helpers, caller: std::thread::current(), panicked: AtomicBool::new(false) };
        let retract = Retract { shared: &self.shared };
        // SAFETY of the lifetime cast: `retract`'s drop (on return and on
        // unwinding) nulls the pointer and waits until no helper is inside,
        // so no helper reads `job` after this frame ends.
        let erased = (&job as *const Job<'_>).cast::<Job<'static>>().cast_mut();
        self.shared.job.store(erased, SeqCst);
        self.shared.epoch.fetch_add(1, SeqCst);
        for thread in &self.threads[..helpers] {
            // No system call unless the helper is parked.
            thread.unpark();
        }
        work();
        drop(retract);
        if job.panicked.load(SeqCst) {
            panic!("a bob-core pool thread panicked in a share");
        }
    }
}

/// Takes the job back and waits for the helpers inside it (also when the
/// caller's own share panics, before its frame unwinds). Two callers on two
/// threads at once are safe: each runs all of its own shares that no helper
/// took, and each waits until no helper is inside any job.
struct Retract<'s> {
    shared: &'s Shared,
}

impl Drop for Retract<'_> {
    fn drop(&mut self) {
        self.shared.job.store(std::ptr::null_mut(), SeqCst);
        let start = Instant::now();
        while self.shared.inside.load(SeqCst) > 0 {
            if start.elapsed() < CALLER_SPIN {
                std::hint::spin_loop();
            } else {
                // The last helper out unparks this thread; the timeout only
                // bounds a wake-up lost to an unpark meant for an earlier call.
                std::thread::park_timeout(Duration::from_millis(1));
            }
        }
    }
}

fn helper(shared: &Shared, index: usize) {
    let mut seen = shared.epoch.load(SeqCst);
    // When the last job this helper ran ended. A new helper parks at once:
    // the call that starts the pool wakes the ones it uses, and a helper it
    // does not use would only take CPU from those that work.
    let mut ran_at: Option<Instant> = None;
    loop {
        let mut polls = 0u32;
        while shared.epoch.load(SeqCst) == seen {
            polls = polls.wrapping_add(1);
            if polls % 64 != 0 {
                std::hint::spin_loop();
            } else if ran_at.is_some_and(|at| at.elapsed() < SPIN) {
                // On a busy machine, let a runnable thread (the caller's,
                // perhaps) have the CPU; on an idle one this returns at once.
                std::thread::yield_now();
            } else {
                // Returns at once if a call unparked this thread since its
                // last park; the loop checks the epoch again either way.
                std::thread::park();
            }
        }
        seen = shared.epoch.load(SeqCst);
        // Counted first, then the job read: a caller that nulls the job and
        // then finds `inside` at 0 knows this thread will not read it.
        shared.inside.fetch_add(1, SeqCst);
        let job = shared.job.load(SeqCst);
        let mut caller = None;
        if !job.is_null() {
            // SAFETY: the job stays on its caller's stack until the caller,
            // having nulled the pointer, sees `inside` at 0, and this thread
            // is counted in `inside` until after its last use of `job`.
            let job = unsafe { &*job };
            if index < job.helpers {
                if catch_unwind(AssertUnwindSafe(job.work)).is_err() {
                    job.panicked.store(true, SeqCst);
                }
                ran_at = Some(Instant::now());
            }
            caller = Some(job.caller.clone());
        }
        // The last one out wakes the caller if it parked waiting.
        if shared.inside.fetch_sub(1, SeqCst) == 1 {
            if let Some(caller) = caller {
                caller.unpark();
            }
        }
    }
}
