//! One TLB level in isolation, for profiling its miss path: a lookup that misses and a fill,
//! on uniformly random 4 KiB pages (`cargo run --release -p tlblab-core --example tlb_ops --
//! ENTRIES WAYS [OPS]`, ways 0 = fully associative).
use tlblab_core::tlb::{Tlb, TlbConfig, TlbEntry, TlbKind, Ways};
use tlblab_types::{Asid, PageSize, Pfn, SplitMix64, VirtAddr, Vpn};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let (entries, ways, ops) = (args[0], args[1], *args.get(2).unwrap_or(&10_000_000));
    let ways = if ways == 0 {
        Ways::Named(tlblab_core::tlb::FullyAssociative::Full)
    } else {
        Ways::N(ways)
    };
    let config = TlbConfig {
        kind: TlbKind::Data,
        page_sizes: vec![PageSize::Size4K, PageSize::Size2M],
        ..TlbConfig::plain("T", 1, entries, ways)
    };
    config.validate().unwrap();
    let mut tlb = Tlb::new(config, 0);
    let mut rng = SplitMix64::new(1);
    let vpns: Vec<u64> = (0..ops).map(|_| rng.below(1 << 18)).collect();
    let req = Default::default();
    let t = std::time::Instant::now();
    let mut misses = 0u64;
    for &v in &vpns {
        if tlb.lookup(VirtAddr(v << 12), req).is_none() {
            misses += 1;
            tlb.fill(TlbEntry::new(Vpn(v), PageSize::Size4K, Pfn(v), Asid(0)));
        }
    }
    let s = t.elapsed().as_secs_f64();
    eprintln!(
        "{misses} misses of {ops}: {:.1} ns/op",
        s * 1e9 / ops as f64
    );
}
