//! The instruction-TLB instrument: chains of jumps across generated code pages.
//!
//! Page `i` holds, at a rotating cache line, a 5-byte `jmp rel32` to the next block of the chain;
//! the last block is a `ret`. Calling the chain executes N jumps, one per page, so the front end
//! needs N instruction translations per call. x86-64 only.
//!
//! The control is the same code at the same offsets in a mapping backed by 2 MiB transparent
//! huge pages (`Control::HugePages`): the same jumps, targets, instruction-cache sets and branch
//! predictor indexes, with one translation per 512 pages. Only the translations differ, so the
//! excess is the instruction-translation cost and nothing else. The older control, the same
//! blocks packed 64 to a 4 KiB page (`Control::Packed`), is used when the kernel grants no huge
//! pages: its jumps stay within a page or two, so front-end structures that treat far and near
//! targets differently (the branch target buffer) add knees of their own to the excess.

use super::curve::Instrument;
use crate::chase::{visit_order, Order};
use crate::sys::{now_ns, Region, Thp, LINE, PAGE};
use std::hint::black_box;

const HUGE: usize = 2 << 20;

/// What the test chain is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// The test's layout in 2 MiB pages.
    HugePages,
    /// The test's blocks packed 64 to a 4 KiB page.
    Packed,
}

/// Generated code for chains of up to `max_n` blocks, one layout per mapping.
pub struct CodeChains {
    test: CodeRegion,
    control: CodeRegion,
    max_n: usize,
    choice: String,
}

struct CodeRegion {
    region: Region,
    packed: bool,
}

impl CodeRegion {
    /// A 2 MiB-aligned region, so test and huge-page control share the low 21 address bits.
    fn new(pages: usize, packed: bool, thp: Thp) -> std::io::Result<CodeRegion> {
        Ok(CodeRegion {
            region: Region::new(pages * PAGE, HUGE, thp)?,
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

    fn protect(&self, prot: libc::c_int) -> std::io::Result<()> {
        // SAFETY: the whole of a mapping this region owns.
        if unsafe {
            libc::mprotect(
                self.region.base() as *mut libc::c_void,
                self.region.len(),
                prot,
            )
        } != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Writes a chain of `n` blocks (random order) and returns its entry point.
    fn build(&mut self, n: usize, seed: u64) -> std::io::Result<*const u8> {
        let order = visit_order(Order::Random(seed), n);
        self.protect(libc::PROT_READ | libc::PROT_WRITE)?;
        for k in 0..n {
            let here = self.region.at(self.offset(order[k]));
            // SAFETY: `here` and the 4 bytes after it are inside the region (a block never
            // starts in a page's last line-minus-5 bytes: blocks start at line boundaries).
            unsafe {
                if k + 1 < n {
                    let target = self.region.at(self.offset(order[k + 1])) as i64;
                    let rel = (target - (here as i64 + 5)) as i32;
                    *here = 0xE9; // jmp rel32
                    std::ptr::copy_nonoverlapping(rel.to_le_bytes().as_ptr(), here.add(1), 4);
                } else {
                    *here = 0xC3; // ret
                }
            }
        }
        self.protect(libc::PROT_READ | libc::PROT_EXEC)?;
        Ok(self.region.at(self.offset(order[0])))
    }

    /// Bytes of the region the kernel backs with huge pages (after the first build).
    fn huge_bytes(&self) -> usize {
        super::extras::anon_huge_bytes(self.region.base() as usize).unwrap_or(0)
    }
}

impl CodeChains {
    /// Chains of up to `max_n` pages, timed against the huge-page control when huge pages give
    /// the code more translation reach here, else against the packed one. `choice()` says which
    /// and why.
    ///
    /// The huge-page control is valid only where a 2 MiB page takes one instruction-TLB entry.
    /// Under a hypervisor that backs guest memory with 4 KiB pages the TLBs hold the
    /// combination at 4 KiB ("splintering"), the huge-page control translates exactly as the
    /// test does, and its excess is zero at every N (measured on the development VM). So the
    /// chains check first: at `max_n` pages, more than any instruction TLB holds, the huge-page
    /// control must remove at least half of the packed control's excess.
    pub fn new(max_n: usize) -> std::io::Result<CodeChains> {
        let mut huge = CodeChains::with_control(max_n, Control::HugePages)?;
        let (granted, len) = huge.control_huge_bytes();
        if granted < len {
            let mut packed = CodeChains::with_control(max_n, Control::Packed)?;
            packed.choice = format!(
                "packed control: the kernel backed {} of {} MiB of the huge-page control with huge \
                 pages",
                granted >> 20,
                len >> 20
            );
            return Ok(packed);
        }
        let mut packed = CodeChains::with_control(max_n, Control::Packed)?;
        let (test, huge_ns, packed_ns) = reach_check(&mut huge, &mut packed, max_n);
        let measured = format!(
            "at {max_n} pages, {test:.2} ns per jump in 4 KiB pages, {huge_ns:.2} in 2 MiB pages, \
             {packed_ns:.2} packed"
        );
        if test - packed_ns > 0.2 && test - huge_ns >= 0.5 * (test - packed_ns) {
            drop(packed);
            huge.choice = format!("huge-page control ({measured})");
            Ok(huge)
        } else {
            drop(huge);
            let removed = 100.0 * (test - huge_ns) / (test - packed_ns).max(f64::MIN_POSITIVE);
            packed.choice = format!(
                "packed control: 2 MiB pages removed {removed:.0}% of its excess ({measured}), \
                 not the half or more of pages that take one TLB entry each (as when a \
                 hypervisor backs guest memory with 4 KiB pages)"
            );
            Ok(packed)
        }
    }

    /// Chains of up to `max_n` pages against the given control, unchecked. The huge-page
    /// control's region is written once here, so its huge pages are in place (or not) before
    /// the first timing.
    pub fn with_control(max_n: usize, control: Control) -> std::io::Result<CodeChains> {
        let test = CodeRegion::new(max_n + 1, false, Thp::Never)?;
        let choice = format!("{control:?} control, unchecked");
        let control = match control {
            Control::HugePages => {
                let mut c = CodeRegion::new(max_n + 1, false, Thp::Always)?;
                c.build(max_n, 1)?;
                c
            }
            Control::Packed => CodeRegion::new(max_n.div_ceil(64) + 1, true, Thp::Never)?,
        };
        Ok(CodeChains {
            test,
            control,
            max_n,
            choice,
        })
    }

    /// Bytes of the control's mapping backed by huge pages, and the mapping's length.
    pub fn control_huge_bytes(&self) -> (usize, usize) {
        (self.control.huge_bytes(), self.control.region.len())
    }

    /// Which control the chains are timed against.
    pub fn control(&self) -> Control {
        if self.control.packed {
            Control::Packed
        } else {
            Control::HugePages
        }
    }

    /// Which control, and the measurement that chose it (for the report's notes).
    pub fn choice(&self) -> &str {
        &self.choice
    }
}

/// Medians of 5 interleaved windows at `n` pages: the test chain, the huge-page control, the
/// packed control, in ns per jump.
fn reach_check(huge: &mut CodeChains, packed: &mut CodeChains, n: usize) -> (f64, f64, f64) {
    const WINDOW_NS: u64 = 2_000_000;
    let (mut t, mut h, mut p) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..5 {
        t.push(huge.time(n, false, WINDOW_NS));
        h.push(huge.time(n, true, WINDOW_NS));
        p.push(packed.time(n, true, WINDOW_NS));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut t), median(&mut h), median(&mut p))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_controls_run_their_chains() {
        for control in [Control::HugePages, Control::Packed] {
            let mut c = CodeChains::with_control(128, control).unwrap();
            assert_eq!(c.control(), control);
            for n in [1, 2, 64, 128] {
                let test = c.time(n, false, 100_000);
                let ctl = c.time(n, true, 100_000);
                assert!(test > 0.0 && test.is_finite(), "{control:?} n={n}: {test}");
                assert!(ctl > 0.0 && ctl.is_finite(), "{control:?} n={n}: {ctl}");
            }
        }
    }

    #[test]
    fn the_huge_page_control_mirrors_the_test_layout() {
        let c = CodeChains::with_control(600, Control::HugePages).unwrap();
        for region in [&c.test, &c.control] {
            assert_eq!(region.region.base() as usize % HUGE, 0);
        }
        for i in [0, 1, 63, 64, 65, 511, 512, 600] {
            assert_eq!(c.test.offset(i), c.control.offset(i));
            assert_eq!(c.test.offset(i) / PAGE, i, "one block per page");
        }
        let packed = CodeChains::with_control(600, Control::Packed).unwrap();
        assert_eq!(
            packed.control.offset(600) / PAGE,
            600 / 64,
            "64 blocks per page"
        );
    }
}
