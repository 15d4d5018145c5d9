//! The SHARDS-sampled curve (`sampled.rs`) against the same estimator computed the naive way:
//! one LRU stack of every page in a `Vec`, a page's depth found by searching it. The pass's
//! fast loops (the lean loop, and the sampled-only loop that holds the head's top pages in
//! registers) must give exactly the naive estimate, whatever the stream: pages reused at every
//! depth, accesses across a page boundary, instruction fetches and data, and TLB flushes that
//! send the pass through its general path and back.

mod common;

use proptest::prelude::*;
use tlblab_curve::sampled::{fmix64, MODULUS_BITS};
use tlblab_curve::{Path, Spec};
use tlblab_trace::record::{Access, Event, Record};
use tlblab_trace::source::VecSource;
use tlblab_types::{AccessKind, PageSize, SplitMix64, ThreadId, VirtAddr};

/// Pages the sampled pass keeps exactly (`head.rs` HEAD).
const HEAD: usize = 8;

/// One address space's accesses: a few hot pages (reused at depths 1-4, as code, stack and
/// data pages are), a larger pool, accesses across a page boundary, and now and then a flush.
fn stream(seed: u64, n: usize, flushes: bool) -> Vec<Record> {
    let mut rng = SplitMix64::new(seed);
    let mut out: Vec<Record> = vec![Event::ThreadStart {
        thread: ThreadId(0),
        process: 0,
    }
    .into()];
    let hot = 1 + rng.below(6);
    let pool = hot + rng.below(3000);
    for _ in 0..n {
        if flushes && rng.below(500) == 0 {
            out.push(common::tlb_flush());
            continue;
        }
        let kind = match rng.below(3) {
            0 => AccessKind::Instr,
            1 => AccessKind::Store,
            _ => AccessKind::Load,
        };
        let page = if rng.below(4) == 0 {
            rng.below(pool)
        } else {
            rng.below(hot)
        };
        let (off, size) = match rng.below(24) {
            0 => (4096 - 1 - rng.below(7), 8),
            1 => (4095, 1),
            2 => (rng.below(4096), 0),
            _ => (rng.below(4000), 8),
        };
        out.push(
            Access::new(
                ThreadId(0),
                kind,
                VirtAddr(0x10_0000 + page * 4096 + off),
                size,
            )
            .into(),
        );
    }
    out
}

/// The estimator of `sampled.rs`, naively: misses of a fully associative LRU TLB of every size
/// 1..=`max_entries`.
fn naive(records: &[Record], rate: f64, max_entries: usize) -> Vec<u64> {
    let threshold = (rate * (1u64 << MODULUS_BITS) as f64).round().max(1.0) as u64;
    let scale = (1u64 << MODULUS_BITS) as f64 / threshold as f64;
    let in_sample = |k: u64| fmix64(k) & ((1 << MODULUS_BITS) - 1) < threshold;
    let mut stack: Vec<u64> = Vec::new(); // most recent first
    let mut head_hits = [0u64; HEAD];
    let (mut head_misses, mut sampled) = (0u64, 0u64);
    let mut hist = vec![0u64; max_entries];
    let key = |va: u64| tlblab_curve::key(0, PageSize::Size4K, va >> 12);
    let mut reference = |k: u64, stack: &mut Vec<u64>| {
        let pos = stack.iter().position(|&s| s == k);
        match pos {
            Some(p) if p < HEAD => head_hits[p] += 1,
            _ => {
                head_misses += 1;
                if in_sample(k) {
                    sampled += 1;
                    if let Some(p) = pos {
                        // Depth among the sampled pages below the head, the page itself
                        // included; the head's pages count one each.
                        let d = 1 + stack[HEAD..p].iter().filter(|&&s| in_sample(s)).count();
                        let est = HEAD as f64 + 1.0 + (d - 1) as f64 * scale;
                        if let Some(h) = hist.get_mut(est.round() as usize - 1) {
                            *h += 1;
                        }
                    }
                }
            }
        }
        if let Some(p) = pos {
            stack.remove(p);
        }
        stack.insert(0, k);
    };
    for r in records {
        match r {
            Record::Access(a) => {
                let va = a.vaddr.0;
                let off = va & 0xfff;
                reference(key(va), &mut stack);
                if a.size > 1 && off + a.size as u64 > 4096 {
                    reference(key(va + 4096 - off), &mut stack);
                }
            }
            Record::Event(Event::Flush { .. }) => stack.clear(),
            Record::Event(_) => {}
        }
    }
    let refs = head_hits.iter().sum::<u64>() + head_misses;
    let mut out = Vec::new();
    let (mut head, mut tail) = (0u64, 0u64);
    for c in 1..=max_entries {
        tail += hist[c - 1];
        if c <= HEAD {
            head += head_hits[c - 1];
            out.push(refs - head);
        } else if sampled == 0 {
            out.push(head_misses);
        } else {
            out.push(((1.0 - tail as f64 / sampled as f64) * head_misses as f64).round() as u64);
        }
    }
    out
}

fn sampled_curve(records: &[Record], rate: f64, max_entries: usize) -> Vec<u64> {
    let spec = Spec {
        path: Path::Unified,
        groups: false,
        sample_rate: Some(rate),
        sample_entries: max_entries,
        ..Spec::new(0, &[])
    };
    let curves = tlblab_curve::curves(&mut VecSource::new(records.to_vec()), spec).unwrap();
    let g = curves.group("all").unwrap();
    (1..=max_entries)
        .map(|c| {
            g.points
                .iter()
                .find(|p| !p.exact && p.sets == 1 && p.ways == c)
                .unwrap()
                .misses
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, .. ProptestConfig::default() })]

    /// Given a random single-space stream and a sampling rate, the pass's sampled curve is the
    /// naive estimate at every size.
    #[test]
    fn the_sampled_curve_is_the_naive_estimate(seed in any::<u64>(), n in 1usize..4000, rate_pick in 0usize..4, flushes in any::<bool>()) {
        let rate = [1.0, 0.5, 0.1, 0.01][rate_pick];
        let records = stream(seed, n, flushes);
        prop_assert_eq!(sampled_curve(&records, rate, 512), naive(&records, rate, 512));
    }
}

/// A stream that never leaves the top four pages: no page is ever sampled below the head, so
/// every size's misses are exact (the cold misses of the four pages, and every reference for a
/// TLB of fewer entries than a reference's depth).
#[test]
fn given_only_the_top_four_pages_then_the_small_sizes_are_exact() {
    let mut records: Vec<Record> = Vec::new();
    for round in 0..1000u64 {
        for p in 0..4u64 {
            let kind = if p == 0 {
                AccessKind::Instr
            } else {
                AccessKind::Load
            };
            records.push(
                Access::new(
                    ThreadId(0),
                    kind,
                    VirtAddr(0x40_0000 + p * 4096 + round % 64),
                    8,
                )
                .into(),
            );
        }
    }
    let misses = sampled_curve(&records, 0.01, 16);
    // Cyclic over 4 pages: every reference is at depth 4 after the first round.
    assert_eq!(misses[0], 4000);
    assert_eq!(misses[2], 4000);
    assert_eq!(misses[3], 4);
    assert_eq!(misses[15], 4);
}
