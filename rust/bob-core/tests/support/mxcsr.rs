//! x86_64's floating-point environment register, for the tests that call
//! the core from a hostile one. Each test binary uses part of it.
#![allow(dead_code)]

use std::arch::asm;

/// Exceptions masked, round to nearest, no flush-to-zero, no denormals-are-zero.
pub const DEFAULT: u32 = 0x1f80;
pub const FLUSH_TO_ZERO: u32 = 1 << 15;
pub const DENORMALS_ARE_ZERO: u32 = 1 << 6;
pub const ROUND_TOWARD_ZERO: u32 = 0b11 << 13;
pub const ROUND_UP: u32 = 0b10 << 13;
/// The six sticky exception flags: every inexact operation sets one, so they
/// are status, not environment, and left out of comparisons.
pub const FLAGS: u32 = 0x3f;

pub fn read() -> u32 {
    let mut value = 0u32;
    // SAFETY: stmxcsr writes the 4 bytes it is pointed at, which are `value`.
    unsafe { asm!("stmxcsr [{}]", in(reg) &mut value, options(nostack, preserves_flags)) };
    value
}

/// Sets MXCSR on this thread. Every value the tests use has only defined bits
/// set, or was read from the register.
pub fn write(value: u32) {
    // SAFETY: ldmxcsr reads the 4 bytes it is pointed at; it faults only on
    // a reserved bit, which none of the values written here has.
    unsafe { asm!("ldmxcsr [{}]", in(reg) &value, options(nostack, preserves_flags)) };
}

/// Runs `f` with MXCSR set to `value` on this thread, then restores it.
/// `f` only calls into the crate: the test's own arithmetic stays outside.
pub fn with<T>(value: u32, f: impl FnOnce() -> T) -> T {
    let saved = read();
    write(value);
    let result = std::hint::black_box(f());
    write(saved);
    result
}
