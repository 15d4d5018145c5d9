//! Checkpoints (`tlblab_config::checkpoint`, issue 59): a run cut anywhere, saved to a file,
//! restored into a new machine and continued ends exactly as the uninterrupted run, in every
//! counter and in the state the reference model compares (TLB entries, clocks, OS counters),
//! on random machines of one hardware thread, random options and traces, and random cut
//! points; on random machines of several cores and hardware threads, paused at a random
//! reference (or at the region of interest) with random batch and read-ahead sizes, the
//! queues read ahead saved with the state; one pass saving checkpoints at several random
//! points, its intervals restored from them and merged (`Stats::then`), gives the
//! uninterrupted run's statistics; and every defect of a file is one error naming it.

#[path = "../../tlblab-core/tests/common/mod.rs"]
mod common;

use common::random::{machine, options, records, same_run, setup, steps, Step};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use tlblab_config::checkpoint;
use tlblab_core::machine::MachineConfig;
use tlblab_core::{RunOptions, System};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tlblab-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn stats_json(sys: &System) -> String {
    serde_json::to_string(&sys.stats()).unwrap()
}

/// A random machine, run options, trace steps and number of address spaces.
fn random_run() -> impl Strategy<Value = (MachineConfig, RunOptions, Vec<Step>, usize)> {
    (machine(), options(), steps(), 1usize..4)
}

/// The run's read-ahead batch and window (the whole trace, 2^16 records, as the reference
/// model reads it, or a short window) and its warm-up (none in two cases of three).
fn read_ahead() -> impl Strategy<Value = (usize, usize, u64)> {
    (
        1usize..40,
        prop_oneof![Just(1usize << 16), 2usize..200],
        prop_oneof![2 => Just(0u64), 1 => 1u64..600],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Run records[..cut], save, restore into a new machine, run records[cut..]: the same
    /// statistics as the uninterrupted run, and the reference model's end state.
    #[test]
    fn a_restored_run_continues_as_the_uninterrupted_one(
        (cfg, opts, steps, spaces) in random_run(),
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
        checkpoint::save(&path, &first, "random steps").unwrap();
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

    /// On machines of any number of cores and hardware threads, the run paused at a random
    /// reference (or where the region of interest begins), saved with its read-ahead queues,
    /// restored into a new machine and continued on the records it had not read ends with
    /// the uninterrupted run's statistics, byte for byte; with the default read-ahead window
    /// (the whole trace read ahead, as the reference model does), with the reference
    /// model's end state too.
    #[test]
    fn a_paused_run_of_several_hardware_threads_continues_as_the_uninterrupted_one(
        (cfg, opts, steps, spaces) in random_run(),
        pause_share in 0.0f64..=1.2,
        at_roi in any::<bool>(),
        (batch, window, warmup) in read_ahead(),
    ) {
        prop_assume!(cfg.validate().is_ok());
        let records = records(&steps, &cfg, opts.walks);
        let pause_at = ((records.len() as f64) * pause_share) as u64;

        let (mut whole, mut reference) = setup(&cfg, opts, spaces);
        whole.set_read_ahead(batch, window);
        whole.set_warmup(warmup);
        reference.set_warmup(warmup);
        let a = whole.run_slice(&records).map_err(|e| e.0);
        let b = reference.run(&records);

        let (mut first, _) = setup(&cfg, opts, spaces);
        first.set_read_ahead(batch, window);
        first.set_warmup(warmup);
        if at_roi && warmup > 0 {
            first.pause_at_roi();
        } else {
            first.pause_at(pause_at);
        }
        let f = first.run_slice(&records).map_err(|e| e.0);
        if f.is_err() || !first.paused() {
            // It failed or ended before the pause: then it is the uninterrupted run.
            prop_assert_eq!(a.is_ok(), f.is_ok());
            if a.is_ok() {
                prop_assert_eq!(stats_json(&whole), stats_json(&first));
            }
            return Ok(());
        }
        let path = scratch(&format!("pause-{pause_at}-{batch}-{window}-{}.ckpt", records.len()));
        checkpoint::save(&path, &first, "random steps").unwrap();
        let restored = checkpoint::load(&path, &cfg, &opts, "random steps").unwrap();
        std::fs::remove_file(&path).unwrap();
        let read = restored.records as usize;
        prop_assert_eq!(read as u64, first.records_read());
        let mut second = restored.system;
        prop_assert!(second.paused());
        let c = second.run_slice(&records[read..]).map_err(|e| e.0);
        prop_assert_eq!(a.is_ok(), c.is_ok(), "uninterrupted {:?}, restored {:?}", a, c);
        if a.is_ok() {
            prop_assert_eq!(stats_json(&whole), stats_json(&second));
        }
        if window == 1 << 16 {
            same_run(&second, c, &reference, b)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The interval-parallel run (`tlblab.intervals`): one pass pauses at several random
    /// references (after the warm-up, if any) and saves a checkpoint at each; each interval is
    /// restored from its checkpoint, stops where the next was saved, and reports its own
    /// counters (`Stats::since` the restored state; the first, the run's from its start or
    /// region of interest); `Stats::then` folded over them gives the uninterrupted run's
    /// statistics byte for byte, on machines of any number of cores and hardware threads.
    #[test]
    fn intervals_restored_from_one_pass_merge_into_the_uninterrupted_run(
        (cfg, opts, steps, spaces) in random_run(),
        cut_shares in proptest::collection::vec(0.0f64..=1.1, 1..5),
        (batch, window, warmup) in read_ahead(),
    ) {
        prop_assume!(cfg.validate().is_ok());
        let records = records(&steps, &cfg, opts.walks);
        let mut bounds: Vec<u64> = cut_shares
            .iter()
            .map(|s| warmup + ((records.len() as f64) * s) as u64)
            .collect();
        bounds.push(warmup);
        bounds.sort_unstable();
        bounds.dedup();

        let (mut whole, _) = setup(&cfg, opts, spaces);
        whole.set_read_ahead(batch, window);
        whole.set_warmup(warmup);
        if whole.run_slice(&records).is_err() || !whole.roi_begun() {
            return Ok(()); // a failing trace, or one within its warm-up: nothing to merge
        }

        // The pass: one run, paused and saved at each boundary it reaches.
        let (mut pass, _) = setup(&cfg, opts, spaces);
        pass.set_read_ahead(batch, window);
        pass.set_warmup(warmup);
        let mut saved = Vec::new();
        for (i, &b) in bounds.iter().enumerate() {
            pass.pause_at(b);
            let read = pass.records_read() as usize;
            pass.run_slice(&records[read..]).unwrap();
            if !pass.paused() {
                break;
            }
            let path = scratch(&format!("interval-{i}-{b}-{batch}-{window}-{}.ckpt", records.len()));
            checkpoint::save(&path, &pass, "random steps").unwrap();
            saved.push(path);
        }
        let read = pass.records_read() as usize;
        pass.run_slice(&records[read..]).unwrap();
        prop_assert_eq!(stats_json(&pass), stats_json(&whole));
        prop_assume!(!saved.is_empty());

        // The intervals, each from its checkpoint alone, merged in run order.
        let mut merged: Option<tlblab_core::Stats> = None;
        for (i, path) in saved.iter().enumerate() {
            let restored = checkpoint::load(path, &cfg, &opts, "random steps").unwrap();
            std::fs::remove_file(path).unwrap();
            let mut sys = restored.system;
            let start = sys.stats();
            if i + 1 < saved.len() {
                sys.pause_at(bounds[i + 1]);
            }
            sys.run_slice(&records[restored.records as usize..]).unwrap();
            let own = if i == 0 { sys.stats() } else { sys.stats().since(&start) };
            merged = Some(match merged {
                None => own,
                Some(m) => m.then(&own),
            });
        }
        prop_assert_eq!(
            serde_json::to_string(&merged.unwrap()).unwrap(),
            stats_json(&whole)
        );
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
    checkpoint::save(&path, &sys, "random:pages=512,accesses=2000").unwrap();
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
        e.contains(&format!(
            "checkpoint format version 9 at offset 8, expected {}",
            checkpoint::VERSION
        )),
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
    let e = checkpoint::save(&target, &sys, "w").unwrap_err();
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
    let (wl, params) = tlblab_trace::workloads::parse_spec("random:pages=64,accesses=100").unwrap();
    let mut sys = System::new(cfg.clone(), RunOptions::default()).unwrap();
    sys.run(&mut tlblab_trace::workloads::build(&wl, &params, 0).unwrap())
        .unwrap();
    let e = checkpoint::save(&path, &sys, "w").unwrap_err();
    assert!(
        e.contains("a machine of several hardware threads (2) is saved only where its run paused"),
        "{e}"
    );
    assert!(!path.exists());

    let mut sys = System::new(cfg, RunOptions::default()).unwrap();
    tlblab_core::registry::install(
        &mut sys,
        &tlblab_core::techniques::parse_spec("pt_baker:mode=kernel").unwrap(),
    )
    .unwrap();
    let e = checkpoint::save(&path, &sys, "w").unwrap_err();
    assert!(
        e.contains("a run with a technique cannot be saved")
            && e.contains("give the technique to the restored run"),
        "{e}"
    );
    assert!(!path.exists());
}

/// A technique given to the restored run learns the regions announced before the checkpoint
/// and starts at the application's time: PT-Baker's helper sweeps the region the workload
/// announced (seed 001 §4.1, Alg. 1: the helper is created after the workload's
/// initialisation).
#[test]
fn a_technique_given_to_the_restored_run_learns_the_regions_and_starts_there() {
    let mut cfg = tlblab_config::load_machine("zen3").unwrap();
    cfg.cores = 2;
    let opts = RunOptions::default();
    let wl = "gups:log2_words=16,updates=20000,populate=1";
    let (name, params) = tlblab_trace::workloads::parse_spec(wl).unwrap();
    let mut sys = System::new(cfg.clone(), opts).unwrap();
    sys.pause_at_roi();
    sys.run(&mut tlblab_trace::workloads::build(&name, &params, 0).unwrap())
        .unwrap();
    assert!(sys.paused());
    let path = scratch("technique-at-restore.ckpt");
    checkpoint::save(&path, &sys, wl).unwrap();
    let restored = checkpoint::load(&path, &cfg, &opts, wl).unwrap();
    std::fs::remove_file(&path).unwrap();
    let mut second = restored.system;
    let app_clock = second.clock(0);
    assert!(app_clock > 0);
    tlblab_core::registry::install(
        &mut second,
        &tlblab_core::techniques::parse_spec("pt_baker:mode=kernel,stride=8").unwrap(),
    )
    .unwrap();
    assert!(
        second.clock(1) >= app_clock,
        "the helper starts at the application's time"
    );
    let mut src = tlblab_trace::workloads::build(&name, &params, 0).unwrap();
    let mut buf = Vec::new();
    let mut skipped = 0u64;
    while skipped < restored.records {
        buf.clear();
        let want = (restored.records - skipped).min(tlblab_core::system::BATCH as u64) as usize;
        skipped += src.fill(&mut buf, want).unwrap() as u64;
    }
    second.run(&mut src).unwrap();
    let counters = second.stats().technique.unwrap().counters;
    assert_eq!(counters["range_pages"], (8u64 << 16) / 4096, "{counters:?}");
    assert!(
        counters["sweeps"] > 0 && counters["pte_reads"] > 0,
        "{counters:?}"
    );
}
