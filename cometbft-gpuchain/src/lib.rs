//! The gpuchain app behind a C interface, for `cometbft-gpuchain`: CometBFT's own node,
//! built from its Go module with this library linked in (main.go beside this crate), so
//! the app answers inside CometBFT's process instead of over the ABCI socket.
//!
//! The interface is three calls: [`gpuchain_open`] once with the app's home,
//! [`gpuchain_call`] per ABCI request, or per run of CheckTx requests (length-prefixed
//! protobuf bytes in and out, as on the socket), and
//! [`gpuchain_free`] for every buffer handed back. No panic crosses into Go: a panic while
//! answering aborts the process, as the app's own halts do (a half-applied block must not
//! go on being served), and a request the app cannot decode, or a call before the app is
//! open, is an error the Go side stops the node on.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::OnceLock;

use gpuchain_node::in_process::InProcess;

/// Executing a block allocates and frees small objects by the hundred thousand; mimalloc
/// serves them in well under half glibc's time (as in `gpuchaind`). Go's own heap is apart.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

static APP: OnceLock<InProcess> = OnceLock::new();

/// Bytes handed to the caller, who returns them with [`gpuchain_free`].
#[repr(C)]
pub struct GpuchainBuf {
    /// First byte.
    pub ptr: *mut u8,
    /// Bytes in use.
    pub len: usize,
    /// Bytes allocated.
    pub cap: usize,
}

impl GpuchainBuf {
    fn from_vec(bytes: Vec<u8>) -> GpuchainBuf {
        if bytes.capacity() == 0 {
            // An empty Vec's pointer is dangling (0x1); Go's stack scan takes a pointer that
            // low for corruption, so none is handed over.
            return GpuchainBuf {
                ptr: std::ptr::null_mut(),
                len: 0,
                cap: 0,
            };
        }
        let mut bytes = std::mem::ManuallyDrop::new(bytes);
        GpuchainBuf {
            ptr: bytes.as_mut_ptr(),
            len: bytes.len(),
            cap: bytes.capacity(),
        }
    }
}

/// Opens the app whose app.toml is in the `home_len` bytes of UTF-8 at `home`. Returns 0,
/// or 1 with the reason in `*out`.
///
/// # Safety
/// `home` points to `home_len` readable bytes and `out` to writable memory for a
/// [`GpuchainBuf`].
#[allow(unsafe_code)]
#[no_mangle]
pub unsafe extern "C" fn gpuchain_open(
    home: *const u8,
    home_len: usize,
    out: *mut GpuchainBuf,
) -> i32 {
    // SAFETY: the caller promises `home_len` readable bytes at `home`.
    let home = unsafe { std::slice::from_raw_parts(home, home_len) };
    let result = catch_unwind(|| -> Result<(), String> {
        let home = std::str::from_utf8(home).map_err(|_| "the app home is not UTF-8")?;
        if APP.get().is_some() {
            return Err("the app is already open".into());
        }
        let app = InProcess::open(Path::new(home)).map_err(|e| format!("{e:#}"))?;
        APP.set(app).map_err(|_| "the app is already open")?;
        Ok(())
    });
    let (code, bytes) = match result {
        Ok(Ok(())) => (0, Vec::new()),
        Ok(Err(e)) => (1, e.into_bytes()),
        Err(_) => (1, b"opening the app panicked".to_vec()),
    };
    // SAFETY: the caller promises `out` is writable.
    unsafe { out.write(GpuchainBuf::from_vec(bytes)) };
    code
}

/// Answers the length-prefixed ABCI `Request`s in the `len` bytes at `request`, in order:
/// returns 0 with the length-prefixed `Response`s in `*out`, or 1 with the reason.
///
/// # Safety
/// `request` points to `len` readable bytes (or `len` is 0) and `out` to writable memory
/// for a [`GpuchainBuf`].
#[allow(unsafe_code)]
#[no_mangle]
pub unsafe extern "C" fn gpuchain_call(
    request: *const u8,
    len: usize,
    out: *mut GpuchainBuf,
) -> i32 {
    let request: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: the caller promises `len` readable bytes at `request`.
        unsafe { std::slice::from_raw_parts(request, len) }
    };
    let result = catch_unwind(AssertUnwindSafe(|| match APP.get() {
        Some(app) => app.answer(request).map_err(|e| format!("{e:#}")),
        None => Err("the app is not open".into()),
    }));
    let (code, bytes) = match result {
        Ok(Ok(response)) => (0, response),
        Ok(Err(e)) => (1, e.into_bytes()),
        Err(_) => {
            eprintln!("FATAL: the app panicked answering an ABCI request; halting");
            std::process::abort()
        }
    };
    // SAFETY: the caller promises `out` is writable.
    unsafe { out.write(GpuchainBuf::from_vec(bytes)) };
    code
}

/// Frees a buffer this library handed out.
///
/// # Safety
/// `buf` came from [`gpuchain_open`] or [`gpuchain_call`] and is freed once.
#[allow(unsafe_code)]
#[no_mangle]
pub unsafe extern "C" fn gpuchain_free(buf: GpuchainBuf) {
    if !buf.ptr.is_null() {
        // SAFETY: `buf` is a Vec's parts, handed out once by `from_vec`.
        drop(unsafe { Vec::from_raw_parts(buf.ptr, buf.len, buf.cap) });
    }
}
