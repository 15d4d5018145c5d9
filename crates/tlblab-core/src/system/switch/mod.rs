//! Context-switch policies: what changing the address space on a core does to its TLBs and
//! caches. One file per built-in policy (the policies are named by `os::SwitchPolicy`);
//! `techniques::SwitchHook` is the extension point.
//!
//! `System::context_switch` is the single entry: trace `ContextSwitch` events, the implicit
//! switch when a core runs another thread's access, and the schedulers (`rr`, `rm`) all call it.
//! It charges `OsConfig::switch_cycles` for every switch and the policy's cost for every change of
//! address space, to the switching hardware thread's clock.

mod asid_tagged;
mod flush_all;

use crate::os::SwitchPolicy;
use crate::system::{SimError, System};
use tlblab_types::ThreadId;

pub(crate) use asid_tagged::{flush_context_levels, switch_asid_tagged};
pub(crate) use flush_all::{flush_core, flush_virtual_caches};

impl System {
    /// The policy in force, with `Auto` resolved against the machine's TLB tags.
    pub fn switch_policy(&self) -> SwitchPolicy {
        match self.options.os.switch {
            SwitchPolicy::Auto => {
                if self.config.tlbs.iter().all(|t| t.tags.asid) {
                    SwitchPolicy::AsidTagged
                } else {
                    SwitchPolicy::FlushAll
                }
            }
            p => p,
        }
    }

    /// Switches hardware thread `cpu` to software thread `to` (None = idle). Returns the cycles
    /// charged. A switch to the thread already running is free.
    pub fn context_switch(&mut self, cpu: usize, to: Option<ThreadId>) -> Result<u64, SimError> {
        let cpu = cpu % self.cpus.len();
        let from = self.current[cpu];
        if from == to {
            return Ok(0);
        }
        // The address space whose translations the core holds: the last one that ran there, even
        // across idle periods (Linux's lazy TLB mode keeps the previous mm while idle).
        let from_space = self.last_space[cpu];
        let _ = from;
        let mut cycles = self.options.os.switch_cycles;
        self.os_stats.context_switches += 1;
        if let Some(t) = to {
            let st = self.thread_state(t)?;
            if from_space != Some(st.space) {
                self.os_stats.address_space_switches += 1;
                let by_technique = self.with_technique(None, |t, sys| {
                    t.on_space_switch(sys, cpu, from_space, st.space)
                })?;
                cycles += match (by_technique, self.switch_policy()) {
                    (Some(c), _) => c,
                    (None, SwitchPolicy::Hook) => {
                        return Err(SimError(
                            "os.switch = \"hook\": the switch is left to a technique, but none is installed that handles it (try --technique fass)".into(),
                        ))
                    }
                    // A core that never ran anything holds nothing to flush.
                    (None, SwitchPolicy::FlushAll | SwitchPolicy::Auto) if from_space.is_none() => 0,
                    (None, SwitchPolicy::FlushAll | SwitchPolicy::Auto) => flush_core(self, cpu, true),
                    (None, SwitchPolicy::AsidTagged) => switch_asid_tagged(self, cpu, st.space),
                };
            }
        }
        self.set_current(cpu, to);
        if let Some(t) = to {
            self.last_space[cpu] = Some(self.thread_state(t)?.space);
            // The scheduler's own pages, through the TLB as the kernel's global mappings.
            let (os, bytes) = (self.options.os, self.config.memory.bytes);
            for pa in crate::os::kernel_path_pages(bytes, 0, os.kernel_pages) {
                cycles += self.kernel_touch(cpu, t, pa, false)?;
            }
            cycles += self.with_technique(0, |tq, sys| tq.on_switch_in(sys, cpu, t))?;
            // The rest of the path back to the thread, after the technique's work (seed 000
            // restores in `finish_task_switch`, §7): its entries are the newest.
            for pa in crate::os::kernel_path_pages(bytes, os.kernel_pages, os.kernel_return_pages) {
                cycles += self.kernel_touch(cpu, t, pa, false)?;
            }
        }
        self.os_stats.switch_cycles += cycles;
        self.charge(cpu, cycles);
        Ok(cycles)
    }
}
