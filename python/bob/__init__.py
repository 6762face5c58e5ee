"""bob: binary formats and a Rust-backed deterministic FP32 training run."""
