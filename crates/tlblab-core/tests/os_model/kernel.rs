//! The kernel's own paths: fault, system-call and tick entries touching their pages and text
//! sections, the linear map, the vectors page, highmem's fixmap slot, and the refusals.

use super::*;

/// The kernel-path tests' machine: one fully associative level of 64 entries with a 1-cycle
/// lookup, no caches and no data accesses (each kernel touch costs the level's latency and the
/// word's load), data TLB stall cycles counted, the kernel's paths as `os` sets them.
fn kernel_path_system(os: OsConfig) -> System {
    let mut cfg = fa(64);
    cfg.tlbs[0].latency = 1;
    System::new(
        cfg,
        RunOptions {
            data_accesses: false,
            stall_cycles: true,
            os,
            ..RunOptions::default()
        },
    )
    .unwrap()
}

/// Thread 0 touches `pages` new pages in a row from 0x1000_0000, a fault apiece.
/// A `KernelEntry` of process 0 by `path` (`kernel_entry::*`).
fn kernel_entered(path: u8) -> Record {
    Record::Event(Event::KernelEntry { process: 0, path })
}

/// Thread 0 faults on a new page, calls the kernel, then enters it by `path`.
fn fault_call_then(path: u8) -> Vec<Record> {
    let mut recs = thread_starts(&[0]);
    recs.push(ld(0, 0x1000_0000));
    recs.push(kernel_entered(tlblab_trace::record::kernel_entry::SYSCALL));
    recs.push(kernel_entered(path));
    recs
}

fn touch_new_pages(sys: &mut System, pages: u64) {
    let mut recs = thread_starts(&[0]);
    for p in 0..pages {
        recs.push(ld(0, 0x1000_0000 + p * 4096));
    }
    sys.run(&mut VecSource::new(recs)).unwrap();
}

/// The page-fault path's global kernel pages (`os.fault_kernel_pages`): every demand-paging
/// fault touches them through the faulting core's data TLB before the walk is retried. One
/// thread touches `PAGES` new pages once each (a fault apiece) on a one-level TLB with room
/// for all: the kernel's pages miss at the first fault (their descriptors loaded) and hit at
/// every later one. With no caches a kernel touch costs the level's latency and the word's
/// load (memory latency), plus the descriptor's load after a miss, so against the same run
/// without them the cycles grow by exactly that; the walks are the same (the handler's time
/// is the thread's busy time, not the walk's), and the descriptor loads are the level's data
/// stall (seed 004: the PMU counts the kernel's misses too). The handler also stores the
/// descriptors the fault writes (`System::fault_stores`), each a word to memory here: the
/// first fault's four (every level's table is new), one leaf a fault after it.
#[test]
fn given_fault_kernel_pages_when_a_thread_touches_new_pages_then_each_fault_touches_them_once() {
    const KERNEL: u32 = 3;
    const PAGES: u64 = 5;
    let run = |fault_kernel_pages: u32| {
        let mut sys = kernel_path_system(OsConfig {
            fault_kernel_pages,
            ..OsConfig::default()
        });
        touch_new_pages(&mut sys, PAGES);
        let globals = sys.tlbs[0].entries().filter(|e| e.global).count();
        (sys.stats(), globals)
    };
    let (without, _) = run(0);
    let (with, globals) = run(KERNEL);
    let memory = 100;
    let k = KERNEL as u64;
    assert_eq!(with.total.page_faults, PAGES);
    assert_eq!(with.total.walks, without.total.walks);
    assert_eq!(with.total.walk_cycles, without.total.walk_cycles);
    assert_eq!(globals, KERNEL as usize);
    assert_eq!(
        with.total.cycles - without.total.cycles,
        PAGES * k * (1 + memory) + k * memory + (4 + PAGES - 1) * memory,
        "each fault touches the kernel's pages, only the first fault walks them; the handler \
         stores the descriptors it wrote"
    );
    assert_eq!(
        with.total.data_stall_cycles[0] - without.total.data_stall_cycles[0],
        k * memory,
        "the kernel's descriptor loads are the level's miss stall"
    );
}

/// A system of `cfg` with no data accesses whose fault handler touches `fault_kernel_pages`
/// kernel pages (0: no handler traced, nothing stored).
fn traced_handler_system(cfg: MachineConfig, fault_kernel_pages: u32) -> System {
    System::new(
        cfg,
        RunOptions {
            data_accesses: false,
            os: OsConfig {
                fault_kernel_pages,
                ..OsConfig::default()
            },
            ..RunOptions::default()
        },
    )
    .unwrap()
}

/// The fault handler's stores of the descriptors it writes (`System::fault_stores`, on a
/// machine that traces the handler, `os.fault_kernel_pages` > 0) leave their lines in the
/// faulting core's data cache, where the walk that follows reads them (a walk through the
/// first-level cache, as the Cortex-A9's: TRM DDI0388 §6.1). One thread touches `PAGES` new
/// pages 8 pages apart (each leaf descriptor in a 64-byte line of its own, all in one leaf
/// table) behind an x86-64 4-level table and a 32 KiB first-level cache: with the handler
/// every walk's four loads hit that cache (the first fault wrote all four levels' entries,
/// later ones their leaf; the upper levels' lines stay); without it the first walk reads all
/// four from memory and each later one its leaf. The stores are data references of the
/// handler: one per descriptor written, beside its kernel page's word (and that page's
/// descriptor, loaded once).
#[test]
fn given_a_traced_fault_handler_when_new_pages_fault_then_the_walks_find_the_stored_descriptors_in_the_cache(
) {
    const PAGES: u64 = 6;
    let run = |fault_kernel_pages: u32| {
        let mut cfg = fa(64);
        cfg.caches = vec![cache("L1", 1, 32 << 10, 8, 4)];
        let mut sys = traced_handler_system(cfg, fault_kernel_pages);
        let mut recs = thread_starts(&[0]);
        for p in 0..PAGES {
            recs.push(ld(0, 0x1000_0000 + p * 8 * 4096));
        }
        sys.run(&mut VecSource::new(recs)).unwrap();
        sys.stats()
    };
    let (without, with) = (run(0), run(1));
    assert_eq!(with.total.walk_refs, 4 * PAGES);
    assert_eq!(
        with.total.walk_refs_by_source,
        vec![4 * PAGES, 0],
        "every load hits the L1"
    );
    assert_eq!(
        without.total.walk_refs_by_source,
        vec![3 * (PAGES - 1), 4 + PAGES - 1],
        "the first walk from memory, then each leaf"
    );
    let data = |s: &tlblab_core::Stats| s.total.data_by_source.iter().sum::<u64>();
    assert_eq!(
        data(&with) - data(&without),
        PAGES + 1 + (4 + PAGES - 1),
        "the kernel page's word a fault, its descriptor once, the descriptors stored"
    );
}

/// ARM Linux's layout of the second-level tables (`TableLayout::LinuxArmv7`): a fault that
/// makes a new 2 MiB's table page writes both first-level entries of the pair
/// (`__pmd_populate`'s `pmdp[0]`, `pmdp[1]`) and every PTE with its Linux copy 2048 bytes below
/// it first (`cpu_v7_set_pte_ext`). One thread touches a page of MiB 0x200, then one of MiB
/// 0x201 and another of MiB 0x201 (ARMv7 short descriptors, the handler traced, no caches):
/// the first fault stores 2 + 2 words, each later one 2 (the odd MiB's first-level entry was
/// written with the even one's); in the default layout, 2, 2 and 1 (the odd MiB's first-level
/// entry at its first fault, no copies). The walks are the same.
#[test]
fn given_linux_armv7_tables_when_both_mib_of_a_pair_fault_then_the_pair_and_the_pte_copies_are_stored(
) {
    let run = |linux: bool, fault_kernel_pages: u32| {
        let cfg = with_linux_armv7_layout(
            machine(
                PageTableFormat::Armv7Short,
                vec![tlb("L1", 1, 64, 64, ReplacementKind::Lru)],
            ),
            linux,
        );
        let mut sys = traced_handler_system(cfg, fault_kernel_pages);
        let mut recs = thread_starts(&[0]);
        for va in [0x2000_4000, 0x2010_8000, 0x2010_9000] {
            recs.push(ld(0, va));
        }
        sys.run(&mut VecSource::new(recs)).unwrap();
        sys.stats()
    };
    let data = |s: &tlblab_core::Stats| s.total.data_by_source.iter().sum::<u64>();
    // Beside the stores: the kernel page's word a fault and its descriptor once.
    let kernel = 3 + 1;
    for (linux, stores) in [(true, 4 + 2 + 2), (false, 2 + 2 + 1)] {
        let (without, with) = (run(linux, 0), run(linux, 1));
        assert_eq!(with.total.page_faults, 3);
        assert_eq!(with.total.walk_refs, without.total.walk_refs);
        assert_eq!(
            data(&with) - data(&without),
            kernel + stores,
            "linux layout {linux}: the descriptors and copies stored"
        );
    }
}

/// A `KernelEntry` event (a system call, a timer tick) touches its path's global kernel pages
/// (`os.syscall_kernel_pages`, `tick_kernel_pages`), the tick's after the system call's. One
/// thread on a one-level TLB with room for all takes two system calls and a tick between its
/// references: the system call's pages miss at the first call and hit at the second, the
/// tick's miss once; with no caches each touch costs the level's latency and the word's load,
/// plus the descriptor's load after a miss, all busy time of the thread, the descriptor loads
/// the level's data stall. A path that is not defined is refused.
#[test]
fn given_kernel_entries_when_a_thread_calls_twice_and_ticks_then_each_path_touches_its_pages() {
    use tlblab_trace::record::kernel_entry;
    const SYSCALL: u32 = 3;
    const TICK: u32 = 2;
    let run = |syscall_kernel_pages: u32, tick_kernel_pages: u32, path: u8| {
        let mut sys = kernel_path_system(OsConfig {
            fault_kernel_pages: 1,
            syscall_kernel_pages,
            tick_kernel_pages,
            ..OsConfig::default()
        });
        let mut recs = fault_call_then(path);
        recs.push(ld(0, 0x1000_0000));
        recs.push(kernel_entered(kernel_entry::SYSCALL));
        let r = sys.run(&mut VecSource::new(recs));
        let globals = sys.tlbs[0].entries().filter(|e| e.global).count();
        r.map(|_| (sys.stats(), globals))
    };
    let (without, _) = run(0, 0, kernel_entry::TICK).unwrap();
    let (with, globals) = run(SYSCALL, TICK, kernel_entry::TICK).unwrap();
    let memory = 100;
    let (s, t) = (SYSCALL as u64, TICK as u64);
    assert_eq!(
        globals,
        1 + (SYSCALL + TICK) as usize,
        "the fault's page, the call's, the tick's"
    );
    assert_eq!(with.total.walks, without.total.walks);
    assert_eq!(
        with.total.cycles - without.total.cycles,
        2 * s * (1 + memory) + s * memory + t * (1 + memory) + t * memory,
        "two calls touch the call's pages, only the first walks them; the tick's once"
    );
    assert_eq!(
        with.total.data_stall_cycles[0] - without.total.data_stall_cycles[0],
        (s + t) * memory,
        "the entries' descriptor loads are the level's miss stall"
    );
    let e = run(SYSCALL, TICK, 7).expect_err("path 7 is refused");
    assert!(e.to_string().contains("path 7"), "{e}");
}

/// The kernel text a path runs (`os.syscall_text_sections`, `tick_text_sections`,
/// `fault_text_sections`: bit `k` the kernel image's `k`th 1 MiB section) is fetched through
/// the instruction side: a global 1 MiB entry in the instruction micro TLB and the unified
/// main TLB behind it (seed 004 §III: the Cortex-A9's main TLB is shared by both sides). One
/// thread faults once (text sections 0 and 2), calls the kernel twice (sections 1 and 2) and
/// takes a tick (section 3), on split 4-entry first levels (the instruction one's lookup 1
/// cycle) and an 8-entry unified second level (7 cycles, refill 3), no caches: a section that
/// misses both levels costs 1 + 7 + the descriptor's load from memory (100) + 3, one the micro
/// TLB holds 1. Against the same run without text the cycles grow by exactly that (busy time),
/// the data stalls do not (instruction-side misses are not data stalls), and the main TLB
/// holds the four sections' global 1 MiB entries.
#[test]
fn given_kernel_text_sections_when_paths_run_then_each_section_takes_one_instruction_side_entry() {
    use tlblab_core::tlb::TlbKind;
    use tlblab_trace::record::kernel_entry;
    let run = |syscall_text_sections: u32, tick_text_sections: u32, fault_text_sections: u32| {
        let os = OsConfig {
            syscall_text_sections,
            tick_text_sections,
            fault_text_sections,
            ..OsConfig::default()
        };
        let mut sys = split_kernel_system(os);
        assert_eq!(sys.tlbs[2].config.kind, TlbKind::Unified);
        let mut recs = fault_call_then(kernel_entry::SYSCALL);
        recs.push(kernel_entered(kernel_entry::TICK));
        sys.run(&mut VecSource::new(recs)).unwrap();
        let sections = sys.tlbs[2]
            .entries()
            .filter(|e| e.global && e.size == PageSize::Size1M)
            .count();
        (sys.stats(), sections)
    };
    let (without, none) = run(0, 0, 0);
    let (with, sections) = run(0b110, 0b1000, 0b101);
    let (miss, hit) = (1 + 7 + 100 + 3, 1);
    assert_eq!(none, 0);
    assert_eq!(sections, 4, "sections 0-3, one main-TLB entry each");
    assert_eq!(
        with.total.cycles - without.total.cycles,
        2 * miss + (miss + hit) + 2 * hit + miss,
        "the fault's two sections miss; the first call's section 1 misses and 2 hits; the second call hits both; the tick's misses"
    );
    assert_eq!(
        with.total.data_stall_cycles, without.total.data_stall_cycles,
        "instruction-side misses are not data stalls"
    );
    assert_eq!(with.total.walks, without.total.walks);
}

/// The split-first-level machine of the linear-map and vectors tests: 4-entry fully
/// associative instruction and data micro TLBs (1-cycle lookups) in front of an 8-entry
/// unified main TLB (7 cycles, refill 3), no caches (a word or descriptor costs memory's 100),
/// 512 MiB (room for the kernel's pages), data stalls counted, one fault-path kernel page.
fn split_kernel_system(os: OsConfig) -> System {
    split_system_of(split_kernel_machine(), os)
}

/// `split_kernel_system`'s machine.
fn split_kernel_machine() -> MachineConfig {
    let mut cfg = shaped_machine((1, 4), (1, 8, ReplacementKind::Lru), 7, true);
    cfg.tlbs[0].latency = 1;
    cfg.tlbs[1].latency = 1;
    cfg.tlbs[2].refill_latency = 3;
    cfg.memory.bytes = 512 << 20;
    cfg
}

/// `cfg` with `split_kernel_system`'s options.
fn split_system_of(cfg: MachineConfig, os: OsConfig) -> System {
    System::new(
        cfg,
        RunOptions {
            data_accesses: false,
            stall_cycles: true,
            os: OsConfig {
                fault_kernel_pages: 1,
                ..os
            },
            ..RunOptions::default()
        },
    )
    .unwrap()
}

/// The fault's clear of its fresh frame through the kernel's linear map (`os.fault_linear_map`,
/// Linux's `clear_user_highpage` on a low-memory page): a global 1 MiB data-side section entry
/// whose address is the linear map's of the frame's section. One thread touches `PAGES` new
/// pages in a row; the frames are handed out in order from the bottom of memory, past the first
/// MiB (256 frames), so they lie in sections 0 and 1: the clear's translation misses both
/// levels once per section (1 + 7 + the descriptor 100 + refill 3) and hits the micro TLB at
/// every other fault (1), and each clear stores a word (100). Against the same run without it
/// the cycles grow by exactly that, the data stalls by the two misses' 7 + 100 + 3, the walks
/// do not change, and the data micro TLB ends holding section 1's global entry at the linear
/// map's address of physical 1 MiB (`os::kernel_linear`; section 0's was the least recent).
#[test]
fn given_the_linear_map_when_faults_fill_two_sections_of_frames_then_each_section_misses_once() {
    use tlblab_core::os::kernel_linear;
    const PAGES: u64 = 300;
    let run = |fault_linear_map: bool| {
        let os = OsConfig {
            fault_linear_map,
            ..OsConfig::default()
        };
        let mut sys = split_kernel_system(os);
        touch_new_pages(&mut sys, PAGES);
        let sections: Vec<u64> = sys.tlbs[1]
            .entries()
            .filter(|e| e.global && e.size == PageSize::Size1M)
            .map(|e| e.vpn.0 << 20)
            .collect();
        (sys.stats(), sections)
    };
    let (without, none) = run(false);
    let (with, sections) = run(true);
    let (miss, hit, store) = (1 + 7 + 100 + 3, 1, 100);
    assert!(none.is_empty());
    let va_limit = PageTableFormat::X86_64_4level.va_limit();
    let linear = |pa| kernel_linear(va_limit, 512 << 20, pa).va;
    assert_eq!(
        sections,
        vec![linear(1 << 20)],
        "the last frames' section 1"
    );
    assert_eq!(with.total.page_faults, PAGES);
    assert_eq!(with.total.walks, without.total.walks);
    assert_eq!(
        with.total.cycles - without.total.cycles,
        2 * miss + (PAGES - 2) * hit + PAGES * store,
        "each section's first clear misses, every other hits the micro TLB; a store a fault"
    );
    let stalls = |s: &tlblab_core::Stats| s.total.data_stall_cycles.iter().sum::<u64>();
    assert_eq!(stalls(&with) - stalls(&without), 2 * (7 + 100 + 3));
}

/// The exception vectors (`os.vectors_page`): every kernel entry fetches its vector from the
/// vectors page (instruction side) and loads from the stubs page (data side), an abort's and
/// an IRQ's stub fetched from the stubs page too (arch/arm/kernel/entry-armv.S). One thread
/// faults (an abort), calls the kernel (an SVC) and takes a tick (an IRQ): the fault's vectors
/// fetch and stubs fetch miss both levels (111 each), its stubs load misses the data micro TLB
/// and hits the main TLB the stubs fetch filled (1 + 7) and loads a word (100); the call's
/// vectors fetch hits (1), its load hits (1 + 100); the tick's two fetches hit and its load
/// (1 + 1 + 1 + 100). The data stalls grow by the one main-TLB lookup, 7; the main TLB holds
/// the two global 4 KiB pages at 0xffff0000 and 0xffff1000 on a 32-bit range with memory
/// filling its top quarter (the Cortex-A9's), here at their offsets below 512 MiB.
#[test]
fn given_the_vectors_page_when_a_fault_a_call_and_a_tick_enter_then_each_takes_its_pages() {
    use tlblab_core::os::{kernel_linear, vectors_pages};
    use tlblab_trace::record::kernel_entry;
    let run = |vectors_page: bool| {
        let os = OsConfig {
            vectors_page,
            ..OsConfig::default()
        };
        let mut sys = split_kernel_system(os);
        sys.run(&mut VecSource::new(fault_call_then(kernel_entry::TICK)))
            .unwrap();
        let mut pages: Vec<u64> = sys.tlbs[2]
            .entries()
            .filter(|e| e.global && e.size == PageSize::Size4K)
            .map(|e| e.vpn.0 << 12)
            .collect();
        pages.sort_unstable();
        (sys.stats(), pages)
    };
    let (without, before) = run(false);
    let (with, after) = run(true);
    let miss = 1 + 7 + 100 + 3;
    let fault = 2 * miss + (1 + 7) + 100;
    let (call, tick) = (1 + 1 + 100, 1 + 1 + 1 + 100);
    assert_eq!(
        with.total.cycles - without.total.cycles,
        fault + call + tick
    );
    let stalls = |s: &tlblab_core::Stats| s.total.data_stall_cycles.iter().sum::<u64>();
    assert_eq!(stalls(&with) - stalls(&without), 7);
    let va_limit = PageTableFormat::X86_64_4level.va_limit();
    let [v, st] = vectors_pages(va_limit, 512 << 20);
    let linear = |pa| kernel_linear(va_limit, 512 << 20, pa).va;
    let mut expected = before.clone();
    expected.extend([linear(v), linear(st)]);
    expected.sort_unstable();
    assert_eq!(
        after, expected,
        "the vectors and stubs pages beside the fault path's page"
    );
    // The Cortex-A9's: 1 GiB filling the top quarter of a 32-bit range.
    let a9 = |pa| kernel_linear(1 << 32, 1 << 30, pa).va;
    let [v, st] = vectors_pages(1 << 32, 1 << 30);
    assert_eq!((a9(v), a9(st)), (0xffff_0000, 0xffff_1000));
}

/// The linear-map address of CPU 0's kmap_atomic fixmap slot (`os::kmap_fixmap_page`) on
/// `split_kernel_system`'s machine (a 4-level x86-64 range, 512 MiB).
fn fixmap_slot_of_cpu0() -> u64 {
    use tlblab_core::os::{kernel_linear, kmap_fixmap_page};
    let va_limit = PageTableFormat::X86_64_4level.va_limit();
    kernel_linear(
        va_limit,
        512 << 20,
        kmap_fixmap_page(va_limit, 512 << 20, 0),
    )
    .va
}

/// The fault's clear of a high-memory frame through the CPU's kmap_atomic fixmap page
/// (`os.fault_highmem`, Linux 4.14 arch/arm/mm/highmem.c): each fault stores the slot's PTE
/// (100, no caches), flushes the slot's address from the core's TLB levels, translates it
/// (after the flush a miss in both levels: 1 + 7 + the descriptor 100 + refill 3) and stores
/// a word of the frame (100). The fault path's page stays in the data micro TLB (touched
/// every fault), so against the same run without the clear the cycles grow by exactly
/// `PAGES` × (100 + 111 + 100), the data stalls by `PAGES` × (7 + 100 + 3), the walks do not
/// change, and the main TLB ends holding the slot of CPU 0 as one global 4 KiB entry. On the
/// Cortex-A9's range with 1 GiB the slots are Linux's: 0xffefe000 − cpu × 64 KiB.
#[test]
fn given_highmem_frames_when_faults_clear_them_then_each_flushes_and_walks_the_fixmap_slot() {
    use tlblab_core::os::{kernel_linear, kmap_fixmap_page};
    const PAGES: u64 = 40;
    let run = |fault_highmem: bool| {
        let os = OsConfig {
            fault_highmem,
            ..OsConfig::default()
        };
        let mut sys = split_kernel_system(os);
        touch_new_pages(&mut sys, PAGES);
        let slot = fixmap_slot_of_cpu0();
        let slots = sys.tlbs[2]
            .entries()
            .filter(|e| e.global && e.size == PageSize::Size4K && e.vpn.0 << 12 == slot)
            .count();
        (sys.stats(), slots)
    };
    let (without, none) = run(false);
    let (with, slots) = run(true);
    assert_eq!((none, slots), (0, 1));
    assert_eq!(with.total.page_faults, PAGES);
    assert_eq!(with.total.walks, without.total.walks);
    let (pte, miss, store) = (100, 1 + 7 + 100 + 3, 100);
    assert_eq!(
        with.total.cycles - without.total.cycles,
        PAGES * (pte + miss + store),
        "a PTE store, a flushed slot's walk and the clear's store a fault"
    );
    let stalls = |s: &tlblab_core::Stats| s.total.data_stall_cycles.iter().sum::<u64>();
    assert_eq!(stalls(&with) - stalls(&without), PAGES * (7 + 100 + 3));
    let a9 = |cpu| kernel_linear(1 << 32, 1 << 30, kmap_fixmap_page(1 << 32, 1 << 30, cpu)).va;
    assert_eq!(
        (a9(0), a9(1), a9(3)),
        (0xffef_e000, 0xffee_e000, 0xffec_e000)
    );
}

/// The split machine of `split_kernel_system` with one data cache: `size` bytes, `ways`-way,
/// 32-byte lines (the Cortex-A9's, TRM DDI0388I §7.1), 2 cycles; the walks read through it.
fn split_kernel_system_with_l1d(os: OsConfig, size: u64, ways: usize) -> System {
    let mut cfg = split_kernel_machine();
    let mut l1d = cache("L1D", 1, size, ways, 2);
    l1d.kind = tlblab_core::cache::CacheKind::Data;
    l1d.line = 32;
    cfg.caches = vec![l1d];
    split_system_of(cfg, os)
}

/// `pages` faults through the fixmap clear (`os.fault_highmem`) on `split_kernel_system_with_l1d`'s
/// machine with a `size`-byte, `ways`-way L1D: the statistics with the clear's first byte only
/// and with the whole page (`os.fault_clear_lines`).
fn clears_into_l1d(size: u64, ways: usize, pages: u64) -> (tlblab_core::Stats, tlblab_core::Stats) {
    let run = |fault_clear_lines: bool| {
        let os = OsConfig {
            fault_highmem: true,
            fault_clear_lines,
            ..OsConfig::default()
        };
        let mut sys = split_kernel_system_with_l1d(os, size, ways);
        touch_new_pages(&mut sys, pages);
        sys.stats()
    };
    (run(false), run(true))
}

/// The fault's clear as the whole page of stores (`os.fault_clear_lines`, Linux's
/// `clear_page`, a memset of 4 KiB): one store per 32-byte line of the L1D, 128 a fault
/// instead of the frame's first byte. `PAGES` faults on consecutive fresh frames into a
/// 64 KiB 4-way L1D (512 sets of 32 bytes): the clears' lines take one way of 384 sets, so
/// with the walks' and the handler's few lines no set overflows and nothing is evicted;
/// every one of a clear's 127 further stores misses (a fresh frame) and costs memory's 100.
/// So against the same run without it the L1D's accesses and misses grow by `PAGES` × 127,
/// the cycles by `PAGES` × 127 × 100 (the handler's busy time), and neither the walks nor the
/// data stalls change.
#[test]
fn given_whole_page_clears_when_faults_clear_fresh_frames_then_each_stores_every_line() {
    const PAGES: u64 = 3;
    let (without, with) = clears_into_l1d(64 << 10, 4, PAGES);
    assert_eq!(with.total.page_faults, PAGES);
    let l1d = |s: &tlblab_core::Stats| (s.total.cache[0].accesses, s.total.cache[0].misses);
    assert_eq!(
        (
            l1d(&with).0 - l1d(&without).0,
            l1d(&with).1 - l1d(&without).1
        ),
        (PAGES * 127, PAGES * 127)
    );
    assert_eq!(with.total.cycles - without.total.cycles, PAGES * 127 * 100);
    assert_eq!(with.total.walk_cycles, without.total.walk_cycles);
    assert_eq!(
        with.total.data_stall_cycles,
        without.total.data_stall_cycles
    );
}

/// The clear's footprint evicts the page-table lines the walks find in the L1D: in a 4 KiB
/// direct-mapped L1D (128 sets of 32 bytes) a clear of 4 KiB writes every set, so after each
/// fault every line the next walk reads is gone, where with one store of the clear most of
/// them stay. The walks are the same walks and read more from memory: their cycles grow.
#[test]
fn given_a_small_l1d_when_a_clear_writes_every_set_then_the_next_walks_miss_their_lines() {
    let (without, with) = clears_into_l1d(4 << 10, 1, 6);
    assert_eq!(with.total.walks, without.total.walks);
    assert_eq!(with.total.walk_refs, without.total.walk_refs);
    assert!(
        with.total.walk_cycles > without.total.walk_cycles,
        "walks {} against {}",
        with.total.walk_cycles,
        without.total.walk_cycles
    );
}

/// PREEMPT_RT's `kunmap_atomic` (`os.kunmap_flush`, the RT patch "arm/highmem: Flush tlb on
/// unmap"): after the clear the fixmap slot's PTE is written again, cleared (a store, 100 with
/// no caches), and the slot's address flushed from the core's TLB levels. The next fault's
/// `kmap_atomic` flushed it anyway and walks it again as before, so against the run with
/// `fault_highmem` alone the cycles grow by `PAGES` × 100, the data stalls do not change, and
/// no TLB level ends holding the slot (with the mainline unmap the data micro TLB and the main
/// TLB hold it): under the x86-style maintenance (TLBIMVA by address) and under ARM's
/// broadcast rule (the micro TLBs flushed whole) alike.
#[test]
fn given_the_rt_kunmap_when_faults_clear_through_the_fixmap_then_the_slot_is_flushed_after_each() {
    use tlblab_core::os::TlbMaintenance;
    const PAGES: u64 = 40;
    let slot = fixmap_slot_of_cpu0();
    for maintenance in [TlbMaintenance::Ipi, TlbMaintenance::Broadcast] {
        let run = |kunmap_flush: bool| {
            let os = OsConfig {
                fault_highmem: true,
                kunmap_flush,
                tlb_maintenance: maintenance,
                ..OsConfig::default()
            };
            let mut sys = split_kernel_system(os);
            touch_new_pages(&mut sys, PAGES);
            let slots: Vec<usize> = [1, 2]
                .iter()
                .map(|&t| {
                    sys.tlbs[t]
                        .entries()
                        .filter(|e| e.global && e.vpn.0 << 12 == slot)
                        .count()
                })
                .collect();
            (sys.stats(), slots)
        };
        let (mainline, kept) = run(false);
        let (rt, flushed) = run(true);
        assert_eq!(kept, vec![1, 1], "{maintenance:?}");
        assert_eq!(flushed, vec![0, 0], "{maintenance:?}");
        assert_eq!(rt.total.cycles - mainline.total.cycles, PAGES * 100);
        assert_eq!(rt.total.data_stall_cycles, mainline.total.data_stall_cycles);
    }
}

/// The kernel's data as 1 MiB sections of its linear map (`os.kernel_data_sections`, ARM
/// Linux's `map_lowmem`): the fault path's page and a system call's six pages, all in the
/// section 96 MiB below the top of memory, take one global 1 MiB entry instead of seven 4 KiB
/// ones. One thread faults (the fault path's page misses both levels either way), then calls
/// the kernel `CALLS` times. With 4 KiB entries the call's six pages miss both levels at the
/// first call (1 + 7 + 100 + 3 each) and, six pages cycling through the 4-entry LRU micro TLB,
/// miss it and hit the main TLB at every later one (1 + 7 each); with the section they hit the
/// micro TLB (1 each). Each page's load (100) is the same. So the cycles and the data stalls
/// fall by 6 × 111 + (`CALLS` − 1) × 6 × 8 − `CALLS` × 6 and 6 × 110 + (`CALLS` − 1) × 6 × 7,
/// and the data micro TLB ends holding the section as its only kernel entry.
#[test]
fn given_kernel_data_sections_when_a_call_touches_six_pages_then_one_section_entry_serves_them() {
    use tlblab_core::os::kernel_linear;
    const CALLS: u64 = 3;
    let run = |kernel_data_sections: bool| {
        let os = OsConfig {
            kernel_data_sections,
            syscall_kernel_pages: 6,
            ..OsConfig::default()
        };
        let mut sys = split_kernel_system(os);
        let mut recs = thread_starts(&[0]);
        recs.push(ld(0, 0x1000_0000));
        for _ in 0..CALLS {
            recs.push(kernel_entered(tlblab_trace::record::kernel_entry::SYSCALL));
        }
        sys.run(&mut VecSource::new(recs)).unwrap();
        let kernel: Vec<(u64, PageSize)> = sys.tlbs[1]
            .entries()
            .filter(|e| e.global)
            .map(|e| (e.vpn.0 << e.size.shift(), e.size))
            .collect();
        (sys.stats(), kernel)
    };
    let (pages, _) = run(false);
    let (sections, kernel) = run(true);
    let va_limit = PageTableFormat::X86_64_4level.va_limit();
    let section = kernel_linear(va_limit, 512 << 20, (512 - 96) << 20).va;
    assert_eq!(kernel, vec![(section, PageSize::Size1M)]);
    assert_eq!(pages.total.walks, sections.total.walks);
    assert_eq!(
        pages.total.cycles - sections.total.cycles,
        6 * 111 + (CALLS - 1) * 6 * 8 - CALLS * 6
    );
    let stalls = |s: &tlblab_core::Stats| s.total.data_stall_cycles.iter().sum::<u64>();
    assert_eq!(
        stalls(&pages) - stalls(&sections),
        6 * 110 + (CALLS - 1) * 6 * 7
    );
}

/// The fault's clears and the fault path's text are traced with the path's pages: each
/// without them is refused, the message naming its field; the two clears together too.
#[test]
fn fault_clear_or_text_without_fault_kernel_pages_is_refused() {
    let clear = OsConfig {
        fault_linear_map: true,
        ..OsConfig::default()
    };
    let text = OsConfig {
        fault_text_sections: 1,
        ..OsConfig::default()
    };
    let highmem = OsConfig {
        fault_highmem: true,
        ..OsConfig::default()
    };
    // One clear a fault: through the fixmap or the linear map, not both.
    let both = OsConfig {
        fault_kernel_pages: 1,
        fault_linear_map: true,
        ..highmem
    };
    for (os, field) in [
        (clear, "os.fault_linear_map"),
        (text, "os.fault_text_sections"),
        (highmem, "os.fault_highmem"),
        (both, "os.fault_highmem"),
    ] {
        let e = os.validate().unwrap_err();
        assert!(e.contains(field), "{e}");
    }
}

/// A fault path longer than the kernel's page budget is refused with the field's name.
#[test]
fn fault_kernel_pages_beyond_the_limit_are_refused_with_the_field() {
    let os = OsConfig {
        kernel_pages: 500,
        fault_kernel_pages: 13,
        ..OsConfig::default()
    };
    let e = os.validate().unwrap_err();
    assert!(
        e.contains("os.fault_kernel_pages") && e.contains("found 13"),
        "{e}"
    );
}
