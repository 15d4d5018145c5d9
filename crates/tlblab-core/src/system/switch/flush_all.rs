//! The flush-everything switch: invalidate the core's TLBs (every level on its paths, shared ones
//! included) and page-walk caches, and flush its virtually indexed caches, whose contents are
//! meaningless in another address space (seed 002 §2). Locked entries survive (seed 004).

use crate::system::System;

/// Flushes the TLBs and page-walk caches of `cpu`'s core, and its virtually indexed caches when
/// `virtual_caches`; returns the cycles the cache flushes cost.
pub(crate) fn flush_core(sys: &mut System, cpu: usize, virtual_caches: bool) -> u64 {
    let c = &sys.cores[sys.cpus[cpu].core];
    // Each structure once, though a unified level is on both paths: in path order, skipping
    // one met before (distinct structures are independent, so the order changes nothing),
    // without a vector per switch.
    let tlbs = || c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t);
    let mut n = 0;
    for (i, t) in tlbs().enumerate() {
        if !tlbs().take(i).any(|u| u == t) {
            n += sys.tlbs[t].invalidate_all() as u64;
        }
    }
    for r in &c.pwcs {
        sys.pwcs[r.pwc].flush();
    }
    sys.core_os[sys.cpus[cpu].core].invalidations += n;
    sys.os_stats.tlb_flushes += 1;
    if !virtual_caches {
        return 0;
    }
    flush_virtual_caches(sys, cpu, false)
}

/// Flushes the virtually indexed caches of `cpu`'s core (each once), or with `instr_only`
/// those on its instruction path that are not on its data path too; returns their cycles.
pub(crate) fn flush_virtual_caches(sys: &mut System, cpu: usize, instr_only: bool) -> u64 {
    let c = &sys.cores[sys.cpus[cpu].core];
    let caches = || c.icache.iter().chain(&c.dcache).map(|r| r.cache);
    let on_data_path = |k: usize| c.dcache.iter().any(|r| r.cache == k);
    let (mut cycles, mut written) = (0, 0);
    for (i, k) in caches().enumerate() {
        if instr_only && (i >= c.icache.len() || on_data_path(k)) {
            continue;
        }
        if !caches().take(i).any(|u| u == k) && sys.caches[k].is_virtual() {
            let (cost, dirty) = sys.caches[k].flush_counted();
            cycles += cost;
            written += dirty;
            sys.os_stats.cache_flushes += 1;
        }
    }
    // A flushed virtually indexed level's dirty lines go to memory (`settle_writebacks`).
    sys.settle_writebacks(cpu, written);
    sys.os_stats.cache_flush_cycles += cycles;
    cycles
}
