//! The DRAM channels every hardware thread shares (`timing.dram`), in closed form: n
//! independent misses that all issue at once finish n·line/B after the first begins (one
//! channel: a line every L cycles, the last answered (n-1)·L + latency after the first
//! began); c channels take n/c of that; a dependent chain waits only when a line occupies
//! its channel longer than the memory's latency; a second core's misses share the channels;
//! the engine agrees with the reference model throughout, and bad configurations get one
//! clear message.

mod common;

use tlblab_core::machine::{DramConfig, MachineConfig, MlpConfig};
use tlblab_core::reference::ReferenceModel;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

const MEMORY: u64 = 100;

/// One 64-entry TLB answering in 0 cycles, no cache (every line from memory, 100 cycles), a
/// walker of no fixed cost, at 1000 MHz; `channels` DRAM channels of 8-byte transfers at
/// `mega_transfers` MT/s (a 64-byte line: 8000 / `mega_transfers` cycles); `mlp` if given.
fn uncached(channels: u32, mega_transfers: u32, mlp: Option<MlpConfig>) -> MachineConfig {
    let mut m = common::uncached(MEMORY);
    m.timing.mlp = mlp;
    m.timing.dram = Some(DramConfig::new(channels, mega_transfers));
    m
}

fn slots(n: u32) -> Option<MlpConfig> {
    Some(MlpConfig {
        miss_slots: n,
        walkers: n,
        window: 1000,
        issue_instructions: 0,
        issue_width: 1,
        steady_state: false,
    })
}

fn load(thread: u32, va: u64) -> Record {
    Record::Access(Access::new(
        ThreadId(thread),
        AccessKind::Load,
        VirtAddr(va),
        8,
    ))
}

fn mark(thread: u32, begin: bool) -> Record {
    Record::Event(Event::Independent {
        thread: ThreadId(thread),
        begin,
    })
}

/// The reference model's run of the same records ends as the engine's: counters, clocks,
/// the channels' counts.
fn agrees(m: &MachineConfig, s: &System, records: &[Record]) {
    let mut r = ReferenceModel::machine(m, RunOptions::default());
    r.run(records).unwrap();
    if let Err(e) = common::reference_difference(s, &r) {
        panic!("engine and reference differ: {e}");
    }
}

/// The cycles of `body` on thread 0 after a first touch of page 0x1000 (its walk and fault out
/// of the count, and long enough ago that the channels are free), bracketed by
/// `Independent` marks when `marked`.
fn cycles(m: MachineConfig, body: &[Record], marked: bool) -> u64 {
    let mut records = vec![load(0, 0x1000), load(0, 0x1000)];
    if marked {
        records.push(mark(0, true));
    }
    records.extend_from_slice(body);
    if marked {
        records.push(mark(0, false));
    }
    let mut s = System::new(m.clone(), RunOptions::default()).unwrap();
    s.run_slice(&records[..2]).unwrap();
    let t0 = s.clock(0);
    s.run_slice(&records[2..]).unwrap();
    agrees(&m, &s, &records);
    s.clock(0) - t0
}

/// n loads of distinct lines of the touched page (n <= 64): TLB hits whose data comes from
/// memory.
fn lines(n: u64) -> Vec<Record> {
    (0..n).map(|i| load(0, 0x1000 + i * 64)).collect()
}

#[test]
fn given_a_line_cycles_formula_then_ddr4_4000_on_two_channels_is_64_gb_per_s() {
    // Seed 001 Table 5.1: DDR4-4000, two channels; 2 x 8 B x 4000 MT/s.
    let d = DramConfig::new(2, 4000);
    assert_eq!(d.peak_bytes_per_second(), 64e9);
    // A 64-byte line is 8 transfers, 2 ns on one channel: 7.4 cycles at 3.7 GHz.
    assert!((d.line_cycles(3700.0) - 7.4).abs() < 1e-9);
    assert_eq!(d.line_cycles_fixed(3700.0), (7.4f64 * 256.0).round() as u64);
}

#[test]
fn given_one_channel_then_n_back_to_back_independent_misses_take_n_lines_at_its_bandwidth() {
    // 400 MT/s: a line every 20 cycles. All n issue at once (64 slots); the i-th waits i
    // lines; the last is answered (n-1)·20 + 100 cycles after the first began.
    for n in [1u64, 2, 5, 20, 64] {
        let c = cycles(uncached(1, 400, slots(64)), &lines(n), true);
        assert_eq!(c, (n - 1) * 20 + MEMORY, "n {n}");
    }
    // Far past the latency, the channel sets the pace: n·line/B to within one latency.
    let c = cycles(uncached(1, 100, slots(64)), &lines(64), true);
    assert_eq!(c, 63 * 80 + MEMORY);
    assert!((64 * 80..=64 * 80 + MEMORY).contains(&c));
}

#[test]
fn given_two_channels_then_the_misses_go_two_at_a_time() {
    for n in [2u64, 7, 64] {
        let c = cycles(uncached(2, 400, slots(64)), &lines(n), true);
        assert_eq!(c, (n.div_ceil(2) - 1) * 20 + MEMORY, "n {n}");
    }
}

#[test]
fn given_a_fractional_line_time_then_the_channel_keeps_the_fraction_and_a_wait_rounds_up() {
    // 3000 MT/s: 8/3 cycles a line, 683/256 in the channels' fixed point. 64 misses: the last
    // waits 63 such lines, 168.08 cycles, charged as 169 (a whole-cycle rounding per line of
    // 8/3 would have made it 63·3 = 189, or 63·2 = 126).
    let m = uncached(1, 3000, slots(64));
    let line = m.timing.dram.unwrap().line_cycles_fixed(m.frequency_mhz);
    assert_eq!(line, 683);
    let c = cycles(m, &lines(64), true);
    assert_eq!(c, (63 * line).div_ceil(256) + MEMORY);
    assert_eq!(c, 169 + MEMORY);
}

#[test]
fn given_a_dependent_chain_then_it_waits_only_when_a_line_outlasts_the_latency() {
    // 20 cycles a line, 100 of latency: each line finds the channel free again.
    assert_eq!(
        cycles(uncached(1, 400, None), &lines(30), false),
        30 * MEMORY
    );
    // 200 cycles a line (40 MT/s): each line waits for the one before (the first, for the
    // set-up's last line, begun 100 cycles before it): a line every 200 cycles.
    assert_eq!(cycles(uncached(1, 40, None), &lines(30), false), 30 * 200);
}

#[test]
fn given_a_second_core_streaming_misses_then_the_first_cores_misses_wait_for_the_channel() {
    // Core 1 runs 64 independent misses per round; core 0 a dependent chain of 20. Alone,
    // core 0's chain takes 20 latencies; sharing one channel of 20 cycles a line, longer.
    let mut m = uncached(1, 400, slots(64));
    m.cores = 2;
    let chain: Vec<Record> = (0..20).map(|i| load(0, 0x1000 + i * 64)).collect();
    let alone = cycles(m.clone(), &chain, false);
    assert_eq!(alone, 20 * MEMORY);

    let mut records = vec![load(0, 0x1000), load(1, 0x20_0000), mark(1, true)];
    for round in 0..20u64 {
        records.push(load(0, 0x1000 + round * 64));
        for i in 0..64u64 {
            records.push(load(1, 0x20_0000 + (i * 64 + round * 4096) % 0x1000));
        }
    }
    records.push(mark(1, false));
    let mut s = System::new(m.clone(), RunOptions::default()).unwrap();
    s.run_slice(&records).unwrap();
    agrees(&m, &s, &records);
    let st = s.stats();
    let dram = st
        .dram
        .expect("a machine with timing.dram reports its channels");
    assert!(dram.queued_lines > 0 && dram.queue_cycles > 0, "{dram:?}");
    let core0 = &st.cores[0];
    assert!(
        core0.cycles > 21 * MEMORY,
        "core 0's chain waited for core 1's lines: {} cycles",
        core0.cycles
    );
}

#[test]
fn given_bad_channels_then_one_clear_message() {
    let mut m = uncached(0, 400, None);
    let e = m.validate().unwrap_err();
    assert!(e.contains("timing.dram.channels"), "{e}");
    m.timing.dram = Some(DramConfig::new(2, 0));
    let e = m.validate().unwrap_err();
    assert!(e.contains("timing.dram.mega_transfers"), "{e}");
}

#[test]
fn given_a_walk_reserving_its_later_lines_then_a_later_reference_takes_the_gap_before_them() {
    // Independent, 64 slots, one channel of 20 cycles a line. A: a page new to the TLB, its
    // walk's entries and its data five dependent lines 100 cycles apart; B, issued at the
    // same cycle, one line of the touched page. B's line waits for A's first line only (20
    // cycles), not for A's last, reserved 400 cycles ahead: the run takes A's latency.
    let body = [load(0, 0x40_0000), load(0, 0x1040)];
    let m = uncached(1, 400, slots(64));
    let mut plain = m.clone();
    plain.timing.dram = None;
    let with = cycles(m.clone(), &body, true);
    assert_eq!(with, cycles(plain, &body, true));
    let mut records = vec![load(0, 0x1000), load(0, 0x1000), mark(0, true)];
    records.extend_from_slice(&body);
    let mut s = System::new(m, RunOptions::default()).unwrap();
    s.run_slice(&records).unwrap();
    let before = {
        let mut s0 = System::new(s.config.clone(), RunOptions::default()).unwrap();
        s0.run_slice(&records[..3]).unwrap();
        s0.stats().dram.unwrap().queue_cycles
    };
    assert_eq!(s.stats().dram.unwrap().queue_cycles - before, 20);
}

/// `uncached(1, 400, None)` (one channel of 20 cycles a line, 100 cycles of latency, in
/// order) with three LRU cache levels of 16, 64 and 256 lines (1, 4 and 16 KiB, 4 ways) whose
/// misses all cost the memory's latency, and a walker that bypasses them (its entries take
/// no cache line): `writebacks` on or off.
fn cached(writebacks: bool) -> MachineConfig {
    let mut m = uncached(1, 400, None);
    m.caches = vec![
        common::cache("L1", 1, 1 << 10, 4, 1),
        common::cache("L2", 2, 4 << 10, 4, 1),
        common::cache("L3", 3, 16 << 10, 4, 1),
    ];
    m.walker.uncached = true;
    m.timing.dram.as_mut().unwrap().writebacks = writebacks;
    m
}

fn store(va: u64) -> Record {
    Record::Access(Access::new(ThreadId(0), AccessKind::Store, VirtAddr(va), 8))
}

#[test]
fn given_a_store_stream_over_twice_the_llc_then_each_dirty_line_is_written_back_once() {
    // 512 lines (32 KiB, 8 pages the TLB keeps), twice the L3. A pass of loads first: the
    // pages walked and the caches full of clean lines (the last 256 in the L3). Then two
    // passes of one store per line, each line missing every level (a sequential stream over
    // LRU levels smaller than it).
    const N: u64 = 512;
    let pass = |write: bool| -> Vec<Record> {
        (0..N)
            .map(|i| {
                let va = 0x10_0000 + i * 64;
                if write {
                    store(va)
                } else {
                    load(0, va)
                }
            })
            .collect()
    };
    for writebacks in [true, false] {
        let m = cached(writebacks);
        let mut s = System::new(m.clone(), RunOptions::default()).unwrap();
        let mut records = pass(false);
        s.run_slice(&records).unwrap();
        let mut counts = vec![(s.clock(0), s.stats().dram.unwrap())];
        for _ in 0..2 {
            let p = pass(true);
            s.run_slice(&p).unwrap();
            records.extend(p);
            counts.push((s.clock(0), s.stats().dram.unwrap()));
        }
        agrees(&m, &s, &records);
        let delta = |i: usize| {
            let ((t0, d0), (t1, d1)) = (counts[i - 1], counts[i]);
            (
                t1 - t0,
                d1.lines - d0.lines,
                d1.writeback_lines - d0.writeback_lines,
            )
        };
        if !writebacks {
            // Reads only: every line from memory, none written, no wait (20 < 100).
            assert_eq!(delta(1), (N * MEMORY, N, 0));
            assert_eq!(delta(2), (N * MEMORY, N, 0));
            continue;
        }
        // A store dirties the L1's line; each level's dirty victim is marked in the level
        // below, which still holds it; the L3's goes to memory. Pass 1: the first 256 lines
        // evict the clean ones the loads left, the last 256 evict the first 256, dirty: 256
        // written back. Each writeback takes the channel when its store's line is answered,
        // which is when the next store issues: that store's line waits 20 cycles (255 of
        // them; the last writeback has no store after it in the pass).
        assert_eq!(delta(1), (N * MEMORY + 255 * 20, N, 256));
        // Pass 2: every line evicts a dirty one, so N lines read and N written back, and
        // every store waits for the writeback before it (the first, for pass 1's last).
        assert_eq!(delta(2), (N * (MEMORY + 20), N, N));
    }
}

#[test]
fn given_loads_only_then_nothing_is_written_back() {
    let m = cached(true);
    let records: Vec<Record> = (0..2048u64).map(|i| load(0, 0x10_0000 + i * 64)).collect();
    let mut s = System::new(m.clone(), RunOptions::default()).unwrap();
    s.run_slice(&records).unwrap();
    agrees(&m, &s, &records);
    let d = s.stats().dram.unwrap();
    assert_eq!(d.writeback_lines, 0, "{d:?}");
    assert!(d.lines >= 2048, "{d:?}");
}

/// `uncached(1, 4000, slots(64))` (one channel of 2 cycles a line, 100 of latency, 64 slots)
/// with row activations: one rank of `banks` banks, rows of `row_bytes`, tRRD 10 and tFAW 100
/// cycles (at the machine's 1 GHz).
fn with_rows(banks: u32, row_bytes: u64) -> MachineConfig {
    let mut m = uncached(1, 4000, slots(64));
    let d = m.timing.dram.as_mut().unwrap();
    d.ranks = Some(1);
    d.banks = Some(banks);
    d.row_bytes = Some(row_bytes);
    d.t_rrd_ps = Some(10_000);
    d.t_faw_ps = Some(100_000);
    m
}

/// Lines 1..=63 of the touched page (line 0 is the set-up's, its row open).
fn other_lines() -> Vec<Record> {
    (1..64u64).map(|i| load(0, 0x1000 + i * 64)).collect()
}

/// The activations `body` took after the set-up (`cycles`' first two records).
fn activations(m: &MachineConfig, body: &[Record]) -> u64 {
    let mut records = vec![load(0, 0x1000), load(0, 0x1000), mark(0, true)];
    records.extend_from_slice(body);
    let mut s = System::new(m.clone(), RunOptions::default()).unwrap();
    s.run_slice(&records[..2]).unwrap();
    let before = s.stats().dram.unwrap().activations;
    s.run_slice(&records[2..]).unwrap();
    s.stats().dram.unwrap().activations - before
}

#[test]
fn given_rows_of_one_line_when_independent_lines_each_open_one_then_a_rank_takes_four_per_tfaw() {
    // One bank, a row per line: each of the 63 lines needs an activation. The rank takes
    // them tRRD apart, four per tFAW: the j-th at (j / 4)·100 + (j % 4)·10, the last (j =
    // 62) at 1520, its line on the free channel then, answered 100 later. Without the
    // activations the 63 lines take the channel 2 cycles each: 62·2 + 100.
    let m = with_rows(1, 64);
    assert_eq!(
        cycles(m.clone(), &other_lines(), true),
        15 * 100 + 2 * 10 + MEMORY
    );
    assert_eq!(activations(&m, &other_lines()), 63);
    assert_eq!(
        cycles(uncached(1, 4000, slots(64)), &other_lines(), true),
        62 * 2 + MEMORY
    );
}

#[test]
fn given_rows_of_8_kib_when_a_page_is_read_in_order_then_its_lines_hit_the_open_row() {
    // A 4 KiB page lies in one 8 KiB row, which the set-up's line opened: no activation, and
    // the lines take what they take without the activations.
    let m = with_rows(16, 8192);
    assert_eq!(activations(&m, &other_lines()), 0);
    assert_eq!(
        cycles(m, &other_lines(), true),
        cycles(uncached(1, 4000, slots(64)), &other_lines(), true)
    );
}

#[test]
fn given_bad_row_timings_then_one_clear_message_naming_the_field() {
    let mut m = with_rows(16, 8192);
    m.timing.dram.as_mut().unwrap().t_faw_ps = Some(5_000);
    let e = m.validate().unwrap_err();
    assert!(e.starts_with("timing.dram.t_faw_ps"), "{e}");
    let mut m = with_rows(16, 8192);
    m.timing.dram.as_mut().unwrap().banks = None;
    let e = m.validate().unwrap_err();
    assert!(e.starts_with("timing.dram.banks"), "{e}");
    let mut m = with_rows(16, 100);
    m.timing.dram.as_mut().unwrap().row_bytes = Some(100);
    let e = m.validate().unwrap_err();
    assert!(e.starts_with("timing.dram.row_bytes"), "{e}");
}
