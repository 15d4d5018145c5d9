//! Page tables built and walked: every walk and prefetch descent finds what was mapped.

use super::*;
use crate::memory::{MemoryConfig, Placement};

fn frames() -> FrameAllocator {
    let cfg = MemoryConfig {
        bytes: 8 << 30,
        latency: 100,
        placement: Placement::default(),
        source: String::new(),
    };
    FrameAllocator::new(&cfg, 1)
}

/// `walk_from` (one copy per format) and the prefetch helpers (`last_table`,
/// `last_level_entry`, `last_entry`) agree with each other and with what was mapped, for
/// every format and page size, global or not (the leaf descriptor's nG or G bit),
/// including the ARMv7 domain of a first-level descriptor (which no engine test sets to
/// anything but 0).
#[test]
fn walks_and_prefetch_descents_find_what_was_mapped() {
    for format in [
        PageTableFormat::X86_64_4level,
        PageTableFormat::X86_64_5level,
        PageTableFormat::Armv7Short,
        PageTableFormat::Armv8_4k,
    ] {
        let mut fr = frames();
        let mut pt = PageTable::new(format, &mut fr).unwrap();
        let domain = Domain(if format == PageTableFormat::Armv7Short {
            5
        } else {
            0
        });
        let mut va = 1u64 << 30;
        for (size, global) in format
            .page_sizes()
            .into_iter()
            .flat_map(|s| [(s, false), (s, true)])
        {
            let pfn = fr.alloc(size).unwrap();
            let page = VirtAddr(va);
            pt.map(page, size, pfn, domain, global, &mut fr).unwrap();
            let probe = VirtAddr(va + size.bytes() / 2 + 8);
            let mut path = WalkPath::default();
            let leaf = pt.walk_from(probe, 0, 0, &mut path).expect("mapped");
            assert_eq!(leaf.pfn, pfn, "{format:?} {size}");
            assert_eq!(leaf.size, size, "{format:?} {size}");
            assert_eq!(leaf.domain, domain, "{format:?} {size}");
            assert_eq!(pt.is_global(probe), Some(global), "{format:?} {size}");
            let last = pt.last_entry(probe, 0, 0);
            assert_eq!(last.entry, path.refs[path.len - 1], "{format:?} {size}");
            assert_eq!(last.leaf, Some((pfn, size)), "{format:?} {size}");
            let leaf_level = pt.leaf_level(size).unwrap();
            if leaf_level + 1 == pt.levels().len() {
                let node = pt.last_table(probe).expect("tables reach the last level");
                assert_eq!(node, path.nodes[path.len - 1], "{format:?} {size}");
                let e = pt.last_level_entry(node, probe);
                assert_eq!(e.entry, last.entry, "{format:?} {size}");
                assert_eq!(e.leaf, last.leaf, "{format:?} {size}");
            } else {
                assert_eq!(pt.last_table(probe), None, "{format:?} {size}");
            }
            // Starting below the root (a page-walk-cache hit) reads the rest of the path
            // (from the last two levels, in `walk_with`'s straight code), and finds the
            // same leaf: an ARMv7 one with the domain of the first-level descriptor it
            // did not read.
            for start in 1..path.len {
                let mut rest = WalkPath::default();
                let again = pt.walk_from(probe, start, path.nodes[start], &mut rest);
                let expected = Leaf { pfn, size, domain };
                assert_eq!(again, Some(expected), "{format:?} {size} from {start}");
                assert_eq!(&rest.refs[..rest.len], &path.refs[start..path.len]);
                assert_eq!(&rest.nodes[..rest.len], &path.nodes[start..path.len]);
            }
            if leaf_level > 0 && leaf_level + 1 == pt.levels().len() {
                // The next page of the same last-level table is unmapped: from any level
                // below the root, no leaf, and the rest of the path to its invalid entry.
                let next = VirtAddr(probe.0 + size.bytes());
                let mut full = WalkPath::default();
                assert_eq!(pt.walk_from(next, 0, 0, &mut full), None, "{format:?}");
                assert_eq!(full.nodes[full.len - 1], path.nodes[path.len - 1]);
                for start in 1..full.len {
                    let mut rest = WalkPath::default();
                    let node = full.nodes[start];
                    assert_eq!(pt.walk_from(next, start, node, &mut rest), None);
                    assert_eq!(&rest.refs[..rest.len], &full.refs[start..full.len]);
                    assert_eq!(&rest.nodes[..rest.len], &full.nodes[start..full.len]);
                }
            }
            // 256 MiB apart on ARMv7, whose 4 GiB hold six pages 1 GiB apart only just not.
            va += if format == PageTableFormat::Armv7Short {
                1 << 28
            } else {
                1 << 30
            };
        }
        // Unmapped: no leaf, the path ends at the invalid entry.
        let mut path = WalkPath::default();
        assert_eq!(pt.walk_from(VirtAddr(va), 0, 0, &mut path), None);
        assert_eq!(pt.last_entry(VirtAddr(va), 0, 0).leaf, None);
    }
}

/// The second-level table a walk of `va` reads (path.refs[1]) in `pt`, mapping `va` first.
fn second_level_entry(pt: &mut PageTable, fr: &mut FrameAllocator, va: u64) -> PhysAddr {
    let pfn = fr.alloc(PageSize::Size4K).unwrap();
    pt.map(VirtAddr(va), PageSize::Size4K, pfn, Domain(0), false, fr)
        .unwrap();
    let mut path = WalkPath::default();
    pt.walk_from(VirtAddr(va), 0, 0, &mut path).expect("mapped");
    assert_eq!(path.len, 2);
    path.refs[1]
}

/// Given ARMv7 short-descriptor tables in Linux's layout (arch/arm/include/asm/pgtable-2level.h:
/// h/w pt 0 at +2048, h/w pt 1 at +3072 of one page per 2 MiB), when a page of the even MiB
/// 0x200 and then one of the odd MiB 0x201 are mapped, then the walks read page + 2048 +
/// index × 4 and the same page + 3072 + index × 4, the second table takes no frame of its
/// own, the first-level entries point at the two hardware tables (both written with the first
/// table, as `__pmd_populate` writes the pair), and the next 2 MiB's table
/// is in a new page; in the default layout the table starts its frame.
#[test]
fn linux_armv7_layout_puts_two_hardware_tables_at_2048_and_3072_of_one_page() {
    let mut fr = frames();
    let mut pt = PageTable::with_layout(
        PageTableFormat::Armv7Short,
        TableLayout::LinuxArmv7,
        &mut fr,
    )
    .unwrap();
    let root = pt.root().0;
    let before = fr.allocated_frames();
    let even = second_level_entry(&mut pt, &mut fr, 0x2000_4000);
    // One data frame and one table page.
    assert_eq!(fr.allocated_frames(), before + 2);
    let page = even.0 & !0xfff;
    assert_eq!(even.0, page + 2048 + 4 * 4);
    // `__pmd_populate` wrote the pair: the odd MiB's first-level entry points at its table
    // before any page of it is mapped, and a walk there finds its second-level entry invalid.
    assert_eq!(
        pt.format().decode(pt.slot(0, 0x201).desc, 0),
        Desc::Table {
            child: PhysAddr(page + 3072)
        }
    );
    let mut path = WalkPath::default();
    assert!(pt
        .walk_from(VirtAddr(0x2010_8000), 0, 0, &mut path)
        .is_none());
    assert_eq!(path.len, 2);
    assert_eq!(path.refs[1].0, page + 3072 + 8 * 4);
    let odd = second_level_entry(&mut pt, &mut fr, 0x2010_8000);
    // One data frame only: the odd MiB's table shares the even one's page.
    assert_eq!(fr.allocated_frames(), before + 3);
    assert_eq!(odd.0, page + 3072 + 8 * 4);
    // The first-level entries of MiBs 0x200 and 0x201 point at the two hardware tables.
    let mut path = WalkPath::default();
    pt.walk_from(VirtAddr(0x2010_8000), 0, 0, &mut path)
        .unwrap();
    assert_eq!(path.refs[0].0, root + 0x201 * 4);
    let l1 = |i: usize| pt.format().decode(pt.slot(0, i).desc, 0);
    assert_eq!(
        l1(0x200),
        Desc::Table {
            child: PhysAddr(page + 2048)
        }
    );
    assert_eq!(
        l1(0x201),
        Desc::Table {
            child: PhysAddr(page + 3072)
        }
    );
    // The next 2 MiB (MiB 0x202, even) gets a page of its own, its table 2048 bytes in.
    let next = second_level_entry(&mut pt, &mut fr, 0x2020_0000);
    assert_ne!(next.0 & !0xfff, page);
    assert_eq!(next.0 & 0xfff, 2048);
    // An odd MiB mapped first takes the page and sits at +3072; its even partner follows.
    let odd_first = second_level_entry(&mut pt, &mut fr, 0x3030_0000 + 0xff * 4096);
    assert_eq!(odd_first.0 & 0xfff, 3072 + 0xff * 4);
    let partner = second_level_entry(&mut pt, &mut fr, 0x3020_0000);
    assert_eq!(partner.0, (odd_first.0 & !0xfff) + 2048);

    let mut fr = frames();
    let mut own = PageTable::new(PageTableFormat::Armv7Short, &mut fr).unwrap();
    let e = second_level_entry(&mut own, &mut fr, 0x2000_4000);
    assert_eq!(e.0 & 0xfff, 4 * 4);
    let o = second_level_entry(&mut own, &mut fr, 0x2010_8000);
    assert_eq!(o.0 & 0xfff, 8 * 4);
    assert_ne!(o.0 & !0xfff, e.0 & !0xfff);
}
