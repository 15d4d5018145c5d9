//! The technique registry (`registry::REGISTRY`): what adding a technique takes, shown with a
//! throwaway one defined here in full, as `techniques/<name>.rs` and `reference/twins/<name>.rs`
//! would define it, and registered with the one line a real technique adds to `REGISTRY`: it
//! needs nothing of `system/` but the public `Technique` trait and `System` operations, and
//! nothing of the reference but the public `Twin` trait, so a technique touches no engine file. It is
//! listed in the catalog, builds and runs on the engine with its parameters checked against its
//! catalog entry, and its naive twin runs beside it in the reference model and agrees, count
//! for count. The registry's own promises (every technique has a twin, no parameter of a
//! forgotten twin passes) are checked on the built-in techniques below.

mod common;

use common::random::{machine, options, same_run, setup, steps};
use common::tlb;
use proptest::prelude::*;
use std::collections::BTreeMap;
use tlblab_core::machine::{MachineConfig, TechniqueSpec};
use tlblab_core::os::SwitchPolicy;
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::reference::{ReferenceModel, Twin, TwinCycles};
use tlblab_core::registry::{self, Registration, Registry, REGISTRY};
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::techniques::{self, Model, ParamInfo, Params, TechniqueInfo};
use tlblab_core::{Declaration, RunOptions, SimError, System, Technique};
use tlblab_trace::{Access, Record};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

// ---- The throwaway technique, as `techniques/switch_toll.rs` would hold it. ----

/// A fixed cost charged every time a thread is switched in (a stand-in for any per-switch
/// work, such as seed 000's restore): small enough to read whole, and it uses a hook, a
/// parameter with a default and a counter.
const INFO: TechniqueInfo = TechniqueInfo {
    name: "switch_toll",
    summary: "a fixed cost charged at every switch-in (the registry test's technique)",
    seed: "none (tests/technique_registry.rs)",
    params: &[ParamInfo {
        name: "cycles",
        default: "100",
        meaning: "cycles charged to the hardware thread at each switch-in",
    }],
};

struct SwitchToll {
    cycles: u64,
    tolls: u64,
}

impl Model for SwitchToll {
    fn build(p: &Params, _machine: &MachineConfig, _seed: u64) -> Result<Self, String> {
        Ok(SwitchToll {
            cycles: p.u64_in("cycles", 0, 1_000_000)?,
            tolls: 0,
        })
    }
}

impl Technique for SwitchToll {
    fn declaration(&self) -> Declaration {
        Declaration::named(INFO.name)
    }

    fn on_switch_in(&mut self, _: &mut System, _: usize, _: ThreadId) -> Result<u64, SimError> {
        self.tolls += 1;
        Ok(self.cycles)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![("tolls".into(), self.tolls)]
    }
}

// ---- Its naive twin, as `reference/twins/switch_toll.rs` would hold it. ----

struct SwitchTollTwin {
    cycles: u64,
    tolls: u64,
}

impl Twin for SwitchTollTwin {
    fn new(spec: &TechniqueSpec, _m: &MachineConfig, _seed: u64) -> Result<Self, String> {
        let text = spec.params.get("cycles").map_or("100", String::as_str);
        let cycles = text
            .parse()
            .map_err(|_| format!("twin switch_toll: cycles '{text}'"))?;
        Ok(SwitchTollTwin { cycles, tolls: 0 })
    }

    fn on_switch_in(&mut self, _: &mut ReferenceModel, _: usize, _: u32) -> TwinCycles {
        self.tolls += 1;
        Ok(self.cycles)
    }

    fn counters(&self) -> Vec<(String, u64)> {
        vec![("tolls".into(), self.tolls)]
    }
}

// ---- Its registration: the line it would add to `REGISTRY`. ----

fn with_switch_toll() -> Vec<Registration> {
    let mut all = REGISTRY.to_vec();
    all.push(Registration::of::<SwitchToll, SwitchTollTwin>(INFO));
    all
}

/// One core with one 16-entry 4-way data TLB.
fn one_level() -> MachineConfig {
    common::machine(
        PageTableFormat::X86_64_4level,
        vec![tlb("L1D", 1, 16, 4, ReplacementKind::Lru)],
    )
}

fn spec(text: &str) -> TechniqueSpec {
    techniques::parse_spec(text).unwrap()
}

fn load(thread: u32, va: u64) -> Record {
    Record::Access(Access::new(
        ThreadId(thread),
        AccessKind::Load,
        VirtAddr(va),
        8,
    ))
}

/// Given the throwaway technique registered beside the built-in ones, then the catalog lists
/// it with its parameter after them, and the built-in registry does not know it.
#[test]
fn a_registered_technique_is_listed_with_its_parameters() {
    let all = with_switch_toll();
    let registry = Registry(&all);
    let catalog = registry.catalog();
    assert_eq!(catalog.len(), REGISTRY.len() + 1);
    let last = catalog.last().unwrap();
    assert_eq!(last.name, "switch_toll");
    assert_eq!(last.params[0].name, "cycles");
    assert_eq!(last.params[0].default, "100");
    let e = Registry::BUILT_IN.find("switch_toll").err().unwrap();
    assert!(
        e.contains("unknown technique 'switch_toll'") && e.contains("lockdown"),
        "{e}"
    );
}

/// Given two threads of two address spaces taking turns on one core, 3 accesses each, when
/// switch_toll:cycles=40 runs, then each of the 6 switch-ins costs 40 cycles: the run's cycles
/// are a technique-free run's plus 240, its counter says 6, the statistics name it with its
/// parameter, and its twin in the reference model ends the run alike, counter and clock.
#[test]
fn a_registered_technique_simulates_and_agrees_with_its_twin() {
    let all = with_switch_toll();
    let registry = Registry(&all);
    let cfg = one_level();
    let opts = RunOptions::tlb_only(0);
    let records: Vec<Record> = (0..6u64)
        .map(|i| load((i % 2) as u32, 0x10_0000 + i * 4096))
        .collect();

    let (mut plain, _) = setup(&cfg, opts, 2);
    plain.run_slice(&records).unwrap();

    let toll = spec("switch_toll:cycles=40");
    let (mut sys, mut r) = setup(&cfg, opts, 2);
    registry.install(&mut sys, &toll).unwrap();
    r.install_twin_from(registry, &toll).unwrap();
    sys.run_slice(&records).unwrap();
    r.run(&records).unwrap();

    let stats = sys.stats();
    let t = stats
        .technique
        .as_ref()
        .expect("the run names its technique");
    assert_eq!(t.name, "switch_toll");
    assert_eq!(t.params["cycles"], "40");
    assert_eq!(t.counters["tolls"], 6);
    assert_eq!(sys.clock(0), plain.clock(0) + 6 * 40);
    common::reference_difference(&sys, &r).unwrap();
}

/// Given a parameter the catalog entry does not declare, then the engine and the reference both
/// refuse it, naming it: a twin's parameters are its technique's, with no fallback.
#[test]
fn an_undeclared_parameter_is_refused_by_the_model_and_the_twin() {
    let all = with_switch_toll();
    let registry = Registry(&all);
    let cfg = one_level();
    let bad = spec("switch_toll:cycles=4,colour=1");
    let e = registry.build(&bad, &cfg, 0).err().unwrap();
    assert!(e.contains("no parameter 'colour'"), "{e}");
    let (_, mut r) = setup(&cfg, RunOptions::tlb_only(0), 1);
    let e = r.install_twin_from(registry, &bad).unwrap_err();
    assert!(e.contains("no parameter 'colour'"), "{e}");
    // And for every built-in technique: a name that is none of its parameters.
    for t in registry::catalog() {
        let s = spec(&format!("{}:no_such_parameter=1", t.name));
        let e = r.install_twin(&s).unwrap_err();
        assert!(
            e.contains("no parameter 'no_such_parameter'"),
            "{}: {e}",
            t.name
        );
    }
}

/// Every built-in technique has a twin that can check what its model runs: on random machines,
/// with default parameters, whenever the technique installs on the engine, its twin installs on
/// the reference (some models check the machine at install, not at build). A twin may accept
/// more (the fass twin takes machines of several cores, which the model refuses): those runs
/// never reach the engine.
fn model_and_twin_agree_on_defaults(
    cfg: &MachineConfig,
    opts: RunOptions,
) -> Result<(), TestCaseError> {
    for reg in REGISTRY {
        let s = spec(reg.info.name);
        let (mut sys, mut r) = setup(cfg, opts, 1);
        let model = registry::install(&mut sys, &s).map_err(|e| e.0);
        let twin = r.install_twin(&s);
        prop_assert!(
            model.is_err() || twin.is_ok(),
            "{}: the model installs, the twin refuses: {:?}",
            reg.info.name,
            twin.err()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]

    #[test]
    fn every_built_in_technique_has_a_twin_that_installs_when_it_does(
        cfg in machine(),
        opts in options(),
    ) {
        let mut cfg = cfg;
        if opts.os.switch == SwitchPolicy::AsidTagged {
            for t in cfg.tlbs.iter_mut() {
                t.tags.asid = true;
            }
        }
        model_and_twin_agree_on_defaults(&cfg, opts)?;
    }

    /// The throwaway technique on random machines, options and records with every event:
    /// the engine with it and the reference with its twin end alike.
    #[test]
    fn a_registered_technique_agrees_with_its_twin_on_random_runs(
        cfg in machine(),
        opts in options(),
        steps in steps(),
        spaces in 1usize..4,
        cycles in 0u64..200,
    ) {
        let mut cfg = cfg;
        if opts.os.switch == SwitchPolicy::AsidTagged {
            for t in cfg.tlbs.iter_mut() {
                t.tags.asid = true;
            }
        }
        let all = with_switch_toll();
        let registry = Registry(&all);
        let records = common::random::records(&steps, &cfg, opts.walks);
        let toll = TechniqueSpec {
            name: "switch_toll".into(),
            params: BTreeMap::from([("cycles".to_string(), cycles.to_string())]),
        };
        let (mut sys, mut r) = setup(&cfg, opts, spaces);
        registry.install(&mut sys, &toll).map_err(|e| TestCaseError::fail(e.0))?;
        r.install_twin_from(registry, &toll).map_err(TestCaseError::fail)?;
        let a = sys.run_slice(&records).map_err(|e| e.0);
        let b = r.run(&records);
        same_run(&sys, a, &r, b)?;
    }
}
