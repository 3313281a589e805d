//! How the process's heap treats freed memory: handed back to the operating system once a
//! model is loaded, kept for reuse while it runs.
//!
//! Loading a model allocates and frees far more than it keeps: tensors are copied out of the
//! file and then stacked or reordered into the matrices the decoder keeps, and the GGUF
//! metadata (tens of thousands of token strings and merges) is parsed and dropped. glibc's
//! allocator keeps freed memory between live blocks mapped for later use, so a loaded
//! SmolLM2-135M stayed about 21 MiB above what it holds (measured: 144 MiB resident
//! against 123 MiB once that memory is returned). Serving keeps a model loaded for hours, so
//! the memory goes back once, right after loading.

/// Returns the heap's free pages to the operating system (glibc's `malloc_trim`); a no-op
/// elsewhere.
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: `malloc_trim` takes no pointers and only releases pages that hold no live
        // allocation; glibc locks each arena while it works, so it is safe to call while
        // other threads allocate.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Makes glibc keep freed heap memory for the next allocation instead of returning it to the
/// operating system at once (once a process; a no-op elsewhere): blocks up to 32 MiB come
/// from the heap, and up to 256 MiB of free memory at its top stays mapped. A decoder pass
/// allocates its per-layer buffers again for every layer (12 MB each at a 1,000-token
/// prompt); with glibc's own thresholds, which move with what was freed last, most of them
/// were fresh mappings whose pages the kernel zeroed on first touch: 632,000 page faults in
/// two 1,000-token passes, against 70,000 so, and the prefill about 7% faster. The price
/// is that a process keeps the memory of its largest pass until [`release_freed`] or its end.
pub fn keep_freed_for_reuse() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            extern "C" {
                fn mallopt(param: i32, value: i32) -> i32;
            }
            // glibc's `malloc.h`.
            const M_TRIM_THRESHOLD: i32 = -1;
            const M_MMAP_THRESHOLD: i32 = -3;
            // SAFETY: `mallopt` takes two integers and sets the allocator's thresholds under
            // its arena lock; 32 MiB is glibc's largest accepted mmap threshold on 64-bit.
            unsafe {
                mallopt(M_MMAP_THRESHOLD, 32 << 20);
                mallopt(M_TRIM_THRESHOLD, 256 << 20);
            }
        });
    }
}
