//! The random machines, run options and traces of the reference tests
//! (`reference_machine.rs`, `reference_parity.rs`, `reference_techniques.rs`), and the set-up
//! that makes an engine and a reference model alike.

use proptest::prelude::*;
use tlblab_core::cache::{CacheConfig, CacheKind, Indexing};
use tlblab_core::machine::{
    DramConfig, MachineConfig, MlpConfig, TimingConfig, TimingModel, VirtualizationConfig,
    WalkerConfig, WriteBufferConfig,
};
use tlblab_core::memory::{MemoryConfig, Placement};
use tlblab_core::os::{OsConfig, SwitchPolicy, TlbMaintenance};
use tlblab_core::page_table::PageTableFormat;
use tlblab_core::replacement::ReplacementKind;
use tlblab_core::tlb::{IndexFn, TagConfig, TlbConfig, TlbKind, Ways};
use tlblab_core::walker::PwcConfig;
use tlblab_core::RunOptions;
use tlblab_trace::record::{prot, ALL_CORES};
use tlblab_trace::{Access, Event, Record};
use tlblab_types::{AccessKind, CoreId, PageSize, ThreadId, VirtAddr};

pub fn repl() -> impl Strategy<Value = ReplacementKind> {
    prop_oneof![
        Just(ReplacementKind::Lru),
        Just(ReplacementKind::Plru),
        Just(ReplacementKind::Fifo),
        Just(ReplacementKind::Random)
    ]
}

/// A TLB level of 2^`log_sets` sets of 2^`log_ways` ways, indexed by the low bits (`idx`
/// 0), a list of bits (1) or an XOR of two fields (2), of kind unified (`kind` 0, 1), data (2)
/// or instructions (3); default tags, private, no lockable entries.
pub fn tlb_config(
    level: u8,
    sizes: &[PageSize],
    (log_sets, log_ways, replacement, idx, latency, kind): (u32, u32, ReplacementKind, u8, u64, u8),
) -> TlbConfig {
    let sets = 1usize << log_sets;
    let ways = 1usize << log_ways;
    let index = match (idx, log_sets) {
        (_, 0) | (0, _) => IndexFn::LowBits,
        (1, n) => IndexFn::Bits {
            bits: (0..n as u8).map(|i| 12 + 2 * i + 1).collect(),
        },
        (_, n) => IndexFn::Xor {
            a: (12, 12 + n as u8 - 1),
            b: (20, 20 + n as u8 - 1),
        },
    };
    TlbConfig {
        // Mostly unified; split levels so both paths and their interplay are covered.
        kind: [
            TlbKind::Unified,
            TlbKind::Unified,
            TlbKind::Data,
            TlbKind::Instr,
        ][kind as usize],
        index,
        replacement,
        page_sizes: sizes.to_vec(),
        latency,
        ..TlbConfig::plain(&format!("T{level}"), level, sets * ways, Ways::N(ways))
    }
}

/// A plain TLB level (`tlb_config`): 1..8 sets of 1..64 ways.
pub fn plain_tlb_level(level: u8, sizes: Vec<PageSize>) -> impl Strategy<Value = TlbConfig> {
    ((0u32..4, 0u32..7, repl(), 0u8..3, 0u64..3, 0u8..4), 0u64..3).prop_map(
        move |(shape, refill)| TlbConfig {
            // The walk's refill of the levels above (`TlbConfig::refill_latency`), which the
            // fast lane charges per walk in bulk.
            refill_latency: refill,
            ..tlb_config(level, &sizes, shape)
        },
    )
}

/// A TLB level: 1..8 sets of 1..16 ways, any policy and index, tags mostly ASID-carrying (a
/// level without them makes `auto` flush), some private to the SMT thread, some shared by
/// the cores, some lockable (the locks in the sets' ways, or in an array of their own: the
/// Cortex-A9's main TLB, `TlbConfig::lockable_array`).
pub fn tlb_level(level: u8, sizes: Vec<PageSize>) -> impl Strategy<Value = TlbConfig> {
    (
        (0u32..4, 0u32..5, repl(), 0u8..3, 0u64..3, 0u8..4),
        (
            proptest::bool::weighted(0.9),
            proptest::bool::weighted(0.2),
            proptest::bool::weighted(0.3),
        ),
        (
            proptest::bool::weighted(0.2),
            0usize..5,
            0u64..3,
            proptest::bool::weighted(0.4),
        ),
    )
        .prop_map(
            move |(shape, (asid, hw, context_flush), (shared, lockable, refill, array))| {
                let t = tlb_config(level, &sizes, shape);
                TlbConfig {
                    shared,
                    // An array of its own may hold more than the sets (4 beside 1 entry).
                    lockable: if array {
                        lockable
                    } else {
                        lockable.min(t.entries)
                    },
                    lockable_array: array && lockable > 0,
                    // Some levels flushed on every address-space change and every lock below
                    // them (the Cortex-A9's micro TLBs, TRM DDI0388I §6.2.1).
                    flush_on_context_change: context_flush,
                    // A level below another refills it after a walk in 0-2 cycles (seed 004's
                    // Cortex-A9 main TLB, `TlbConfig::refill_latency`).
                    refill_latency: refill,
                    tags: TagConfig {
                        asid,
                        vmid: true,
                        domain: false,
                        hw_thread: hw,
                    },
                    ..t
                }
            },
        )
}

/// A unified cache level of 2^`log_sets` sets of 2^`log_ways` ways, 64-byte lines, latency
/// `latency` x its level; private, physically indexed, flushed for free.
pub fn cache_config(
    level: u8,
    (log_sets, log_ways, replacement, latency): (u32, u32, ReplacementKind, u64),
) -> CacheConfig {
    let ways = 1usize << log_ways;
    let size = (1u64 << log_sets) * ways as u64 * 64;
    CacheConfig {
        replacement,
        ..super::cache(
            &format!("C{level}"),
            level,
            size,
            ways,
            latency * level as u64,
        )
    }
}

/// A plain cache level (`cache_config`): up to 16 sets of 1..4 ways, any policy.
pub fn plain_cache_level(level: u8) -> impl Strategy<Value = CacheConfig> {
    (0u32..5, 0u32..3, repl(), 1u64..20).prop_map(move |shape| cache_config(level, shape))
}

/// A cache level: up to 16 sets of 1..4 ways, any policy, shared or not (by all cores or by
/// pairs), now and then virtually indexed, with flush costs.
pub fn cache_level(level: u8) -> impl Strategy<Value = CacheConfig> {
    (
        (0u32..5, 0u32..3, repl(), 1u64..20),
        (any::<bool>(), 0usize..3, proptest::bool::weighted(0.2)),
        (0u64..50, 0u64..3, 0u64..20, 0u64..6),
    )
        .prop_map(
            move |(shape, (shared, per, virt), (base, line, dirty, range))| {
                let shared = shared && level > 1;
                CacheConfig {
                    shared,
                    cores_per_instance: if shared { per } else { 0 },
                    indexing: if virt && level == 1 {
                        Indexing::Virtual
                    } else {
                        Indexing::Physical
                    },
                    flush_cycles_base: base,
                    flush_cycles_per_line: line,
                    flush_cycles_per_dirty_line: dirty,
                    range_flush_cycles_per_line: range,
                    prefetch: None,
                    ..cache_config(level, shape)
                }
            },
        )
}

pub const FORMATS: [PageTableFormat; 4] = [
    PageTableFormat::X86_64_4level,
    PageTableFormat::X86_64_5level,
    PageTableFormat::Armv8_4k,
    PageTableFormat::Armv7Short,
];

pub fn pwcs(specs: &[(usize, usize, ReplacementKind, u64)], nlevels: usize) -> Vec<PwcConfig> {
    let mut out: Vec<PwcConfig> = Vec::new();
    for &(lvl, entries, replacement, latency) in specs {
        let level = lvl % (nlevels - 1);
        if out.iter().any(|p| p.level == level) {
            continue;
        }
        let entries = if replacement == ReplacementKind::Plru {
            entries.next_power_of_two()
        } else {
            entries
        };
        out.push(PwcConfig {
            level,
            entries,
            ways: None,
            latency,
            replacement,
            source: String::new(),
        });
    }
    out
}

/// A random machine: 1..3 cores of 1..2 hardware threads, 1..3 TLB levels, 0..3 cache
/// levels, page-walk caches, every format and placement, in-order or overlap timing, and now
/// and then virtualization (a host table of any format, 4 KiB or 2 MiB host pages, host
/// page-walk caches).
pub fn machine() -> impl Strategy<Value = MachineConfig> {
    let pwc_spec = || proptest::collection::vec((0usize..4, 1usize..9, repl(), 0u64..4), 0..3);
    (
        (0usize..4, 1usize..4, 0usize..4, pwc_spec(), 1u8..3),
        (
            1usize..4,
            1usize..3,
            any::<bool>(),
            proptest::option::weighted(0.3, (1u32..5, 1u32..5, 1u32..12)),
            // DRAM channels (`timing.dram`): 1-3 of them, 2.7-80 cycles a line at the
            // random machines' clock.
            proptest::option::weighted(
                0.3,
                (1u32..4, prop_oneof![Just(100u32), Just(400), Just(3000)]),
            ),
        ),
        (
            prop_oneof![
                Just(Placement::Sequential),
                Just(Placement::Random),
                Just(Placement::Fragmented {
                    fragmentation: 0.01
                })
            ],
            proptest::option::weighted(0.2, (0usize..4, any::<bool>(), pwc_spec())),
        ),
    )
        .prop_flat_map(
            |(
                (f, ntlb, ncache, pwc_specs, first),
                (cores, tpc, overlap, mlp, dram),
                (placement, virt),
            )| {
                let format = FORMATS[f];
                let sizes = format.page_sizes();
                let tlbs: Vec<_> = (1..=ntlb as u8)
                    .map(|l| tlb_level(l, sizes.clone()))
                    .collect();
                let caches: Vec<_> = (1..=ncache as u8).map(cache_level).collect();
                let pwcs = pwcs(&pwc_specs, format.levels().len());
                let virtualization = virt.map(|(hf, huge, host_specs)| {
                    let host_format = FORMATS[hf];
                    VirtualizationConfig {
                        host_format,
                        host_page_size: if huge && host_format != PageTableFormat::Armv7Short {
                            PageSize::Size2M
                        } else {
                            PageSize::Size4K
                        },
                        host_pwcs: self::pwcs(&host_specs, host_format.levels().len()),
                        guest_memory_bytes: 64 << 20,
                        // A guest that places its frames otherwise than the host does
                        // (docs/host-predict.md): chosen from what is already drawn, so the
                        // stored regressions keep their machines otherwise.
                        guest_placement: match (placement, huge) {
                            (Placement::Sequential, true) => {
                                Some(Placement::Clustered { consecutive: 0.5 })
                            }
                            (Placement::Random, true) => Some(Placement::Sequential),
                            _ => None,
                        },
                        guest_placement_source: String::new(),
                    }
                });
                (tlbs, caches).prop_map(move |(mut tlbs, caches)| {
                    let virtual_cache = caches.iter().any(|c| c.indexing == Indexing::Virtual);
                    let covers = |k: TlbKind| tlbs.iter().any(|t: &TlbConfig| t.kind != k);
                    if !covers(TlbKind::Instr) || !covers(TlbKind::Data) {
                        tlbs[0].kind = TlbKind::Unified;
                    }
                    let first_cache_level = if caches.iter().any(|c| c.level == first) {
                        first
                    } else {
                        1
                    };
                    // A first level the caches lack: the walker bypasses them (ARMv4/v5's
                    // uncached walks) and a load from memory costs its own, shorter, latency.
                    let uncached = !caches.iter().any(|c| c.level == first);
                    // A write buffer behind the first data cache (the SA-1100's), on the
                    // machines of random placement and one hardware thread that have one (the only
                    // machines it is modelled for, `MachineConfig::validate`).
                    let write_buffer = (placement == Placement::Random
                        && cores * tpc == 1
                        && caches
                            .iter()
                            .any(|c| c.level == 1 && c.kind != CacheKind::Instr))
                    .then_some(WriteBufferConfig {
                        entries: 2,
                        drain_cycles: 30,
                    });
                    // Linux's ARMv7 table layout on the in-order half of the ARMv7
                    // machines (the seeds' Cortex-A7 is in order).
                    let m = MachineConfig {
                        name: "random".into(),
                        cores,
                        threads_per_core: tpc,
                        walker: WalkerConfig {
                            latency: 3,
                            first_cache_level,
                            uncached,
                            memory_latency: if uncached { 40 } else { 0 },
                            pwcs: pwcs.clone(),
                            pwc_restart: Default::default(),
                        },
                        caches,
                        memory: MemoryConfig {
                            bytes: 256 << 20,
                            latency: 100,
                            // Host pages of 2 MiB have no fallback: keep their runs free.
                            placement: match placement {
                                Placement::Fragmented { .. } if virtualization.is_some() => {
                                    Placement::Sequential
                                }
                                p => p,
                            },
                            source: String::new(),
                        },
                        timing: TimingConfig {
                            model: if overlap {
                                TimingModel::Overlap
                            } else {
                                TimingModel::InOrder
                            },
                            write_buffer,
                            // Memory-level parallelism (`timing.mlp`), where no write buffer is.
                            mlp: mlp.filter(|_| write_buffer.is_none()).map(
                                |(miss_slots, walkers, window)| MlpConfig {
                                    miss_slots,
                                    walkers: walkers.min(miss_slots),
                                    window,
                                    issue_instructions: 0,
                                    // The steady state (first-level hits at their issue) on
                                    // every other draw, two a cycle.
                                    issue_width: 1 + window % 2,
                                    steady_state: window % 2 == 1,
                                },
                            ),
                            dram: dram.filter(|_| write_buffer.is_none()).map(
                                |(channels, mega_transfers)| {
                                    // Writebacks on and off, and row activations (two ranks of
                                    // four banks, rows of four lines, tRRD 3 and tFAW 40 cycles
                                    // at the random machines' 1 GHz) on two channels where no
                                    // cache is virtually indexed, with no draw of their own.
                                    let rows = channels == 2 && !virtual_cache;
                                    DramConfig {
                                        writebacks: mega_transfers != 400,
                                        ranks: rows.then_some(2),
                                        banks: rows.then_some(4),
                                        row_bytes: rows.then_some(256),
                                        t_rrd_ps: rows.then_some(3000),
                                        t_faw_ps: rows.then_some(40_000),
                                        ..DramConfig::new(channels, mega_transfers)
                                    }
                                },
                            ),
                        },
                        virtualization: virtualization.clone(),
                        ..super::machine(format, tlbs)
                    };
                    super::with_linux_armv7_layout(m, !overlap)
                })
            },
        )
}

/// Run options: TLB-only, walks without caches, or the full model; a switch policy with a
/// small ASID space (1..3 bits: rollovers every few switches) and costs for switches and
/// IPIs; often a few kernel pages the switch path touches before and after the technique's
/// switch-in work (global mappings), of the page-fault path, of the migration path and of the
/// system-call and timer-tick entries; now and then a reference limit; x86-style or ARM
/// broadcast TLB maintenance.
pub fn options() -> impl Strategy<Value = RunOptions> {
    (
        0u8..3,
        0u64..1000,
        os_config(),
        prop_oneof![3 => Just(0u64), 1 => 1u64..600],
    )
        .prop_map(|(mode, seed, os, limit)| {
            let base = match mode {
                0 => RunOptions::tlb_only(seed),
                1 => RunOptions::no_caches(seed),
                _ => RunOptions {
                    seed,
                    ..RunOptions::default()
                },
            };
            RunOptions {
                max_references: limit,
                os,
                ..base
            }
        })
}

prop_compose! {
    /// The OS model's options: see `options`.
    fn os_config()(
        switch in prop_oneof![
            Just(SwitchPolicy::Auto),
            Just(SwitchPolicy::FlushAll),
            Just(SwitchPolicy::AsidTagged)
        ],
        asid_bits in 1u8..4,
        switch_cycles in 0u64..200,
        ipi_cycles in 0u64..100,
        kernel_pages in prop_oneof![Just(0u32), 1u32..4],
        kernel_return_pages in prop_oneof![Just(0u32), 1u32..3],
        fault_kernel_pages in prop_oneof![2 => Just(0u32), 1 => 1u32..4],
        migrate_kernel_pages in prop_oneof![2 => Just(0u32), 1 => 1u32..4],
        tlb_maintenance in prop_oneof![Just(TlbMaintenance::Ipi), Just(TlbMaintenance::Broadcast)],
        syscall_kernel_pages in prop_oneof![2 => Just(0u32), 1 => 1u32..4],
        tick_kernel_pages in prop_oneof![2 => Just(0u32), 1 => 1u32..3],
        syscall_text_sections in prop_oneof![2 => Just(0u32), 1 => 1u32..16],
        tick_text_sections in prop_oneof![2 => Just(0u32), 1 => 1u32..16],
        fault_text_sections in prop_oneof![2 => Just(0u32), 1 => 1u32..16],
        fault_linear_map in prop_oneof![2 => Just(false), 1 => Just(true)],
        fault_highmem in prop_oneof![2 => Just(false), 1 => Just(true)],
        kernel_data_sections in prop_oneof![2 => Just(false), 1 => Just(true)],
        vectors_page in prop_oneof![2 => Just(false), 1 => Just(true)],
    ) -> OsConfig {
        OsConfig {
            asid_bits,
            switch,
            switch_cycles,
            ipi_cycles,
            kernel_pages,
            kernel_return_pages,
            fault_kernel_pages,
            migrate_kernel_pages,
            tlb_maintenance,
            syscall_kernel_pages,
            tick_kernel_pages,
            syscall_text_sections,
            tick_text_sections,
            // Only where the fault path is traced (`OsConfig::validate`).
            fault_text_sections: if fault_kernel_pages > 0 { fault_text_sections } else { 0 },
            fault_linear_map: fault_linear_map && fault_kernel_pages > 0,
            // One clear a fault: the fixmap's where the linear map's is not drawn.
            fault_highmem: fault_highmem && fault_kernel_pages > 0 && !fault_linear_map,
            // Not drawn (the streams stay as they were); reference_machine.rs has a test of
            // its own with both on.
            fault_clear_lines: false,
            kunmap_flush: false,
            kernel_data_sections,
            vectors_page,
            // Not drawn here, so the streams of the tests that use `options` stay as they were;
            // reference_machine.rs has a test of its own with it on.
            range_flush_whole_itlb: false,
        }
    }
}

/// One record of the trace: an access of one of the threads (kinds, pages among a few dozen
/// spread over a large range, now and then crossing a page), or an event.
#[derive(Clone, Debug)]
pub enum Step {
    Access {
        thread: u32,
        kind: u8,
        page: u64,
        offset: u64,
    },
    Switch {
        cpu: u32,
        thread: u32,
    },
    Idle {
        cpu: u32,
    },
    Migrate {
        thread: u32,
        cpu: u32,
    },
    Flush {
        cpu: u32,
        what: u8,
    },
    Mprotect {
        process: u32,
        page: u64,
        pages: u64,
    },
    Munmap {
        process: u32,
        page: u64,
        pages: u64,
    },
    /// The kernel's flush of part of an address space (seed 002's flush_cache_page,
    /// flush_tlb_page, a short flush_cache_range): from `offset` bytes into `page`.
    FlushRange {
        process: u32,
        page: u64,
        offset: u64,
        bytes: u64,
        what: u8,
    },
    /// The process's address space is torn down (`ProcessExit`: its translations flushed);
    /// its threads may run on, their walks refilling the TLBs from its page tables.
    Exit {
        process: u32,
    },
    /// The kernel is entered on the process's thread (`KernelEntry`: a system call, path 0, or
    /// a timer tick, path 1): its path's global kernel pages.
    Entry {
        process: u32,
        path: u8,
    },
    /// The thread's references become independent of its misses in flight, or dependent on
    /// them again (`Independent`: only a machine with `timing.mlp` reads it).
    Independent {
        thread: u32,
        begin: bool,
    },
    /// The thread's next reference takes its address from its reference `back` before
    /// (`Depends`: only a machine with `timing.mlp` reads it).
    Depends {
        thread: u32,
        back: u32,
    },
    Lock {
        process: u32,
        page: u64,
        all: bool,
        lock: bool,
    },
    Huge {
        process: u32,
        page: u64,
    },
    /// A global mapping of `pages` pages from `page` (the kernel's, `prot::GLOBAL`), one
    /// shared object mapped alike in every address space before anything runs.
    Kernel {
        page: u64,
        pages: u64,
    },
}

pub fn steps() -> impl Strategy<Value = Vec<Step>> {
    let access = (
        0u32..6,
        0u8..3,
        0u64..64,
        prop_oneof![20 => 0u64..512, 1 => Just(511u64)],
    )
        .prop_map(|(thread, kind, page, offset)| Step::Access {
            thread,
            kind,
            page,
            offset,
        });
    let event = prop_oneof![
        3 => (0u32..6, 0u32..6).prop_map(|(cpu, thread)| Step::Switch { cpu, thread }),
        1 => (0u32..6).prop_map(|cpu| Step::Idle { cpu }),
        1 => (0u32..6, 0u32..6).prop_map(|(thread, cpu)| Step::Migrate { thread, cpu }),
        // A program's flushes (TLB, caches, both) and the kernel's for an address space
        // (ADDRESS_SPACE with the TLB, with or without the caches; flush_cache_range's
        // caches alone or instruction caches alone).
        2 => (0u32..6, prop::sample::select(vec![1u8, 2, 3, 5, 7, 6, 12, 13]))
            .prop_map(|(cpu, what)| Step::Flush { cpu, what }),
        2 => (0u32..3, 0u64..64, 1u64..4).prop_map(|(process, page, pages)| Step::Mprotect { process, page, pages }),
        1 => (0u32..3, 0u64..64, 1u64..4).prop_map(|(process, page, pages)| Step::Munmap { process, page, pages }),
        2 => (0u32..3, 0u64..64, 0u64..4096, 1u64..9000, prop::sample::select(vec![1u8, 2, 3, 8, 10, 11]))
            .prop_map(|(process, page, offset, bytes, what)| Step::FlushRange { process, page, offset, bytes, what }),
        1 => (0u32..3).prop_map(|process| Step::Exit { process }),
        1 => (0u32..3, 0u8..2).prop_map(|(process, path)| Step::Entry { process, path }),
        3 => (0u32..6, proptest::bool::weighted(0.7)).prop_map(|(thread, begin)| Step::Independent { thread, begin }),
        3 => (0u32..6, 1u32..80).prop_map(|(thread, back)| Step::Depends { thread, back }),
        2 => (0u32..3, 0u64..3, any::<bool>(), proptest::bool::weighted(0.6)).prop_map(|(process, page, all, lock)| Step::Lock { process, page, all, lock }),
        1 => (0u32..3, 0u64..4).prop_map(|(process, page)| Step::Huge { process, page }),
        1 => (0u64..64, 1u64..4).prop_map(|(page, pages)| Step::Kernel { page, pages }),
    ];
    proptest::collection::vec(prop_oneof![12 => access, 1 => event], 1..800)
}

/// The virtual address of page `page` (of 64): spread over several tables of every level
/// (the last 16 pages above 4 GiB on formats of 48 bits and more, above 2 GiB on ARMv7's).
pub fn page_va(page: u64, cfg: &MachineConfig) -> u64 {
    let high = if cfg.page_table.format == PageTableFormat::Armv7Short {
        0x8000_0000
    } else {
        0x80_0000_0000
    };
    0x4000_0000 + (page % 8) * 4096 + (page / 8) * 0x20_1000 + if page >= 48 { high } else { 0 }
}

/// Where `Step::Huge`'s region of 2 MiB starts.
fn huge_va(page: u64) -> u64 {
    0x4000_0000 + page * 0x20_0000
}

/// The length of `Step::Kernel`'s mapping: `pages` pages from `page`, within its run of 8.
fn kernel_len(page: u64, pages: u64) -> u64 {
    pages.min(8 - page % 8) * 4096
}

/// The records of `steps` on `cfg`. In a TLB-only run (`walks` false) the huge regions come
/// first: there a region made huge after its pages were touched leaves their 4 KiB entries
/// beside the new 2 MiB ones, two translations of one address, which the engine's memo and
/// its search answer differently (the last hit's, the smallest page's); the reference takes
/// the smallest. A run with walks keeps the touched pages small (`PageTable::room_for`).
pub fn records(steps: &[Step], cfg: &MachineConfig, walks: bool) -> Vec<Record> {
    let mut steps = steps.to_vec();
    if !walks {
        steps.sort_by_key(|s| !matches!(s, Step::Huge { .. }));
    }
    // The kernel's global mappings come first, as a kernel maps itself before any process
    // runs: a page's globalness is its descriptor's, written at its first touch (the engine)
    // or its region's (the reference), which agree only for a region older than the page.
    steps.sort_by_key(|s| !matches!(s, Step::Kernel { .. }));
    // No kernel page under a huge region: a kernel's global mappings are its own, above
    // `kernel_base`, where no process maps (Linux), and a global 4 KiB entry inside a huge
    // page's range is two translations of one address, which the engine's memo (the huge
    // entry that hit last) and the reference's search (the smallest page first) answer
    // differently (`foreign_entries_agrees_with_its_twin` at PROPTEST_RNG_SEED=8888 failed
    // before 2026-11-28).
    let huge_ranges: Vec<(u64, u64)> = steps
        .iter()
        .filter_map(|s| match *s {
            Step::Huge { page, .. } => Some((huge_va(page), huge_va(page) + (2 << 20))),
            _ => None,
        })
        .collect();
    steps.retain(|s| match *s {
        Step::Kernel { page, pages } => {
            let (start, len) = (page_va(page, cfg), kernel_len(page, pages));
            !huge_ranges
                .iter()
                .any(|&(a, b)| start < b && a < start + len)
        }
        _ => true,
    });
    let cpus = (cfg.cores * cfg.threads_per_core) as u32;
    // A lock needs a lockable data level on every core it names.
    let lockable = cfg
        .tlbs
        .iter()
        .any(|t| t.lockable > 0 && t.kind != TlbKind::Instr);
    let huge = cfg
        .page_table
        .format
        .page_sizes()
        .into_iter()
        .filter(|&s| s != PageSize::Size1G && s != PageSize::Size4K)
        .max();
    steps
        .iter()
        .filter_map(|s| {
            Some(match *s {
                Step::Access {
                    thread,
                    kind,
                    page,
                    offset,
                } => {
                    let kind =
                        [AccessKind::Load, AccessKind::Store, AccessKind::Instr][kind as usize];
                    let va = page_va(page, cfg) + offset * 8;
                    Record::Access(Access::new(ThreadId(thread), kind, VirtAddr(va), 16))
                }
                Step::Switch { cpu, thread } => Record::Event(Event::ContextSwitch {
                    core: CoreId((cpu % cpus) as u16),
                    from: ThreadId(0),
                    to: ThreadId(thread),
                }),
                Step::Idle { cpu } => Record::Event(Event::ContextSwitch {
                    core: CoreId((cpu % cpus) as u16),
                    from: ThreadId(0),
                    to: tlblab_trace::record::NO_THREAD,
                }),
                Step::Migrate { thread, cpu } => Record::Event(Event::Migrate {
                    thread: ThreadId(thread),
                    core: CoreId(cpu as u16),
                }),
                Step::Flush { cpu, what } => Record::Event(Event::Flush {
                    core: CoreId(cpu as u16),
                    what,
                }),
                Step::Mprotect {
                    process,
                    page,
                    pages,
                } => Record::Event(Event::Mprotect {
                    process,
                    start: VirtAddr(page_va(page, cfg)),
                    len: pages * 4096,
                    prot: 1,
                }),
                Step::Munmap {
                    process,
                    page,
                    pages,
                } => Record::Event(Event::Munmap {
                    process,
                    start: VirtAddr(page_va(page, cfg)),
                    len: pages * 4096,
                }),
                Step::FlushRange {
                    process,
                    page,
                    offset,
                    bytes,
                    what,
                } => Record::Event(Event::FlushRange {
                    process,
                    start: VirtAddr(page_va(page, cfg) + offset),
                    len: bytes,
                    what,
                }),
                Step::Exit { process } => Record::Event(Event::ProcessExit { process }),
                Step::Entry { process, path } => {
                    Record::Event(Event::KernelEntry { process, path })
                }
                Step::Independent { thread, begin } => Record::Event(Event::Independent {
                    thread: ThreadId(thread),
                    begin,
                }),
                Step::Depends { thread, back } => Record::Event(Event::Depends {
                    thread: ThreadId(thread),
                    back,
                }),
                Step::Lock {
                    process,
                    page,
                    all,
                    lock,
                } if lockable && (all || cfg.cores == 1) => {
                    let _ = all;
                    Record::Event(Event::TlbLock {
                        process,
                        page: VirtAddr(page_va(page, cfg)),
                        core: if all { ALL_CORES } else { CoreId(0) },
                        lock,
                    })
                }
                Step::Lock { .. } => return None,
                Step::Kernel { page, pages } => Record::Event(Event::MapShared {
                    process: 0,
                    start: VirtAddr(page_va(page, cfg)),
                    len: kernel_len(page, pages),
                    prot: prot::READ | prot::WRITE | prot::GLOBAL,
                    page_shift: 12,
                    object: 0x7fff_0000,
                }),
                Step::Huge { process, page } => Record::Event(Event::Mmap {
                    process,
                    start: VirtAddr(huge_va(page)),
                    len: 2 << 20,
                    prot: 3,
                    page_shift: huge?.shift() as u8,
                }),
            })
        })
        // A region is huge in every address space alike: a TLB level without ASID tags (or a
        // lock, which outlives the flushes) can show one space's entries to another, and a
        // huge page of one beside a small page of another would be two sizes of one address,
        // a TLB conflict the engine's memo and its search answer differently
        // (docs/reference-model.md, "What it found").
        .flat_map(|r| match r {
            Record::Event(Event::Mmap { .. } | Event::MapShared { .. }) => {
                (0..3).map(|p| in_process(r, p)).collect()
            }
            r => vec![r],
        })
        .collect()
}

/// `r`, a mapping event, for process `p`.
fn in_process(mut r: Record, p: u32) -> Record {
    if let Record::Event(Event::Mmap { process, .. } | Event::MapShared { process, .. }) = &mut r {
        *process = p;
    }
    r
}

// The runs' set-up and their comparison live in `run.rs` (kept under 800 lines here).
#[allow(unused_imports)] // each test crate uses some of `common`
pub use super::run::{same_run, setup};
