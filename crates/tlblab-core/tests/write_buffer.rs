//! The write buffer and memory bus of `timing.write_buffer` (the SA-1100's, SA-1100
//! Developer's Manual §6.2-6.3), in closed form: stores that miss the read-allocate first
//! level cost one cycle until the buffer is full, then the bus's drain time each; a line fill
//! waits for the buffered stores; and the engine agrees with the reference model.

mod common;

use common::{cache, machine, tlb};
use tlblab_core::machine::{MachineConfig, WriteBufferConfig};
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::reference::ReferenceModel;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::{RunOptions, System};
use tlblab_trace::{Access, Record};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

const DRAIN: u64 = 35;
const MEMORY: u64 = 70;

/// One 32-entry TLB, a 1 KiB data cache of 32-byte lines (1 cycle), memory 70 cycles, and an
/// 8-entry write buffer draining one entry per 35 cycles.
fn buffered() -> MachineConfig {
    let mut m = machine(
        PageTableFormat::Armv7Short,
        vec![tlb("TLB", 1, 32, 32, ReplacementKind::Lru)],
    );
    m.tlbs[0].latency = 0;
    let mut c = cache("L1", 1, 1024, 32, 1);
    c.line = 32;
    m.caches = vec![c];
    m.memory.latency = MEMORY;
    m.walker.uncached = true;
    m.walker.memory_latency = 20;
    m.timing.write_buffer = Some(WriteBufferConfig {
        entries: 8,
        drain_cycles: DRAIN,
    });
    m
}

fn access(kind: AccessKind, va: u64) -> Access {
    Access::new(ThreadId(0), kind, VirtAddr(va), 4)
}

fn sys(m: MachineConfig) -> System {
    System::new(m, RunOptions::default()).unwrap()
}

#[test]
fn stores_that_miss_cost_a_cycle_until_the_buffer_is_full_then_the_bus_drain_time() {
    let mut s = sys(buffered());
    // The page is walked and line 0 filled first; its 70-cycle fill leaves the bus busy until
    // 70 cycles after the reference began, which is before it ends (the walk came first).
    s.access(access(AccessKind::Load, 0x1000)).unwrap();
    let t0 = s.clock(0);
    let costs: Vec<u64> = (1..=20)
        .map(|i| {
            s.access(access(AccessKind::Store, 0x1000 + i * 32))
                .unwrap()
        })
        .collect();
    // Eight entries take the first eight stores at a cycle each; the ninth waits for the first
    // to drain (35 cycles after it entered at t0: 27 cycles), the rest for one drain each.
    let mut expected = vec![1; 8];
    expected.push(1 + (DRAIN - 8));
    expected.extend([DRAIN; 11]);
    assert_eq!(costs, expected);
    assert_eq!(s.clock(0) - t0, 8 + 28 + 11 * DRAIN);
    // A load of a line not in the cache waits for all twenty stores to drain (t0 + 20 x 35),
    // then fills for 70 cycles.
    let now = s.clock(0);
    let cost = s
        .access(access(AccessKind::Load, 0x1000 + 30 * 32))
        .unwrap();
    assert_eq!(cost, t0 + 20 * DRAIN - now + MEMORY);
}

#[test]
fn a_store_that_hits_completes_in_the_cache_and_a_store_that_misses_allocates_nothing() {
    let mut s = sys(buffered());
    s.access(access(AccessKind::Load, 0x1000)).unwrap();
    // The line is held: a store to it costs the cache's cycle and takes no entry.
    for _ in 0..20 {
        assert_eq!(s.access(access(AccessKind::Store, 0x1004)).unwrap(), 1);
    }
    // A store to another line misses and does not fill it: the load after it misses too.
    s.access(access(AccessKind::Store, 0x1040)).unwrap();
    let st = s.stats();
    let l1 = &st.cores[0].cache[0];
    assert_eq!((l1.accesses, l1.hits, l1.misses), (22, 20, 2));
    let before = s.clock(0);
    let cost = s.access(access(AccessKind::Load, 0x1040)).unwrap();
    // It waits for the one buffered store (35 cycles from when it entered, `before - 1`).
    assert_eq!(cost, (before - 1 + DRAIN) - before + MEMORY);
}

#[test]
fn without_a_write_buffer_a_store_miss_fills_the_line_at_the_memory_latency() {
    let mut m = buffered();
    m.timing.write_buffer = None;
    let mut s = sys(m);
    s.access(access(AccessKind::Load, 0x1000)).unwrap();
    assert_eq!(s.access(access(AccessKind::Store, 0x1040)).unwrap(), MEMORY);
    assert_eq!(s.access(access(AccessKind::Load, 0x1040)).unwrap(), 1);
}

#[test]
fn a_machine_with_a_write_buffer_needs_a_first_level_data_cache() {
    let mut m = buffered();
    m.caches.clear();
    let e = m.validate().unwrap_err();
    assert!(e.contains("timing.write_buffer"), "{e}");
    let mut m = buffered();
    m.timing.write_buffer = Some(WriteBufferConfig {
        entries: 0,
        drain_cycles: 1,
    });
    assert!(m.validate().unwrap_err().contains("entries"));
}

#[test]
fn the_engine_agrees_with_the_reference_on_a_copy_loop() {
    // Two threads in two address spaces copying between buffers larger than the cache, with
    // a shared cache line re-read: stores missing and hitting, fills behind full buffers.
    let m = buffered();
    let mut records = Vec::new();
    for round in 0..3u64 {
        for t in 0..2u32 {
            for line in 0..64u64 {
                let src = 0x10_0000 + line * 32;
                let dst = 0x20_0000 + ((line * 7 + round) % 64) * 32;
                records.push(Record::Access(Access::new(
                    ThreadId(t),
                    AccessKind::Instr,
                    VirtAddr(0x8000 + (line % 4) * 4),
                    4,
                )));
                records.push(Record::Access(Access::new(
                    ThreadId(t),
                    AccessKind::Load,
                    VirtAddr(src),
                    4,
                )));
                records.push(Record::Access(Access::new(
                    ThreadId(t),
                    AccessKind::Store,
                    VirtAddr(dst),
                    16,
                )));
                records.push(Record::Access(Access::new(
                    ThreadId(t),
                    AccessKind::Store,
                    VirtAddr(src + 4),
                    4,
                )));
            }
        }
    }
    let opts = RunOptions::default();
    let mut s = System::new(m.clone(), opts).unwrap();
    let mut r = ReferenceModel::machine(&m, opts);
    for t in 0..2u32 {
        let space = s.create_space().unwrap();
        s.bind_thread(ThreadId(t), space, 0);
        let rs = r.create_space().unwrap();
        r.bind_thread(ThreadId(t), rs, 0);
    }
    s.run_slice(&records).unwrap();
    r.run(&records).unwrap();
    common::reference_difference(&s, &r).unwrap();
}
