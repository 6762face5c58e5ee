#![no_main]
// See src/lib.rs for what this target checks.
libfuzzer_sys::fuzz_target!(|data: &[u8]| bob_core_fuzz::kernels(data));
