use std::net::TcpListener;
use std::sync::atomic::{AtomicU16, Ordering};

/// Next candidate base port; each test process starts from a different point so that
/// concurrent test binaries rarely collide, and every block is probed before use. Ports stay
/// below Linux's ephemeral range (32768+), where outgoing connections could take them
/// between the probe and the bind.
static NEXT: AtomicU16 = AtomicU16::new(0);

/// A base port `b` such that `b..b+count` are all free on 127.0.0.1 right now.
pub fn free_port_block(count: u16) -> u16 {
    if NEXT.load(Ordering::SeqCst) == 0 {
        let seed = 20_000 + (std::process::id() % 1_000) as u16 * 10;
        let _ = NEXT.compare_exchange(0, seed, Ordering::SeqCst, Ordering::SeqCst);
    }
    loop {
        let base = NEXT.fetch_add(count + 1, Ordering::SeqCst);
        if base > 32_000 {
            NEXT.store(20_000, Ordering::SeqCst);
            continue;
        }
        if (base..base + count).all(|p| TcpListener::bind(("127.0.0.1", p)).is_ok()) {
            return base;
        }
    }
}
