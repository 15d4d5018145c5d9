//! Yes/no questions about this machine, each answered by timing with a control:
//! does a software prefetch walk the page table and fill the TLB (seed 001 §4.4.3.1); do
//! transparent huge pages give more TLB reach; do the two CPUs share a last-level cache right now;
//! do TLB entries survive a migration round trip and a process context switch.

use crate::chase::{build, follow, Layout, Order, OwnedChain};
use crate::stats::Summary;
use crate::sys::{now_ns, pin_to, Region, Thp};
use serde::{Deserialize, Serialize};
use std::hint::black_box;

/// A verdict with the numbers behind it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Verdict {
    /// "yes", "no", "partly" or "unclear".
    pub answer: String,
    /// The fraction of the effect seen, 0 (none) … 1 (as much as the positive control).
    pub fraction: Option<f64>,
    /// Named timings (ns per access or per event), medians with spread.
    pub timings: Vec<(String, Summary)>,
    pub note: String,
}

/// `spread`: the uncertainty of the fraction, relative to the effect (see the callers).
fn classify(fraction: f64, spread: f64) -> String {
    if !fraction.is_finite() || spread > 0.3 {
        "unclear".into()
    } else if fraction >= 0.7 {
        "yes".into()
    } else if fraction <= 0.3 {
        "no".into()
    } else {
        "partly".into()
    }
}

/// Times one pass over a chain (`n` dependent loads) in ns per access.
fn one_pass(start: *const usize, n: usize) -> f64 {
    let t0 = now_ns();
    let p = unsafe { follow(start, n as u64) };
    let t1 = now_ns();
    black_box(p);
    (t1 - t0) as f64 / n as f64
}

/// Evicts both data-TLB levels by chasing a chain over many other pages.
fn evict(evictor: &OwnedChain) {
    unsafe { black_box(follow(evictor.start(), 2 * evictor.n as u64)) };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrefetchKind {
    T0,
    T1,
    T2,
    Nta,
    W,
}

impl PrefetchKind {
    pub fn all() -> [PrefetchKind; 5] {
        [
            PrefetchKind::T0,
            PrefetchKind::T1,
            PrefetchKind::T2,
            PrefetchKind::Nta,
            PrefetchKind::W,
        ]
    }
    pub fn name(&self) -> &'static str {
        match self {
            PrefetchKind::T0 => "prefetcht0",
            PrefetchKind::T1 => "prefetcht1",
            PrefetchKind::T2 => "prefetcht2",
            PrefetchKind::Nta => "prefetchnta",
            PrefetchKind::W => "prefetchw",
        }
    }
}

#[inline(always)]
fn prefetch(kind: PrefetchKind, p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use core::arch::x86_64::*;
        match kind {
            PrefetchKind::T0 => _mm_prefetch::<_MM_HINT_T0>(p as *const i8),
            PrefetchKind::T1 => _mm_prefetch::<_MM_HINT_T1>(p as *const i8),
            PrefetchKind::T2 => _mm_prefetch::<_MM_HINT_T2>(p as *const i8),
            PrefetchKind::Nta => _mm_prefetch::<_MM_HINT_NTA>(p as *const i8),
            PrefetchKind::W => _mm_prefetch::<_MM_HINT_ET0>(p as *const i8),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kind, p);
    }
}

/// A chain of one element per page over `pages` fresh 4 KiB pages (no THP), in a random cycle
/// drawn from `seed`.
fn page_chain(pages: usize, seed: u64) -> OwnedChain {
    OwnedChain::new(
        Layout::PerPage { stride: 1 },
        Order::Random(seed),
        pages,
        Thp::Never,
    )
    .expect("mmap")
}

/// Does a software prefetch walk and fill the TLB? (seed 001 §4.4.3.1, by timing instead of PAPI.)
///
/// For `n` target pages (inside the L2 DTLB's reach): evict both TLB levels with an 8192-page
/// chase, then (a) nothing, (b) prefetch a *different* line of every target page (so the chase's
/// own data lines stay as cold as in (a)), or (c) load that other line; then time one chase
/// pass over the target lines. fraction = (a − b) / (a − c): 1 when the prefetch fills the TLB
/// like a load, 0 when it does not.
pub fn prefetch_fills_tlb(n: usize, trials: usize) -> Vec<(PrefetchKind, Verdict)> {
    let target = page_chain(n, 0x9f);
    let evictor = page_chain(8192, 0xe7);
    let other: Vec<*const u8> = (0..n)
        .map(|i| {
            target
                .region()
                .at(crate::chase::element_offset(Layout::PerPage { stride: 1 }, i) ^ 2048)
                as *const u8
        })
        .collect();
    let mut out = Vec::new();
    for kind in PrefetchKind::all() {
        let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..trials {
            for variant in 0..3 {
                evict(&evictor);
                match variant {
                    1 => {
                        for &p in &other {
                            prefetch(kind, p);
                        }
                    }
                    2 => {
                        for &p in &other {
                            unsafe { black_box(p.read_volatile()) };
                        }
                    }
                    _ => {}
                }
                // Let outstanding prefetches and walks finish before timing.
                let t = now_ns();
                while now_ns() - t < 2_000 {}
                let v = one_pass(target.start(), n);
                [&mut a, &mut b, &mut c][variant].push(v);
            }
        }
        let (sa, sb, sc) = (Summary::of(&a), Summary::of(&b), Summary::of(&c));
        let frac = (sa.median - sb.median) / (sa.median - sc.median);
        // Uncertainty of the two medians (≈ IQR/√n each) against the effect size.
        let spread = (sa.iqr() + sb.iqr())
            / (trials as f64).sqrt()
            / (sa.median - sc.median).abs().max(1e-9);
        out.push((
            kind,
            Verdict {
                answer: classify(frac, spread),
                fraction: Some(frac),
                timings: vec![
                    ("cold".into(), sa),
                    (format!("after {}", kind.name()), sb),
                    ("after loads".into(), sc),
                ],
                note: format!("{n} pages; one chase pass after evicting the TLBs"),
            },
        ));
    }
    out
}

/// Bytes of AnonHugePages backing the mapping that contains `addr` (from /proc/self/smaps).
pub fn anon_huge_bytes(addr: usize) -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in text.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                let kb: usize = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
                return Some(kb * 1024);
            }
        }
    }
    None
}

/// Do transparent huge pages give more TLB reach? A chase over `n` pages (more than the L1 DTLB
/// holds, fewer than one 2 MiB page's worth of 4 KiB pages when n ≤ 512) in a THP mapping against
/// the same chase in 4 KiB pages, each minus the packed control. If a 2 MiB mapping were cached as
/// one entry, the THP excess would vanish: fraction = 1 − excess(THP) / excess(4K).
pub fn thp_reach(n: usize, reps: usize, window_ns: u64) -> Verdict {
    use super::curve::measure_n;
    use super::dtlb::DataChains;
    let mut small = DataChains::new(
        n,
        Layout::PerPage { stride: 1 },
        Order::Sequential,
        Thp::Never,
    )
    .expect("mmap");
    let mut huge = DataChains::new(
        n,
        Layout::PerPage { stride: 1 },
        Order::Sequential,
        Thp::Always,
    )
    .expect("mmap");
    let (mut xs, mut xh) = (Vec::new(), Vec::new());
    let (mut rs, mut rh) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let a = measure_n(&mut small, n, 1, window_ns);
        let b = measure_n(&mut huge, n, 1, window_ns);
        xs.push(a.excess.median);
        xh.push(b.excess.median);
        rs.push(a.test.median);
        rh.push(b.test.median);
    }
    let (s4, sh) = (Summary::of(&xs), Summary::of(&xh));
    let huge_bytes = anon_huge_bytes(huge_region_addr(&huge));
    let frac = 1.0 - sh.median / s4.median.max(1e-9);
    let granted = huge_bytes.unwrap_or(0);
    let mut answer = classify(frac, (s4.iqr() + sh.iqr()) / s4.median.abs().max(1e-9));
    let note = if granted == 0 {
        answer = "unclear".into();
        "the kernel gave no huge pages to the THP mapping (AnonHugePages = 0), so nothing was tested".to_string()
    } else {
        format!(
            "{n} pages; the THP mapping had {} MiB of AnonHugePages",
            granted >> 20
        )
    };
    Verdict {
        answer,
        fraction: Some(frac),
        timings: vec![
            ("excess 4K".into(), s4),
            ("excess THP".into(), sh),
            ("chase 4K".into(), Summary::of(&rs)),
            ("chase THP".into(), Summary::of(&rh)),
        ],
        note,
    }
}

fn huge_region_addr(c: &super::dtlb::DataChains) -> usize {
    c.test_base() as usize
}

/// Cache-line transfer between two CPUs: (round-trip ping-pong ns, ns per line for CPU `a` to
/// chase 2 MiB of lines that CPU `b` has just read). Shared L3: ≈17-20 ns per line; apart:
/// ≈60-156 ns (docs/ptwarm.md: the rounds of `tlblab host ptwarm` with the vCPUs sharing the L3,
/// 15-38 ns a line, and apart, 87-156 ns).
pub fn llc_sharing(a: usize, b: usize, trials: usize) -> Verdict {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let flag = Arc::new(AtomicU64::new(0));
    let rounds = 20_000u64;
    let f2 = flag.clone();
    let peer = std::thread::spawn(move || {
        let _ = pin_to(b);
        let mut expect = 1;
        while expect < 2 * rounds * 4 {
            while f2.load(Ordering::Acquire) != expect {
                std::hint::spin_loop();
            }
            f2.store(expect + 1, Ordering::Release);
            expect += 2;
        }
    });
    let _ = pin_to(a);
    let mut pp = Vec::new();
    let mut v = 0;
    for _ in 0..4 {
        let t0 = now_ns();
        for _ in 0..rounds {
            flag.store(v + 1, Ordering::Release);
            while flag.load(Ordering::Acquire) != v + 2 {
                std::hint::spin_loop();
            }
            v += 2;
        }
        pp.push((now_ns() - t0) as f64 / rounds as f64);
    }
    let _ = peer.join();
    // Cross read: CPU b reads a 2 MiB chain, then CPU a chases it once.
    let lines = (2 << 20) / 64;
    let region = Region::new(2 << 20, 2 << 20, Thp::Never).expect("mmap");
    let start = build(&region, Layout::Packed, Order::Random(0x11), lines) as usize;
    let mut xr = Vec::new();
    let mut local = Vec::new();
    for _ in 0..trials {
        let s = start;
        let h = std::thread::spawn(move || {
            let _ = pin_to(b);
            unsafe { black_box(follow(s as *const usize, 2 * lines as u64)) };
        });
        let _ = h.join();
        let _ = pin_to(a);
        xr.push(one_pass(start as *const usize, lines));
        local.push(one_pass(start as *const usize, lines));
    }
    let (spp, sxr, slocal) = (Summary::of(&pp), Summary::of(&xr), Summary::of(&local));
    let answer = if sxr.median < 35.0 {
        "yes"
    } else if sxr.median > 50.0 {
        "no"
    } else {
        "unclear"
    };
    Verdict {
        answer: answer.into(),
        fraction: None,
        timings: vec![("ping-pong round trip".into(), spp), ("line read by other CPU".into(), sxr), ("same lines again, local".into(), slocal)],
        note: format!("CPU {a} and CPU {b}; shared when a line the other CPU just read costs < 35 ns; this can change over time on a VM"),
    }
}

/// Do TLB entries survive (a) a migration round trip to CPU `b` and back, and (b) a switch to
/// another process and back? `n` pages inside the L2 DTLB's reach: warm → event → time one pass.
/// Positive control: the same pass after evicting the TLB with a 8192-page chase; negative: no
/// event. fraction = (evicted − after event) / (evicted − warm): 1 = everything survived.
pub fn survival(a: usize, b: usize, n: usize, trials: usize) -> (Verdict, Verdict) {
    let target = page_chain(n, 0x5a);
    let big = page_chain(8192, 0xe9);
    // A child process that answers each byte on a pipe: the context-switch partner.
    let mut to_child = [0i32; 2];
    let mut to_parent = [0i32; 2];
    let child = unsafe {
        libc::pipe(to_child.as_mut_ptr());
        libc::pipe(to_parent.as_mut_ptr());
        libc::fork()
    };
    if child == 0 {
        // Child: pinned to the same CPU, echo until EOF. Only async-signal-safe calls here.
        unsafe {
            libc::close(to_child[1]);
            libc::close(to_parent[0]);
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(a, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            let mut byte = 0u8;
            while libc::read(to_child[0], &mut byte as *mut u8 as *mut libc::c_void, 1) == 1 {
                libc::write(to_parent[1], &byte as *const u8 as *const libc::c_void, 1);
            }
            libc::_exit(0);
        }
    }
    unsafe {
        libc::close(to_child[0]);
        libc::close(to_parent[1]);
    }
    let _ = pin_to(a);
    let (mut warm, mut cold, mut mig, mut ctx) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..trials {
        for variant in 0..4 {
            // Warm: two passes.
            unsafe { black_box(follow(target.start(), 2 * n as u64)) };
            match variant {
                1 => unsafe {
                    black_box(follow(big.start(), 2 * 8192));
                },
                2 => {
                    let _ = pin_to(b);
                    let _ = pin_to(a);
                }
                3 if child > 0 => unsafe {
                    let byte = 1u8;
                    let mut back = 0u8;
                    libc::write(to_child[1], &byte as *const u8 as *const libc::c_void, 1);
                    libc::read(to_parent[0], &mut back as *mut u8 as *mut libc::c_void, 1);
                },
                _ => {}
            }
            let v = one_pass(target.start(), n);
            [&mut warm, &mut cold, &mut mig, &mut ctx][variant].push(v);
        }
    }
    unsafe {
        // EOF on the child's input ends it.
        libc::close(to_child[1]);
        libc::close(to_parent[0]);
        if child > 0 {
            let mut st = 0;
            libc::waitpid(child, &mut st, 0);
        }
    }
    let (sw, sc, sm, sx) = (
        Summary::of(&warm),
        Summary::of(&cold),
        Summary::of(&mig),
        Summary::of(&ctx),
    );
    let span = (sc.median - sw.median).max(1e-9);
    let mk = |s: &Summary, what: &str| {
        let frac = (sc.median - s.median) / span;
        let spread = (s.iqr() + sw.iqr()) / (trials as f64).sqrt() / span;
        Verdict {
            answer: classify(frac, spread),
            fraction: Some(frac),
            timings: vec![
                ("warm".into(), sw),
                ("after TLB eviction".into(), sc),
                (format!("after {what}"), *s),
            ],
            note: format!(
                "{n} pages; one chase pass; data lines stay in this CPU's caches in every case"
            ),
        }
    };
    (
        mk(&sm, "migration round trip"),
        mk(&sx, "context switch to another process"),
    )
}
