//! The flush-everything switch: invalidate the core's TLBs (every level on its paths, shared ones
//! included) and page-walk caches, and flush its virtually indexed caches, whose contents are
//! meaningless in another address space (seed 002 §2). Locked entries survive (seed 004).

use crate::system::System;

/// Flushes the TLBs and page-walk caches of `cpu`'s core, and its virtually indexed caches when
/// `virtual_caches`; returns the cycles the cache flushes cost.
pub(crate) fn flush_core(sys: &mut System, cpu: usize, virtual_caches: bool) -> u64 {
    let core = sys.cpus[cpu].core;
    // Each structure once, though a unified level is on both paths; in path order, without
    // a vector per switch (distinct structures are independent, so the order changes nothing).
    let tlb_of = |sys: &System, i: usize| {
        let c = &sys.cores[core];
        c.itlb.iter().chain(&c.dtlb).nth(i).map(|&(t, _)| t)
    };
    let mut n = 0;
    for i in 0.. {
        let Some(t) = tlb_of(sys, i) else { break };
        if (0..i).all(|j| tlb_of(sys, j) != Some(t)) {
            n += sys.tlbs[t].invalidate_all() as u64;
        }
    }
    sys.core_os[core].invalidations += n;
    for &p in &sys.cores[core].pwcs {
        sys.pwcs[p].flush();
    }
    sys.os_stats.tlb_flushes += 1;
    if !virtual_caches {
        return 0;
    }
    let cache_of = |sys: &System, i: usize| {
        let c = &sys.cores[core];
        c.icache.iter().chain(&c.dcache).nth(i).map(|r| r.cache)
    };
    let mut cycles = 0;
    for i in 0.. {
        let Some(c) = cache_of(sys, i) else { break };
        if (0..i).all(|j| cache_of(sys, j) != Some(c)) && sys.caches[c].is_virtual() {
            cycles += sys.caches[c].flush();
            sys.os_stats.cache_flushes += 1;
        }
    }
    sys.os_stats.cache_flush_cycles += cycles;
    cycles
}
