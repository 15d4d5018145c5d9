//! Context-switch policies: what changing the address space on a core does to its TLBs and
//! caches. One file per built-in policy; `SwitchHook` is the extension point.
//!
//! `System::context_switch` is the single entry: trace `ContextSwitch` events, the implicit
//! switch when a core runs another thread's access, and the schedulers (`rr`, `rm`) all call it.
//! It charges `OsConfig::switch_cycles` for every switch and the policy's cost for every change of
//! address space, to the switching hardware thread's clock.

mod asid_tagged;
mod flush_all;

use crate::system::{SimError, System};
use serde::{Deserialize, Serialize};
use tlblab_types::ThreadId;

pub(crate) use asid_tagged::switch_asid_tagged;
pub(crate) use flush_all::flush_core;

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SwitchPolicy {
    /// `asid_tagged` when every TLB level carries ASIDs, else `flush_all`.
    #[default]
    Auto,
    /// Invalidate every unlocked TLB entry and page-walk-cache entry of the core and flush its
    /// virtually indexed caches (with their cost) on every address-space change: what Linux did
    /// on the StrongARM (seed 002 §2: 1,000–18,000 cycles direct, then refills as misses).
    FlushAll,
    /// No flush: entries are told apart by ASID; the ASID space rolls over (seed 000 §3.3).
    AsidTagged,
    /// Delegate to the `SwitchHook` installed with `System::set_switch_hook` (e.g. ARM domains).
    Hook,
}

/// A technique's context-switch behaviour (the ARM-domains model of seed 002 implements this).
pub trait SwitchHook: Send {
    /// Called once for every change of address space on hardware thread `cpu`, from address space
    /// `from` (None = the core was idle) to `to`. It may change any TLB, cache or page-walk cache
    /// and returns the cycles the switch costs beyond `OsConfig::switch_cycles`.
    fn on_switch(
        &mut self,
        sys: &mut System,
        cpu: usize,
        from: Option<usize>,
        to: usize,
    ) -> Result<u64, SimError>;
}

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

    /// Installs the hook the `Hook` policy delegates to.
    pub fn set_switch_hook(&mut self, hook: Box<dyn SwitchHook>) {
        self.switch_hook = Some(hook);
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
                cycles += match self.switch_policy() {
                    // A core that never ran anything holds nothing to flush.
                    SwitchPolicy::FlushAll | SwitchPolicy::Auto if from_space.is_none() => 0,
                    SwitchPolicy::FlushAll | SwitchPolicy::Auto => flush_core(self, cpu, true),
                    SwitchPolicy::AsidTagged => switch_asid_tagged(self, cpu, st.space),
                    SwitchPolicy::Hook => {
                        let mut hook = self.switch_hook.take().ok_or_else(|| {
                            SimError("os.switch = \"hook\" but no switch hook is installed".into())
                        })?;
                        let r = hook.on_switch(self, cpu, from_space, st.space);
                        self.switch_hook = Some(hook);
                        r?
                    }
                };
            }
        }
        self.set_current(cpu, to);
        if let Some(t) = to {
            self.last_space[cpu] = Some(self.thread_state(t)?.space);
        }
        self.os_stats.switch_cycles += cycles;
        self.charge(cpu, cycles);
        Ok(cycles)
    }
}
