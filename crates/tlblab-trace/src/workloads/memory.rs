//! What a generator may hold in host memory while it builds and runs: every generator whose
//! tables grow with a parameter sizes them first (`need`), so a parameter too large for the
//! host is one error naming the workload, the parameter and the bytes, before anything is
//! allocated, not a process killed by a failed allocation (`chase:pages=1g` asked for 8 GiB
//! and aborted the fuzzer, issue 88). `workloads::build` runs the check for the CLI and the
//! Python API alike.
//!
//! The limit is the host's physical memory, or `TLBLAB_WORKLOAD_MEMORY` (bytes, with the
//! spec's suffixes: `512M`, `8G`) when set, or what `set_budget` set in this process (the
//! fuzz target's small limit). A run of the same spec on the same host passes or fails the
//! same way; the records a generator writes never depend on the limit.

use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that sets the limit.
pub const ENV: &str = "TLBLAB_WORKLOAD_MEMORY";

/// A limit set in this process (0: none; the environment's or the host's applies).
static BUDGET: AtomicU64 = AtomicU64::new(0);

/// Sets this process's limit (bytes; 0 returns to the environment's or the host's).
pub fn set_budget(bytes: u64) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

/// The limit in bytes and where it comes from (for the error), or the environment variable's
/// bad value as an error.
pub fn budget() -> Result<(u64, String), String> {
    let set = BUDGET.load(Ordering::Relaxed);
    if set != 0 {
        return Ok((set, "the limit set in this process".into()));
    }
    if let Ok(v) = std::env::var(ENV) {
        return match super::parse_number(v.trim()) {
            Some(b) if b > 0 => Ok((b, format!("the limit {ENV}={v}"))),
            _ => Err(format!(
                "{ENV}: expected a positive number of bytes (e.g. 8G), found '{v}'"
            )),
        };
    }
    Ok((host_memory(), "this host's memory".into()))
}

/// The host's physical memory in bytes (`sysconf`), or no limit where it cannot be read.
fn host_memory() -> u64 {
    // SAFETY: sysconf reads a constant of the system; it has no preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && size > 0 {
        (pages as u64).saturating_mul(size as u64)
    } else {
        u64::MAX
    }
}

/// Ok if workload `name` may take `bytes` of host memory for the parameters `params` (the
/// ones its tables grow with, as `(name, value)`); else the error naming them and the bytes.
/// Compute `bytes` with saturating arithmetic: an overflow is a size over any limit.
pub fn need(name: &str, params: &[(&str, u64)], bytes: u64) -> Result<(), String> {
    let (limit, from) = budget()?;
    if bytes <= limit {
        return Ok(());
    }
    let given: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Err(format!(
        "workload '{name}': {} needs {} of host memory to generate, more than the {} of {from} ({ENV} sets another limit)",
        given.join(", "),
        bytes_text(bytes),
        short(limit),
    ))
}

/// `bytes` for people, with the exact count: `8.0 GiB (8589934592 bytes)`, or "more than 16
/// EiB" for a size that overflowed.
fn bytes_text(bytes: u64) -> String {
    if bytes == u64::MAX {
        return "more than 16 EiB".into();
    }
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    format!("{} ({bytes} bytes)", short(bytes))
}

/// `bytes` in KiB/MiB/GiB/... with one decimal (whole bytes below 1 KiB).
fn short(bytes: u64) -> String {
    let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_for_people_and_overflow_says_so() {
        assert_eq!(bytes_text(100), "100 bytes");
        assert_eq!(bytes_text(8 << 30), "8.0 GiB (8589934592 bytes)");
        assert_eq!(bytes_text(u64::MAX), "more than 16 EiB");
    }
}
