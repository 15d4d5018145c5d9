//! The first level's memo and entries of several sizes: a regression of its own.

use super::*;

/// Given a level holding the global 1 MiB section 0xca0 and the 4 KiB page 0xca003 inside it
/// (a fault's clear through the kernel's linear map beside the kernel's own pages,
/// `OsConfig::fault_linear_map`), when a lookup of 0xca000000 hits the section and a lookup
/// of 0xca003000 follows, then the second hits the 4 KiB entry, as the search (smallest size
/// first) and the reference model do, and ages it, not the section. Before 2026-11-28 the
/// memo of the last hit matched any address of the section's MiB and answered the section:
/// `tlb_coloring_agrees_with_its_twin` failed on it under CI's `PROPTEST_RNG_SEED=20261125`
/// once the random machines drew two more OS knobs.
#[test]
fn the_memo_of_a_large_entry_does_not_hide_a_smaller_one() {
    use tlblab_core::tlb::{Requester, Tlb, TlbEntry};
    use tlblab_types::{Asid, Pfn, Vpn};
    let cfg = TlbConfig {
        page_sizes: vec![PageSize::Size4K, PageSize::Size1M],
        latency: 0,
        ..common::tlb("T1", 1, 2, 2, Lru)
    };
    let mut tlb = Tlb::new(cfg, 0);
    let req = Requester::default();
    let global = |vpn: u64, size: PageSize, pfn: u64| {
        let mut e = TlbEntry::new(Vpn(vpn), size, Pfn(pfn), Asid(0));
        e.global = true;
        e
    };
    tlb.insert(global(0xca0, PageSize::Size1M, 0xa000));
    tlb.insert(global(0xca003, PageSize::Size4K, 0xa003));
    let section = tlb.lookup(VirtAddr(0xca00_0000), req).expect("the section");
    assert_eq!(section.size, PageSize::Size1M);
    let page = tlb.lookup(VirtAddr(0xca00_3000), req).expect("the page");
    assert_eq!((page.size, page.pfn), (PageSize::Size4K, Pfn(0xa003)));
    // The page is now the most recent: a third entry evicts the section.
    tlb.insert(global(0xcb0, PageSize::Size1M, 0xb000));
    let held: Vec<u64> = tlb.entries().map(|e| e.vpn.0).collect();
    assert!(
        held.contains(&0xca003) && !held.contains(&0xca0),
        "{held:x?}"
    );
}
