//! Memory-level parallelism of independent references (`timing.mlp`, Karkhanis & Smith ISCA
//! 2004's first-order model), in closed form: n independent misses of latency L with k slots
//! take ceil(n/k)·L; a dependent chain takes n·L; the reorder window and the walkers bound the
//! overlap as the slots do; a machine without `timing.mlp` ignores the marks; and the engine
//! agrees with the reference model.

mod common;

use tlblab_core::machine::{MachineConfig, MlpConfig};
use tlblab_core::reference::ReferenceModel;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

const MEMORY: u64 = 100;

/// One 64-entry TLB answering in 0 cycles, no cache (every data line and every page-table
/// entry from memory, 100 cycles), a walker of no fixed cost; with `mlp` if given.
fn uncached(mlp: Option<MlpConfig>) -> MachineConfig {
    let mut m = common::uncached(MEMORY);
    m.timing.mlp = mlp;
    m
}

fn mlp(miss_slots: u32, walkers: u32, window: u32) -> Option<MlpConfig> {
    issuing(miss_slots, walkers, window, 0, 1)
}

/// `mlp` with the program's `instructions` before each reference, `width` a cycle.
fn issuing(
    miss_slots: u32,
    walkers: u32,
    window: u32,
    instructions: u32,
    width: u32,
) -> Option<MlpConfig> {
    Some(MlpConfig {
        miss_slots,
        walkers,
        window,
        issue_instructions: instructions,
        issue_width: width,
        steady_state: false,
    })
}

fn load(va: u64) -> Record {
    Record::Access(Access::new(ThreadId(0), AccessKind::Load, VirtAddr(va), 8))
}

fn mark(begin: bool) -> Record {
    Record::Event(Event::Independent {
        thread: ThreadId(0),
        begin,
    })
}

/// The cycles of `body` after a first touch of page 0x1000 (its walk and fault out of the
/// count), bracketed by `Independent` marks when `marked`; checked against the reference.
fn cycles(m: MachineConfig, body: &[Record], marked: bool) -> u64 {
    let mut records = vec![load(0x1000)];
    if marked {
        records.push(mark(true));
    }
    records.extend_from_slice(body);
    if marked {
        records.push(mark(false));
    }
    let mut s = System::new(m.clone(), RunOptions::default()).unwrap();
    s.run_slice(&records[..1]).unwrap();
    let t0 = s.clock(0);
    s.run_slice(&records[1..]).unwrap();
    let mut r = ReferenceModel::machine(&m, RunOptions::default());
    r.run(&records).unwrap();
    assert_eq!(r.clocks()[0], s.clock(0), "the reference model's clock");
    s.clock(0) - t0
}

/// n loads of distinct lines of the touched page: TLB hits whose data comes from memory.
fn lines(n: u64) -> Vec<Record> {
    (0..n).map(|i| load(0x1000 + (i % 64) * 64)).collect()
}

#[test]
fn given_k_slots_then_n_independent_misses_take_ceil_n_over_k_latencies() {
    for (n, k) in [
        (1, 1),
        (10, 1),
        (10, 3),
        (24, 24),
        (25, 24),
        (100, 6),
        (7, 64),
    ] {
        let c = cycles(uncached(mlp(k, k, 1000)), &lines(n as u64), true);
        assert_eq!(c, (n as u64).div_ceil(k as u64) * MEMORY, "n {n}, k {k}");
    }
}

#[test]
fn given_no_marks_then_the_misses_are_a_dependent_chain_of_n_latencies() {
    let c = cycles(uncached(mlp(24, 6, 44)), &lines(50), false);
    assert_eq!(c, 50 * MEMORY);
}

fn depends(back: u32) -> Record {
    Record::Event(Event::Depends {
        thread: ThreadId(0),
        back,
    })
}

/// `lines(n)`, each load after the first preceded by `Depends { back }`.
fn chained(n: u64, back: u32) -> Vec<Record> {
    let mut v = Vec::new();
    for (i, r) in lines(n).into_iter().enumerate() {
        if i > 0 {
            v.push(depends(back));
        }
        v.push(r);
    }
    v
}

#[test]
fn given_each_load_depends_on_the_one_before_then_marked_misses_are_a_chain_of_n_latencies() {
    // A pointer chase: each address comes from the load before, in flight: no overlap, however
    // many slots.
    let c = cycles(uncached(mlp(24, 6, 44)), &chained(50, 1), true);
    assert_eq!(c, 50 * MEMORY);
}

#[test]
fn given_k_independent_chains_interleaved_then_n_misses_take_n_over_k_latencies() {
    // k chases in lockstep (each load depends on the one k before it): k misses in flight at
    // once, so n loads take n/k latencies, as the slots' closed form gives for k slots.
    for k in [2u32, 3, 4, 8] {
        let n = 12 * k as u64;
        let c = cycles(uncached(mlp(24, 6, 1000)), &chained(n, k), true);
        assert_eq!(c, n / k as u64 * MEMORY, "k {k}");
    }
}

#[test]
fn given_a_producer_that_hit_or_is_beyond_the_window_then_the_load_does_not_wait() {
    // Back further than the window (rounded up to 8) or than the references made: as if
    // independent.
    let independent = cycles(uncached(mlp(4, 4, 8)), &lines(20), true);
    assert_eq!(
        cycles(uncached(mlp(4, 4, 8)), &chained(20, 8), true),
        independent
    );
    assert_eq!(
        cycles(uncached(mlp(4, 4, 8)), &chained(20, 5000), true),
        independent
    );
    // An unmarked thread ignores it: the chain in order either way.
    assert_eq!(
        cycles(uncached(mlp(4, 4, 8)), &chained(20, 1), false),
        20 * MEMORY
    );
    // A machine without `timing.mlp` ignores it.
    assert_eq!(cycles(uncached(None), &chained(20, 1), true), 20 * MEMORY);
}

/// `uncached` with a 32 KiB first-level cache of 4 cycles and `timing.mlp` (16 slots, 4
/// walkers, `width` a cycle), in the steady state or not.
fn l1_cached(steady: bool, width: u32) -> MachineConfig {
    let mut m = common::uncached(MEMORY);
    m.caches = vec![common::cache("L1", 1, 32 << 10, 8, 4)];
    m.timing.mlp = Some(MlpConfig {
        miss_slots: 16,
        walkers: 4,
        window: 1000,
        issue_instructions: 0,
        issue_width: width,
        steady_state: steady,
    });
    m
}

fn fetch(va: u64) -> Record {
    Record::Access(Access::new(ThreadId(0), AccessKind::Instr, VirtAddr(va), 4))
}

#[test]
fn given_the_steady_state_then_first_level_hits_cost_their_issue_not_their_latency() {
    // 40 loads and 40 fetches of the touched line: first-level hits of the TLB and the cache.
    let loads: Vec<Record> = (0..40).map(|_| load(0x1000)).collect();
    let fetches: Vec<Record> = (0..40).map(|_| fetch(0x1000)).collect();
    // Out of it, each costs its latency (4 cycles), marked or not.
    assert_eq!(cycles(l1_cached(false, 4), &loads, true), 40 * 4);
    assert_eq!(cycles(l1_cached(false, 4), &fetches, true), 40 * 4);
    // In it, a data hit costs nothing more, a fetch 1/width of a cycle (40 fetches at 3 a
    // cycle: 13 cycles).
    assert_eq!(cycles(l1_cached(true, 4), &loads, true), 0);
    assert_eq!(cycles(l1_cached(true, 3), &fetches, true), 13);
    // Unmarked, the steady state does not apply.
    assert_eq!(cycles(l1_cached(true, 3), &fetches, false), 40 * 4);
    // A chain of hits, each load's address from the one before, takes a latency a step: the
    // first issues at once, each next when the one before has its value, and the end of the
    // marks waits for the last one's.
    let mut chase = vec![load(0x1000)];
    for _ in 1..40 {
        chase.extend([depends(1), load(0x1000)]);
    }
    assert_eq!(cycles(l1_cached(true, 4), &chase, true), 40 * 4);
    // A miss is no steady-state event: a line of a new page walks and reads memory.
    let other = [load(0x2000)];
    assert!(cycles(l1_cached(true, 4), &other, true) > 0);
}

#[test]
fn given_the_steady_state_with_instructions_between_references_then_the_machine_is_refused() {
    let mut m = l1_cached(true, 4);
    m.timing.mlp.as_mut().unwrap().issue_instructions = 2;
    let e = System::new(m, RunOptions::default())
        .err()
        .expect("refused")
        .0;
    assert!(
        e.contains("timing.mlp.steady_state") && e.contains("issue_instructions"),
        "{e}"
    );
}

#[test]
fn given_a_window_narrower_than_the_slots_then_the_window_bounds_the_overlap() {
    // The fifth reference is 4 past the oldest miss: it waits for it (and its three peers).
    let c = cycles(uncached(mlp(8, 8, 4)), &lines(20), true);
    assert_eq!(c, 20u64.div_ceil(4) * MEMORY);
}

#[test]
fn given_two_walkers_then_walks_overlap_two_at_a_time_and_free_the_walker_at_their_end() {
    // Each load is of a page new to the TLB: its walk reads its entries from memory, then its
    // line (100 cycles); it holds one of the two walkers for the walk only. Pairs start a walk
    // apart; the last pair ends a whole reference after it starts.
    let pages: Vec<Record> = (0..10).map(|i| load(0x10_0000 + i * 0x1000)).collect();
    let in_order = cycles(uncached(None), &pages, true);
    let per_ref = in_order / 10;
    let walk = per_ref - MEMORY;
    assert!(
        walk >= 2 * MEMORY,
        "a walk of at least two memory loads: {walk}"
    );
    let c = cycles(uncached(mlp(8, 2, 1000)), &pages, true);
    assert_eq!(c, 4 * walk + per_ref);
}

#[test]
fn given_a_dependent_reference_among_independent_ones_then_it_waits_for_every_miss() {
    // Three independent misses overlap (one latency), the mark ends (the core waits for
    // them), and three dependent ones take a latency each.
    let mut body = lines(3);
    body.push(mark(false));
    body.extend(lines(3));
    let c = cycles(uncached(mlp(4, 4, 100)), &body, true);
    assert_eq!(c, MEMORY + 3 * MEMORY);
}

#[test]
fn given_a_machine_without_mlp_then_marks_change_no_counter() {
    let body = lines(40);
    let mut marked = vec![load(0x1000), mark(true)];
    marked.extend_from_slice(&body);
    marked.push(mark(false));
    let mut plain = vec![load(0x1000)];
    plain.extend_from_slice(&body);
    let run = |records: &[Record]| {
        let mut s = System::new(uncached(None), RunOptions::default()).unwrap();
        s.run_slice(records).unwrap();
        format!("{:?}", s.stats())
    };
    assert_eq!(run(&marked), run(&plain));
}

#[test]
fn given_work_between_references_that_covers_a_latency_per_slot_then_n_misses_take_n_works_and_one_latency(
) {
    // 50 instructions at 2 a cycle: 25 cycles before each reference; with 4 slots a miss of
    // 100 cycles is done before its slot is wanted again, so the core never waits for one:
    // the 20 misses cost their work, and the end mark the last miss's latency.
    let c = cycles(uncached(issuing(4, 4, 1000, 50, 2)), &lines(20), true);
    assert_eq!(c, 20 * 25 + MEMORY);
    // Back to back (no work) they take ceil(20/4) latencies.
    assert_eq!(
        cycles(uncached(mlp(4, 4, 1000)), &lines(20), true),
        5 * MEMORY
    );
}

#[test]
fn given_work_shorter_than_a_latency_per_slot_then_the_slots_bound_the_misses_as_before() {
    // 10 cycles of work with 1 slot: each miss waits for the one before; the work overlaps
    // it, so n misses take the first's work and n latencies.
    let c = cycles(uncached(issuing(1, 1, 1000, 10, 1)), &lines(20), true);
    assert_eq!(c, 10 + 20 * MEMORY);
}

#[test]
fn given_work_between_dependent_references_then_each_costs_its_work_and_its_latency() {
    // 3 instructions at 2 a cycle: the fraction carries, so the first touch (reference 1)
    // takes floor(1.5) = 1 cycle and the 50 after it floor(51 * 1.5) - 1 = 75 in all.
    let c = cycles(uncached(issuing(24, 6, 44, 3, 2)), &lines(50), false);
    assert_eq!(c, 75 + 50 * MEMORY);
}

#[test]
fn given_a_zero_issue_width_then_the_machine_is_refused_naming_the_field() {
    let m = uncached(issuing(4, 4, 44, 3, 0));
    let err = m.timing.mlp.unwrap().validate().unwrap_err();
    assert!(err.contains("timing.mlp.issue_width"), "{err}");
}

/// A data reference that waits for its producer waits alone: the core issues the independent
/// references after it meanwhile (out of order), so they overlap the chain.
#[test]
fn given_a_waiting_load_then_independent_misses_after_it_issue_meanwhile() {
    // A chain of two misses (the second's address from the first), then 10 independent
    // misses: with 16 slots they all go in flight at once; the chain's two latencies are the
    // whole cost.
    let mut body = vec![load(0x1000), depends(1), load(0x1040)];
    body.extend((2..12).map(|i| load(0x1000 + i * 64)));
    assert_eq!(cycles(uncached(mlp(16, 4, 100)), &body, true), 2 * MEMORY);
    // Two chains of 10, one after the other: each chain's misses wait for each other, the
    // second chain's first miss does not wait for the first chain.
    let chain = |base: u64| {
        let mut v = vec![load(base)];
        for i in 1..10 {
            v.extend([depends(1), load(base + i * 64)]);
        }
        v
    };
    let mut two = chain(0x1000);
    two.extend(chain(0x1000 + 10 * 64));
    assert_eq!(cycles(uncached(mlp(16, 4, 100)), &two, true), 10 * MEMORY);
}

/// An instruction fetch whose producer is a load (a branch on a loaded value, mispredicted)
/// holds every reference after it until that load completes: nothing after the branch issues
/// before it resolves. A data load with the same producer waits alone.
#[test]
fn given_a_fetch_that_waits_for_a_load_then_the_references_after_it_wait_too() {
    // On the first-level cached machine (not in the steady state): a miss (MEMORY), a
    // hit of the touched line whose address comes from it, then 10 independent misses.
    let body = |second: Record| {
        let mut v = vec![load(0x1040), depends(1), second];
        v.extend((2..12).map(|i| load(0x1000 + i * 64)));
        v
    };
    // A load waits alone: the 10 misses go in flight at once beside the first; the hit's
    // value is there 4 cycles after the first miss's, and the end of the marks waits for it.
    assert_eq!(
        cycles(l1_cached(false, 1), &body(load(0x1000)), true),
        MEMORY + 4
    );
    // A fetch holds the core until the miss is there, takes its 4 cycles, and only then do
    // the 10 misses issue: a second latency.
    assert_eq!(
        cycles(l1_cached(false, 1), &body(fetch(0x1000)), true),
        (MEMORY + 4) + MEMORY
    );
}
