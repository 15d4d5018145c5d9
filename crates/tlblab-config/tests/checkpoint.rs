//! Checkpoints (`tlblab_config::checkpoint`, issue 59): a run cut anywhere, saved to a file,
//! restored into a new machine and continued ends exactly as the uninterrupted run, in every
//! counter and in the state the reference model compares (TLB entries, clocks, OS counters),
//! on random machines of one hardware thread, random options and traces, and random cut
//! points; and every defect of a file is one error naming it.

#[path = "../../tlblab-core/tests/common/mod.rs"]
mod common;

use common::random::{machine, options, records, same_run, setup, steps};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use tlblab_config::checkpoint;
use tlblab_core::{RunOptions, System};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tlblab-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stats_json(sys: &System) -> String {
    serde_json::to_string(&sys.stats()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Run records[..cut], save, restore into a new machine, run records[cut..]: the same
    /// statistics as the uninterrupted run, and the reference model's end state.
    #[test]
    fn a_restored_run_continues_as_the_uninterrupted_one(
        cfg in machine(),
        opts in options(),
        steps in steps(),
        spaces in 1usize..4,
        cut_share in 0.0f64..=1.0,
        warmup in prop_oneof![2 => Just(0u64), 1 => 1u64..600],
    ) {
        let mut cfg = cfg;
        cfg.cores = 1;
        cfg.threads_per_core = 1;
        prop_assume!(cfg.validate().is_ok());
        let records = records(&steps, &cfg, opts.walks);
        let cut = ((records.len() as f64) * cut_share) as usize;

        let (mut whole, mut reference) = setup(&cfg, opts, spaces);
        whole.set_warmup(warmup);
        reference.set_warmup(warmup);
        let a = whole.run_slice(&records).map_err(|e| e.0);
        let b = reference.run(&records);

        let (mut first, _) = setup(&cfg, opts, spaces);
        first.set_warmup(warmup);
        if first.run_slice(&records[..cut]).is_err() {
            // The trace fails before the cut: the uninterrupted run failed there too.
            prop_assert!(a.is_err());
            return Ok(());
        }
        let path = scratch(&format!("cut-{cut}-{}.ckpt", records.len()));
        checkpoint::save(&path, &first, "random steps", cut as u64).unwrap();
        let restored = checkpoint::load(&path, &cfg, &opts, "random steps").unwrap();
        std::fs::remove_file(&path).unwrap();
        prop_assert_eq!(restored.records, cut as u64);
        let mut second = restored.system;
        let c = second.run_slice(&records[cut..]).map_err(|e| e.0);
        prop_assert_eq!(a.is_ok(), c.is_ok(), "uninterrupted {:?}, restored {:?}", a, c);
        if a.is_ok() {
            prop_assert_eq!(stats_json(&whole), stats_json(&second));
        }
        same_run(&second, c, &reference, b)?;
    }
}

/// A small saved run on the zen3 preset, and the path it was saved to.
fn saved(name: &str) -> (PathBuf, tlblab_core::MachineConfig, RunOptions) {
    let mut cfg = tlblab_config::load_machine("zen3").unwrap();
    cfg.cores = 1;
    cfg.threads_per_core = 1;
    let opts = RunOptions::default();
    let (wl, params) =
        tlblab_trace::workloads::parse_spec("random:pages=512,accesses=2000").unwrap();
    let mut src = tlblab_trace::workloads::build(&wl, &params, 0).unwrap();
    let mut sys = System::new(cfg.clone(), opts).unwrap();
    sys.run(&mut src).unwrap();
    let path = scratch(name);
    checkpoint::save(&path, &sys, "random:pages=512,accesses=2000", 2001).unwrap();
    (path, cfg, opts)
}

fn load_err(path: &Path, cfg: &tlblab_core::MachineConfig, opts: &RunOptions, wl: &str) -> String {
    match checkpoint::load(path, cfg, opts, wl) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => e,
    }
}

#[test]
fn every_defect_of_a_checkpoint_is_one_error_naming_the_file() {
    let wl = "random:pages=512,accesses=2000";
    let (path, cfg, opts) = saved("defects.ckpt");
    let good = std::fs::read(&path).unwrap();
    let shown = path.display().to_string();
    assert!(checkpoint::load(&path, &cfg, &opts, wl).is_ok());

    let mut bytes = good.clone();
    bytes[0] = b'X';
    std::fs::write(&path, &bytes).unwrap();
    let e = load_err(&path, &cfg, &opts, wl);
    assert!(e.starts_with(&shown) && e.contains("not a tlblab checkpoint: expected the bytes \"TLBLABCK\" at offset 0, found \"XLBLABCK\""), "{e}");

    let mut bytes = good.clone();
    bytes[8] = 9;
    std::fs::write(&path, &bytes).unwrap();
    let e = load_err(&path, &cfg, &opts, wl);
    assert!(
        e.contains("checkpoint format version 9 at offset 8, expected 1"),
        "{e}"
    );

    std::fs::write(&path, &good[..good.len() - 10]).unwrap();
    let e = load_err(&path, &cfg, &opts, wl);
    assert!(
        e.contains("truncated or extended: expected") && e.contains("found"),
        "{e}"
    );

    std::fs::write(&path, &good[..20]).unwrap();
    let e = load_err(&path, &cfg, &opts, wl);
    assert!(e.contains("truncated: expected a header of"), "{e}");

    let mut bytes = good.clone();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let e = load_err(&path, &cfg, &opts, wl);
    assert!(e.contains("corrupt engine state: expected checksum"), "{e}");

    std::fs::write(&path, &good).unwrap();
    let mut other = tlblab_config::load_machine("xeon-e5-2650").unwrap();
    other.cores = 1;
    other.threads_per_core = 1;
    let e = load_err(&path, &other, &opts, wl);
    assert!(
        e.contains(
            "saved on another machine: the checkpoint's is 'zen3', this run's 'xeon-e5-2650'"
        ),
        "{e}"
    );

    let mut edited = cfg.clone();
    edited.tlbs[0].entries *= 2;
    let e = load_err(&path, &edited, &opts, wl);
    assert!(e.contains("they differ at `tlb[0].entries`"), "{e}");

    let e = load_err(&path, &cfg, &RunOptions { seed: 7, ..opts }, wl);
    assert!(
        e.contains("saved with other run options: they differ at `seed`"),
        "{e}"
    );
    // The reference limit is the restored run's own.
    assert!(checkpoint::load(
        &path,
        &cfg,
        &RunOptions {
            max_references: 9,
            ..opts
        },
        wl
    )
    .is_ok());

    let e = load_err(&path, &cfg, &opts, "gups");
    assert!(
        e.contains("saved on workload 'random:pages=512,accesses=2000', this run's is 'gups'"),
        "{e}"
    );
    std::fs::remove_file(&path).unwrap();
}

/// The write fails after the temporary file is written (the rename onto a directory): the
/// temporary file is removed, and nothing takes the target's place.
#[test]
fn a_checkpoint_that_cannot_be_written_leaves_no_file() {
    // A directory of its own: the other tests write their checkpoints concurrently.
    let dir = std::env::temp_dir().join(format!(
        "tlblab-checkpoint-unwritable-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("in-the-way");
    std::fs::create_dir_all(&target).unwrap();
    let mut cfg = tlblab_config::load_machine("zen3").unwrap();
    cfg.cores = 1;
    cfg.threads_per_core = 1;
    let sys = System::new(cfg, RunOptions::default()).unwrap();
    let e = checkpoint::save(&target, &sys, "w", 0).unwrap_err();
    assert!(
        e.starts_with(&target.display().to_string()) && e.contains("cannot write the checkpoint"),
        "{e}"
    );
    assert!(target.is_dir());
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["in-the-way".to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn runs_the_format_cannot_hold_yet_are_refused_with_the_reason() {
    let path = scratch("refused.ckpt");
    let mut cfg = tlblab_config::load_machine("zen3").unwrap();
    cfg.cores = 2;
    cfg.threads_per_core = 1;
    let sys = System::new(cfg, RunOptions::default()).unwrap();
    let e = checkpoint::save(&path, &sys, "w", 0).unwrap_err();
    assert!(
        e.contains("checkpoints need a machine of one hardware thread for now (this one has 2"),
        "{e}"
    );
    assert!(!path.exists());
}
