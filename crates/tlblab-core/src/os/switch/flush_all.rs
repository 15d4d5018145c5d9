//! The flush-everything switch: invalidate the core's TLBs (every level on its paths, shared ones
//! included) and page-walk caches, and flush its virtually indexed caches, whose contents are
//! meaningless in another address space (seed 002 §2). Locked entries survive (seed 004).

use crate::system::System;

/// Flushes the TLBs and page-walk caches of `cpu`'s core, and its virtually indexed caches when
/// `virtual_caches`; returns the cycles the cache flushes cost.
pub(crate) fn flush_core(sys: &mut System, cpu: usize, virtual_caches: bool) -> u64 {
    let core = sys.cpus[cpu].core;
    let mut tlbs: Vec<usize> = sys.cores[core]
        .itlb
        .iter()
        .chain(&sys.cores[core].dtlb)
        .map(|&(t, _)| t)
        .collect();
    tlbs.sort_unstable();
    tlbs.dedup();
    let mut n = 0;
    for t in tlbs {
        n += sys.tlbs[t].invalidate_all() as u64;
    }
    sys.core_os[core].invalidations += n;
    for &p in &sys.cores[core].pwcs {
        sys.pwcs[p].flush();
    }
    sys.os_stats.tlb_flushes += 1;
    if !virtual_caches {
        return 0;
    }
    let mut caches: Vec<usize> = sys.cores[core]
        .icache
        .iter()
        .chain(&sys.cores[core].dcache)
        .map(|r| r.cache)
        .collect();
    caches.sort_unstable();
    caches.dedup();
    let mut cycles = 0;
    for c in caches {
        if sys.caches[c].is_virtual() {
            cycles += sys.caches[c].flush();
            sys.os_stats.cache_flushes += 1;
        }
    }
    sys.os_stats.cache_flush_cycles += cycles;
    cycles
}
