//! The IEEE default floating-point environment for the length of a call.
//!
//! Every bit the contract pins assumes round-to-nearest-even with subnormals
//! kept as they are. The environment is per thread and anything in the
//! process can change it: a shared object built with `-ffast-math` sets
//! flush-to-zero and denormals-are-zero when it is loaded, `fesetround`
//! changes the rounding mode. Under either, the same code gives other bits,
//! predicts another token, and accepts a state at step 0 whose moments are
//! subnormal. So the crate's entry points (`train`, `predict`,
//! `initialize`, `resume_state_problem`) run in the default environment
//! and give the caller's back afterwards, its exception flags included. The
//! core's pool threads are started inside `train`, so they inherit the
//! default environment, and they run nothing but the core's shares. The
//! building blocks (`pinned`, `scalar`, `AdamW`'s methods) compute in
//! whatever environment they are called in.
//!
//! On x86_64 the environment is MXCSR. On other targets nothing is changed
//! (their environment registers are not handled yet).

/// The default environment while `f` runs on this thread. `f` runs in a
/// function the compiler does not inline, so none of its floating-point
/// work can be moved to before the switch or after the switch back. (Public
/// for the binding, whose callers' own float analysis runs in it too.)
pub fn in_default_environment<T>(f: impl FnOnce() -> T) -> T {
    let _restore_on_drop = Saved::switch_to_default();
    not_inlined(f)
}

#[inline(never)]
fn not_inlined<T>(f: impl FnOnce() -> T) -> T {
    f()
}

#[cfg(target_arch = "x86_64")]
mod register {
    use std::arch::asm;

    /// All exceptions masked, round to nearest even, no flush-to-zero, no
    /// denormals-are-zero, no exception flags: MXCSR at process start.
    pub(super) const DEFAULT: u32 = 0x1f80;

    pub(super) fn read() -> u32 {
        let mut value = 0u32;
        // SAFETY: stmxcsr stores 4 bytes at the address given, `value`'s.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut value, options(nostack, preserves_flags)) };
        value
    }

    pub(super) fn write(value: u32) {
        // SAFETY: ldmxcsr loads 4 bytes from `value`. It faults only on
        // reserved bits set; `value` is DEFAULT or a value read from the
        // register itself.
        unsafe { asm!("ldmxcsr [{}]", in(reg) &value, options(nostack, preserves_flags)) };
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod register {
    pub(super) const DEFAULT: u32 = 0;
    pub(super) fn read() -> u32 {
        DEFAULT
    }
    pub(super) fn write(_: u32) {}
}

/// The caller's environment, written back when dropped (on unwinding too).
struct Saved(u32);

impl Saved {
    fn switch_to_default() -> Saved {
        let saved = register::read();
        register::write(register::DEFAULT);
        Saved(saved)
    }
}

impl Drop for Saved {
    fn drop(&mut self) {
        register::write(self.0);
    }
}
