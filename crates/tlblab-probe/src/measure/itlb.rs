//! The instruction-TLB instrument: chains of jumps across generated code pages.
//!
//! Page `i` holds, at a rotating cache line, a 5-byte `jmp rel32` to the next block of the chain;
//! the last block is a `ret`. Calling the chain executes N jumps, one per page, so the front end
//! needs N instruction translations per call. The control packs the same N blocks 64 to a page
//! (same instruction-cache lines and branch count, 64× fewer pages); the difference is the
//! instruction-translation cost. x86-64 only.

use super::curve::Instrument;
use crate::chase::{visit_order, Order};
use crate::sys::{now_ns, LINE, PAGE};
use std::hint::black_box;

/// Generated code for chains of up to `max_n` blocks, one layout per mapping.
pub struct CodeChains {
    test: CodeRegion,
    control: CodeRegion,
    max_n: usize,
}

struct CodeRegion {
    ptr: *mut u8,
    len: usize,
    built: Option<usize>,
    packed: bool,
}

impl CodeRegion {
    fn new(pages: usize, packed: bool) -> std::io::Result<CodeRegion> {
        let len = pages * PAGE;
        // SAFETY: anonymous mapping; checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        Ok(CodeRegion {
            ptr: p as *mut u8,
            len,
            built: None,
            packed,
        })
    }

    fn offset(&self, i: usize) -> usize {
        if self.packed {
            i * LINE
        } else {
            i * PAGE + ((i + (i >> 6)) & 63) * LINE
        }
    }

    /// Writes a chain of `n` blocks (random order) and returns its entry point.
    fn build(&mut self, n: usize, seed: u64) -> std::io::Result<*const u8> {
        let order = visit_order(Order::Random(seed), n);
        unsafe {
            if libc::mprotect(
                self.ptr as *mut libc::c_void,
                self.len,
                libc::PROT_READ | libc::PROT_WRITE,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            for k in 0..n {
                let here = self.ptr.add(self.offset(order[k]));
                if k + 1 < n {
                    let target = self.ptr.add(self.offset(order[k + 1])) as i64;
                    let rel = (target - (here as i64 + 5)) as i32;
                    *here = 0xE9;
                    std::ptr::copy_nonoverlapping(rel.to_le_bytes().as_ptr(), here.add(1), 4);
                } else {
                    *here = 0xC3; // ret
                }
            }
            if libc::mprotect(
                self.ptr as *mut libc::c_void,
                self.len,
                libc::PROT_READ | libc::PROT_EXEC,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        self.built = Some(n);
        Ok(unsafe { self.ptr.add(self.offset(order[0])) })
    }
}

impl Drop for CodeRegion {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

impl CodeChains {
    pub fn new(max_n: usize) -> std::io::Result<CodeChains> {
        Ok(CodeChains {
            test: CodeRegion::new(max_n + 1, false)?,
            control: CodeRegion::new(max_n.div_ceil(64) + 1, true)?,
            max_n,
        })
    }
}

/// Calls the chain at `entry` until `window_ns` pass; ns per jump.
fn time_code(entry: *const u8, n: usize, window_ns: u64) -> f64 {
    // SAFETY: `entry` is a chain of jumps ending in `ret`, built by `CodeRegion::build`, in an
    // executable mapping that outlives this call.
    let f: extern "C" fn() = unsafe { std::mem::transmute(entry) };
    let calls_per_chunk = (16_384 / n.max(1)).max(4);
    crate::sys::undisturbed_window(|| {
        for _ in 0..2 {
            f();
        }
        let mut calls = 0u64;
        let t0 = now_ns();
        let mut t1;
        loop {
            for _ in 0..calls_per_chunk {
                black_box(f)();
            }
            calls += calls_per_chunk as u64;
            t1 = now_ns();
            if t1 - t0 >= window_ns {
                break;
            }
        }
        (t1 - t0) as f64 / (calls as f64 * n as f64)
    })
}

impl Instrument for CodeChains {
    fn time(&mut self, n: usize, control: bool, window_ns: u64) -> f64 {
        let n = n.clamp(1, self.max_n);
        let region = if control {
            &mut self.control
        } else {
            &mut self.test
        };
        let entry = region
            .build(n, 0x17b ^ n as u64)
            .expect("mprotect of generated code failed");
        time_code(entry, n, window_ns)
    }

    fn max_n(&self) -> usize {
        self.max_n
    }
}
