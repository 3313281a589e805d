//! The canonical execution path: deterministic, single-threaded, pure-Rust f32 math.
//!
//! Rules that make results bit-identical on every machine, thread count and build profile:
//! - every reduction is a plain sequential loop in a fixed, documented order (index 0 first);
//!   LLVM never reorders or vectorises such float reductions without fast-math flags;
//! - products and sums are separate operations (`acc = acc + a * b`): Rust never contracts
//!   them into a fused multiply-add;
//! - `exp`, `tanh`, `erf`, `sqrt` come from the pure-Rust `libm` crate, not the platform;
//! - no threads, no SIMD intrinsics, no hash-ordered iteration. The compiler may still run
//!   several *independent* sums per instruction (the linear layer's outputs side by side):
//!   each lane does the same multiply and add in the same order, so the bits do not change.
//!
//! Verifiers use this path to settle disputes; fast paths are compared with it by tolerance.

pub mod bert;
pub mod cnn;
pub mod math;
pub mod mlp;
