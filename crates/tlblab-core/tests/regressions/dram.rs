//! The DRAM channels' horizon (`timing.dram`, `DRAM_HORIZON`): a regression of its own.

use super::*;
use tlblab_core::machine::DramConfig;
use tlblab_trace::record::NO_THREAD;

/// Given one DRAM channel of 80-cycle lines and a core whose loads each take a line from
/// memory 100 cycles after the one before (lines with 20-cycle gaps, which no line fits), when
/// that core has run 2^16 cycles past them and a second core, started later by its first
/// switch's cost, then loads (a straggler from further back than the horizon), then the
/// engine places its lines where the reference model does, for every start across two of
/// the first core's lines at the horizon. Before 2026-11-29 the engine's calendar merged lines
/// across such gaps and, pruning the horizon, kept the part of the merged interval that
/// whole lines end to end would have had: up to a line more or less busy than the lines
/// given, so the straggler waited where the reference's did not (or the other way). Found by
/// `machines_with_every_event_agree_with_the_reference` (`PROPTEST_RNG_SEED=101`: 3 cores,
/// DRAM with writebacks, MLP, engine 100 cycles over the reference) and
/// `pt_baker_agrees_with_its_twin_on_out_of_order_cores`, whose helper runs behind.
#[test]
fn a_straggler_behind_the_horizon_finds_the_channel_as_the_reference_does() {
    let mut cfg = common::uncached(100);
    cfg.cores = 2;
    // 8 transfers of 8 bytes at 100 MT/s and 1000 MHz: a line holds the channel 80 cycles.
    cfg.timing.dram = Some(DramConfig::new(1, 100));
    let load = |thread: u32, va: u64| {
        Record::Access(Access::new(
            ThreadId(thread),
            AccessKind::Load,
            VirtAddr(va),
            8,
        ))
    };
    // Core 0's loads: the first walks (four entries and its line: 500 cycles), each next one
    // takes one line, 100 cycles after the one before. Its last issues at 69,900 cycles: the
    // horizon then ends at 4,364, inside a line of the first core's (4,300-4,380).
    let loads = 1 + (70_000 - 500) / 100;
    // Then core 1's switch, whose cost starts it late: every load before it runs first (the
    // queues drain before an event), then core 1's load, from its own clock.
    let mut records: Vec<Record> = (0..loads)
        .map(|i| load(0, 0x4000_0000 + (i % 64) * 8))
        .collect();
    records.push(Record::Event(Event::ContextSwitch {
        core: CoreId(1),
        from: NO_THREAD,
        to: ThreadId(1),
    }));
    records.push(load(1, 0x5000_0000));
    let mut differ = Vec::new();
    for start in (4_200..4_700).step_by(10) {
        let mut opts = RunOptions::default();
        opts.os.switch_cycles = start;
        let (mut sys, mut r) = common::run::setup(&cfg, opts, 1);
        sys.run_slice(&records).unwrap();
        r.run(&records).unwrap();
        if let Err(e) = common::reference_difference(&sys, &r) {
            differ.push(format!("core 1 starting at {start}: {e}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
