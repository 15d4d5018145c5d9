//! The five seeds' TLB-management techniques as models a run can switch on, one file each.
//!
//! A technique is selected by name with parameters (`machine::TechniqueSpec`: a `[technique]`
//! table in a machine file, `--technique NAME:key=value,...` on `tlblab simulate`, `technique=`
//! in Python), listed with its parameters, defaults and seed sections by `registry::catalog()`
//! (`tlblab techniques`), built by `registry::build`, and installed on a `System`
//! (`registry::install`), where it acts through the engine's extension point,
//! `system::Technique` (its contract is there).
//!
//! Adding one (ARCHITECTURE.md, recipe 6): a file here with its `INFO` and a model that
//! implements `Model` (`build`) and `system::Technique`, a naive twin in `reference/twins/` that
//! implements `reference::Twin`, and one line in `registry::REGISTRY` joining the two; `catalog`,
//! `build`, `install` and the reference's `install_twin` read nothing else. Nothing here imports
//! the reference model: the registry (`crate::registry`) is the one place the two meet. Its reproductions go in
//! `python/tlblab/seeds/s<NNN>_*/reproductions/`.
//!
//! - `pt_baker` — seed 001: a helper thread keeps the page-table entries of the application's
//!   range in the shared caches (user loads, prefetches, or a kernel page-table walk).
//! - `fass` — seed 002: ARM domains as address-space tags, PID relocation, the caching page
//!   directory, domain recycling and TLB sharing on the StrongARM.
//! - `tlb_coloring` — seed 003: each thread's pages placed in its own TLB colors, as
//!   `tlb_malloc` would place them.
//! - `lockdown` — seed 004: a program's most-accessed pages locked into the main TLB.
//! - `tlb_migration` — seed 000: a migrating thread's TLB entries saved on the source core and
//!   restored on the destination (pld on the Cortex-A7, gem5's interfaces v1-v4, Linux hooks).
//!
//! And one host model that is no seed's technique but uses the same extension point:
//! - `foreign_entries` — another tenant of a shared TLB level (an SMT sibling, a hypervisor):
//!   an entry for a page no thread uses, inserted every N references (docs/probe.md).

pub mod fass;
pub mod foreign_entries;
pub mod lockdown;
pub mod pt_baker;
pub mod tlb_coloring;
pub mod tlb_migration;

use crate::machine::{MachineConfig, TechniqueSpec};
use crate::system::Technique;
use std::collections::BTreeMap;

/// One parameter of a technique: its name, default (as text) and meaning.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// What the catalog says about a technique.
#[derive(Clone, Copy, Debug)]
pub struct TechniqueInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// The seed and sections the model follows.
    pub seed: &'static str,
    pub params: &'static [ParamInfo],
}

/// A technique's model as the registry builds it (`techniques/<name>.rs`): its constructor,
/// beside `system::Technique`, which is what the engine calls.
pub trait Model: Technique + Sized + 'static {
    /// The model for `machine` with `params` (their names already checked against
    /// `INFO.params`), `seed` the run's seed for anything random.
    fn build(params: &Params, machine: &MachineConfig, seed: u64) -> Result<Self, String>;
}

/// The TLB level a technique's `level` parameter names, or an error naming the technique, the
/// parameter and the machine's levels (the techniques that act on one level share this).
pub(crate) fn tlb_level_named<'m>(
    technique: &str,
    machine: &'m MachineConfig,
    level: &str,
) -> Result<&'m crate::tlb::TlbConfig, String> {
    machine
        .tlbs
        .iter()
        .find(|t| t.name == level)
        .ok_or_else(|| {
            let names: Vec<_> = machine.tlbs.iter().map(|t| t.name.as_str()).collect();
            format!(
                "technique {technique}: parameter 'level' expects one of {}, found '{level}'",
                names.join(", ")
            )
        })
}

/// Parses `NAME[:key=value,key=value]` (the `--technique` form). Duplicate keys and empty
/// items are errors.
pub fn parse_spec(text: &str) -> Result<TechniqueSpec, String> {
    let (name, rest) = match text.split_once(':') {
        Some((n, r)) => (n.trim(), r),
        None => (text.trim(), ""),
    };
    if name.is_empty() {
        return Err(format!("technique '{text}': expected NAME[:key=value,...]"));
    }
    let mut params = BTreeMap::new();
    if !rest.trim().is_empty() {
        for kv in rest.split(',') {
            let kv = kv.trim();
            let (k, v) = kv.split_once('=').ok_or_else(|| {
                if kv.is_empty() {
                    format!("technique '{text}': an empty item between commas")
                } else {
                    format!("technique '{text}': expected key=value, found '{kv}'")
                }
            })?;
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty() || v.is_empty() {
                return Err(format!(
                    "technique '{text}': expected key=value, found '{kv}'"
                ));
            }
            if params.insert(k.to_string(), v.to_string()).is_some() {
                return Err(format!(
                    "technique '{text}': parameter '{k}' is given twice"
                ));
            }
        }
    }
    Ok(TechniqueSpec {
        name: name.to_string(),
        params,
    })
}

/// A technique's parameters, checked against its `INFO`: unknown names are refused up front,
/// and each getter names the parameter and what it expects when the value does not parse.
pub struct Params<'a> {
    info: TechniqueInfo,
    given: &'a BTreeMap<String, String>,
}

impl<'a> Params<'a> {
    pub fn new(info: TechniqueInfo, given: &'a BTreeMap<String, String>) -> Result<Self, String> {
        for k in given.keys() {
            if !info.params.iter().any(|p| p.name == k) {
                let names: Vec<_> = info.params.iter().map(|p| p.name).collect();
                return Err(format!(
                    "technique {} has no parameter '{k}': expected one of {}",
                    info.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ));
            }
        }
        Ok(Params { info, given })
    }

    /// The value given, else the default (text).
    pub fn text(&self, name: &str) -> &str {
        if let Some(v) = self.given.get(name) {
            return v;
        }
        self.info
            .params
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| {
                panic!(
                    "technique {} reads undeclared parameter {name}",
                    self.info.name
                )
            })
            .default
    }

    /// Whether the user gave `name` (rather than leaving its default).
    pub fn given(&self, name: &str) -> bool {
        self.given.contains_key(name)
    }

    fn bad(&self, name: &str, expected: &str) -> String {
        format!(
            "technique {}: parameter '{name}' expects {expected}, found '{}'",
            self.info.name,
            self.text(name)
        )
    }

    /// A non-negative integer (`4096`, `0x1000`, `64k`, `2M`).
    pub fn u64(&self, name: &str) -> Result<u64, String> {
        tlblab_trace::workloads::parse_number(self.text(name))
            .ok_or_else(|| self.bad(name, "a non-negative integer (e.g. 4, 0x1000, 64k)"))
    }

    /// An integer within `lo..=hi`.
    pub fn u64_in(&self, name: &str, lo: u64, hi: u64) -> Result<u64, String> {
        let v = self.u64(name)?;
        if v < lo || v > hi {
            return Err(self.bad(name, &format!("an integer from {lo} to {hi}")));
        }
        Ok(v)
    }

    /// A real number.
    pub fn f64(&self, name: &str) -> Result<f64, String> {
        self.text(name)
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.bad(name, "a number"))
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`).
    pub fn bool(&self, name: &str) -> Result<bool, String> {
        match self.text(name).to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(self.bad(name, "true or false")),
        }
    }

    /// One of `choices`.
    pub fn choice(&self, name: &str, choices: &[&'static str]) -> Result<&'static str, String> {
        let v = self.text(name);
        choices
            .iter()
            .find(|c| **c == v)
            .copied()
            .ok_or_else(|| self.bad(name, &format!("one of {}", choices.join(", "))))
    }
}

/// A one-core machine with one data TLB level of `sets` x `ways` (the Xeon E5-2650's L1 DTLB is
/// 16 x 4), for the techniques' unit tests.
#[cfg(test)]
pub(crate) fn test_machine(sets: usize, ways: usize) -> MachineConfig {
    use crate::tlb::{TlbConfig, Ways};
    let mut m = MachineConfig::minimal(
        "test",
        crate::page_table::PageTableFormat::X86_64_4level,
        vec![TlbConfig::plain("L1D", 1, sets * ways, Ways::N(ways))],
    );
    m.walker.latency = 30;
    m.walker.first_cache_level = 1;
    m.memory.bytes = 1 << 30;
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{build, catalog};

    #[test]
    fn specs_parse_and_bad_ones_name_the_problem() {
        let s = parse_spec("tlb_coloring:reserved=2, assign=same").unwrap();
        assert_eq!(s.name, "tlb_coloring");
        assert_eq!(s.params["reserved"], "2");
        assert_eq!(s.params["assign"], "same");
        assert!(parse_spec("x:a=1,a=2").unwrap_err().contains("given twice"));
        assert!(parse_spec("x:a=1,,b=2").unwrap_err().contains("empty item"));
        assert!(parse_spec(":a=1").unwrap_err().contains("expected NAME"));
        let m = test_machine(16, 4);
        let e = build(&parse_spec("nope").unwrap(), &m, 0).err().unwrap();
        assert!(
            e.contains("unknown technique 'nope'") && e.contains("tlb_coloring"),
            "{e}"
        );
        let e = build(&parse_spec("tlb_coloring:colour=1").unwrap(), &m, 0)
            .err()
            .unwrap();
        assert!(e.contains("no parameter 'colour'"), "{e}");
        let e = build(&parse_spec("tlb_coloring:reserved=lots").unwrap(), &m, 0)
            .err()
            .unwrap();
        assert!(e.contains("'reserved' expects"), "{e}");
    }

    #[test]
    fn every_catalog_entry_builds_with_its_defaults_or_says_why_the_machine_cannot_run_it() {
        // A generic x86-64 machine with one 16 x 4 level: tlb_coloring runs on it; the others
        // need what it lacks (ARMv7 domains, lockable entries, several cores, a Cortex-A7 or
        // gem5 cost model) and must say so naming themselves, never panic.
        let m = test_machine(16, 4);
        for t in catalog() {
            let spec = TechniqueSpec {
                name: t.name.to_string(),
                params: BTreeMap::new(),
            };
            match build(&spec, &m, 0) {
                Ok(_) => {}
                Err(e) => assert!(
                    e.contains(t.name) && t.name != "tlb_coloring",
                    "{}: {e}",
                    t.name
                ),
            }
        }
    }
}
