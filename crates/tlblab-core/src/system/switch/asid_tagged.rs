//! The ASID-tagged switch: nothing is flushed; the incoming address space needs a valid ASID.
//! When the ASID space is exhausted the generation rolls over: every core's TLBs lose their
//! non-global entries, page-walk caches are emptied, and the spaces running on the other cores get
//! fresh ASIDs of the new generation (ARM Linux, seed 000 §3.3). Levels marked
//! `TlbConfig::flush_on_context_change` (the Cortex-A9's micro TLBs) are flushed whole on every
//! change of address space all the same: Linux writes the Context ID register in `switch_mm`
//! (arch/arm/mm/proc-v7-2level.S, `cpu_v7_switch_mm`), and "any change of the Context ID
//! Register causes the micro TLBs to be flushed" (Cortex-A9 TRM DDI0388I §6.2.1).

use crate::os::asid::Assignment;
use crate::system::System;
use tlblab_types::Asid;

pub(crate) fn switch_asid_tagged(sys: &mut System, cpu: usize, space: usize) -> u64 {
    flush_context_levels(sys, sys.cpus[cpu].core);
    match sys.asids.assign(sys.space_generation[space]) {
        Assignment::Kept => {}
        Assignment::New(a) => set_asid(sys, space, a),
        Assignment::Rollover(a) => {
            sys.os_stats.asid_rollovers += 1;
            for core in 0..sys.cores.len() {
                let mut n = 0;
                for t in sys.cores[core]
                    .itlb
                    .iter()
                    .chain(&sys.cores[core].dtlb)
                    .map(|&(t, _)| t)
                    .collect::<Vec<_>>()
                {
                    n += sys.tlbs[t].invalidate_where(|tlb, slot| !tlb.is_global(slot)) as u64;
                }
                sys.core_os[core].invalidations += n;
                sys.os_stats.tlb_flushes += 1;
            }
            for p in &mut sys.pwcs {
                p.flush();
            }
            set_asid(sys, space, a);
            // The spaces running elsewhere keep running: give them ASIDs of the new generation.
            let running: Vec<usize> = (0..sys.cpus.len())
                .filter(|&c| c != cpu)
                .filter_map(|c| sys.current[c])
                .filter_map(|t| sys.threads.get(t.0 as usize).copied().flatten())
                .map(|s| s.space)
                .filter(|&s| s != space)
                .collect();
            for s in running {
                if sys.space_generation[s] != sys.asids.generation() {
                    let a = sys.asids.take();
                    set_asid(sys, s, a);
                }
            }
        }
    }
    0
}

/// Flushes whole the levels of `core`'s paths marked `flush_on_context_change` (each once; a
/// level holding locks keeps them), counting the entries as the core's invalidations. Free:
/// the hardware clears them as a side effect of the register write. A machine without such
/// levels pays one pass over the core's level list.
pub(crate) fn flush_context_levels(sys: &mut System, core: usize) {
    let c = &sys.cores[core];
    let tlbs = || c.itlb.iter().chain(&c.dtlb).map(|&(t, _)| t);
    let mut n = 0;
    for (i, t) in tlbs().enumerate() {
        if sys.tlbs[t].config.flush_on_context_change && !tlbs().take(i).any(|u| u == t) {
            n += sys.tlbs[t].invalidate_all() as u64;
        }
    }
    sys.core_os[core].invalidations += n;
}

fn set_asid(sys: &mut System, space: usize, a: u16) {
    sys.spaces[space].asid = Asid(a);
    sys.space_generation[space] = sys.asids.generation();
}
