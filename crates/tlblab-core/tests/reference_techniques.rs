//! Parity tier for the techniques: the engine with a technique (`techniques/`) against the
//! reference model with the technique's naive twin (`reference/twins/`, written from the
//! seeds' text), on random machines, random traces with every event and random technique
//! parameters: every counter of every core, every clock, the OS counters, every TLB entry and
//! the technique's own counters (docs/reference-model.md, "Technique twins").

mod common;

use common::random::{machine, options, page_va, records, same_run, setup, steps};
use proptest::prelude::*;
use std::collections::BTreeMap;
use tlblab_core::machine::{MachineConfig, TechniqueSpec};
use tlblab_core::os::SwitchPolicy;
use tlblab_core::tlb::{IndexFn, TlbKind};
use tlblab_core::RunOptions;

fn spec(name: &str, params: &[(&str, String)]) -> TechniqueSpec {
    TechniqueSpec {
        name: name.into(),
        params: params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<BTreeMap<_, _>>(),
    }
}

/// The engine (`run_slice` with the technique installed) and the reference (`run` with the
/// twin) on the same machine, options and records: both refuse the parameters, or both run
/// and end alike.
fn with_technique(
    cfg: &MachineConfig,
    opts: RunOptions,
    steps: &[common::random::Step],
    spaces: usize,
    spec: &TechniqueSpec,
) -> Result<(), TestCaseError> {
    let mut cfg = cfg.clone();
    if opts.os.switch == SwitchPolicy::AsidTagged {
        // As in reference_machine.rs: ASID-tagged switching needs ASID-tagged levels.
        for t in cfg.tlbs.iter_mut() {
            t.tags.asid = true;
        }
    }
    let records = records(steps, &cfg, opts.walks);
    let (mut sys, mut r) = setup(&cfg, opts, spaces);
    let installed = tlblab_core::techniques::install(&mut sys, spec).map_err(|e| e.0);
    let twin = r.install_twin(spec);
    prop_assert_eq!(
        installed.is_ok(),
        twin.is_ok(),
        "install: engine {:?}, twin {:?}",
        installed,
        twin
    );
    if installed.is_err() {
        return Ok(());
    }
    let a = sys.run_slice(&records).map_err(|e| e.0);
    let b = r.run(&records);
    same_run(&sys, a, &r, b)
}

/// The first data level of `cfg` (the colors' and the locks' default level).
fn first_data_level(cfg: &mut MachineConfig) -> &mut tlblab_core::tlb::TlbConfig {
    cfg.tlbs
        .iter_mut()
        .filter(|t| t.kind != TlbKind::Instr)
        .min_by_key(|t| t.level)
        .expect("a data path")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// tlb_coloring (seed 003 §3.1): its placement of each thread's pages, then everything the
    /// machine does with them.
    #[test]
    fn tlb_coloring_agrees_with_its_twin(
        cfg in machine(),
        opts in options(),
        steps in steps(),
        spaces in 1usize..4,
        (reserved, first, per, same, fetches, base, named) in (0u64..8, 0u64..8, 1u64..8, any::<bool>(), any::<bool>(), 0u64..3, any::<bool>()),
    ) {
        let mut cfg = cfg;
        // Colors are the sets of a level indexed by the page number's low bits, two at least.
        let level = first_data_level(&mut cfg);
        level.index = IndexFn::LowBits;
        let ways = level.entries / level.sets().max(1);
        if level.sets() < 2 {
            level.entries = 2 * ways;
        }
        let (name, sets) = (level.name.clone(), level.sets() as u64);
        let reserved = reserved % sets;
        let small = sets - reserved;
        let mut params = vec![
            ("reserved", reserved.to_string()),
            ("first_color", (first % small).to_string()),
            ("colors_per_thread", (1 + (per - 1) % small).to_string()),
            ("assign", if same { "same" } else { "per_thread" }.to_string()),
            ("fetches", fetches.to_string()),
            // The default arena, one below it, and one misaligned for 2+ sets (refused).
            ("base", format!("{:#x}", [0x4000_0000u64, 0x2000_0000, 0x2000_1000][base as usize])),
        ];
        if named {
            params.push(("level", name));
        }
        with_technique(&cfg, opts, &steps, spaces, &spec("tlb_coloring", &params))?;
    }

    /// lockdown (seed 004 §III-IV): the pages locked at the program's first switch-in, their
    /// walks, the stall cycles, and every lock, flush and shootdown after.
    #[test]
    fn lockdown_agrees_with_its_twin(
        cfg in machine(),
        opts in options(),
        steps in steps(),
        spaces in 1usize..4,
        (lockable, pages, process, all, named) in (1usize..5, proptest::collection::vec(0u64..64, 0..5), 0usize..3, any::<bool>(), any::<bool>()),
    ) {
        let mut cfg = cfg;
        let level = first_data_level(&mut cfg);
        level.lockable = lockable.min(level.entries);
        let name = level.name.clone();
        let pages: Vec<String> = pages.iter().map(|&p| format!("{:#x}", page_va(p, &cfg))).collect();
        let mut params = vec![
            ("pages", pages.join("+")),
            ("process", (process % spaces).to_string()),
            ("cores", if all { "all" } else { "one" }.to_string()),
        ];
        if named {
            params.push(("level", name));
        }
        with_technique(&cfg, opts, &steps, spaces, &spec("lockdown", &params))?;
    }
}
