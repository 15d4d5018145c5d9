//! Round trips through every decoding path (SIMD scan, word scan, checked), the encoding's
//! sizes, and corrupt or truncated payloads (an error, never a panic).

use super::*;

fn encode(recs: &[Record]) -> (Vec<u8>, usize, u32) {
    encode_with::<State>(recs)
}

/// One payload of `recs` in the coding `C` (this version's, or version 1's for its decoder's
/// tests), padded as the reader pads it (the padding's value must not matter): (buffer,
/// payload length, records).
pub(in crate::format) fn encode_with<C: Coding>(recs: &[Record]) -> (Vec<u8>, usize, u32) {
    let mut e = Encoder::<C>::default();
    for r in recs {
        e.push(r);
    }
    let mut buf = e.payload().to_vec();
    let len = buf.len();
    buf.resize(len + PAD, 0xAA);
    (buf, len, e.records)
}

fn decode_all(buf: &[u8], len: usize, records: u32, scan: Scan) -> Vec<Record> {
    let mut d = Decoder::default();
    d.set_scan(scan);
    d.start(buf, len, records).unwrap();
    let mut out = Vec::new();
    // Decode in uneven pieces to exercise resumption.
    let mut step = 1;
    while d.remaining() > 0 {
        d.decode(buf, len, &mut out, step).unwrap();
        step = (step * 3 + 1) % 5000;
    }
    out
}

/// Round trip through every scan implementation; all must agree.
fn round_trip(recs: &[Record]) -> Vec<Record> {
    let (buf, len, n) = encode(recs);
    let a = decode_all(&buf, len, n, Scan::Auto);
    let w = decode_all(&buf, len, n, Scan::Word);
    let c = decode_all(&buf, len, n, Scan::Checked);
    assert_eq!(a, w, "SIMD scan and word scan differ");
    assert_eq!(a, c, "group path and checked path differ");
    a
}

#[test]
fn addr_codes_are_minimal_signed_widths() {
    for (d, ac) in [
        (0i64, 1u8),
        (127, 1),
        (-128, 1),
        (128, 2),
        (-129, 2),
        (1 << 47, 7),
        ((1 << 47) - 1, 6),
        (-(1 << 47), 6),
        (i64::MIN, 7),
        (i64::MAX, 7),
    ] {
        assert_eq!(addr_code(d), ac, "{d}");
        let n = ADDR_BYTES[ac as usize];
        assert_eq!(sext(d as u64, n) as i64, d);
    }
}

#[test]
fn word_scan_matches_the_definition() {
    let mut g = [0u8; 16];
    let mut x = 12345u64;
    for _ in 0..20_000 {
        for b in g.iter_mut() {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Mostly plain tags, so runs are long.
            *b = (x >> 56) as u8;
            if *b & 0x1f == 0 && x & 0x100 != 0 {
                *b |= 2;
            }
        }
        let run = g.iter().take_while(|&&t| is_plain(t)).count();
        for (name, f) in [
            (
                "word",
                scan_group_word as fn(&[u8; 16]) -> (usize, u64, u64),
            ),
            #[cfg(target_arch = "x86_64")]
            ("sse2", scan_group_sse2),
        ] {
            let (r, n0, n1) = f(&g);
            assert_eq!(r, run, "{name} {g:02x?}");
            for k in 0..=16 {
                let want: usize = g[..k].iter().map(|&t| ADDR_BYTES[(t >> 5) as usize]).sum();
                assert_eq!(run_bytes(n0, n1, k), want, "{name} {k} {g:02x?}");
            }
        }
    }
}

/// Sequential 4-byte fetches interleaved with loads at a 4 KiB stride: after the first of each
/// stream, every address is predicted, in both payload versions (codec_v1's tests use it too).
pub(in crate::format) fn sequential_code_and_strided_data() -> Vec<Record> {
    let mut recs = Vec::new();
    for i in 0..1000u64 {
        recs.push(Record::Access(Access::new(
            ThreadId(0),
            AccessKind::Instr,
            VirtAddr(0x400000 + 4 * i),
            4,
        )));
        recs.push(Record::Access(Access::new(
            ThreadId(0),
            AccessKind::Load,
            VirtAddr(0x1000_0000 + 4096 * i),
            8,
        )));
    }
    recs
}

#[test]
fn sequential_code_and_strided_data_cost_one_byte_each() {
    let recs = sequential_code_and_strided_data();
    let (_, n, _) = encode(&recs);
    assert!(
        n < recs.len() + 20,
        "{} bytes for {} records",
        n,
        recs.len()
    );
    assert_eq!(round_trip(&recs), recs);
}

/// Every event kind, extreme field values and odd access sizes: the records both payload
/// versions must round-trip (codec_v1's tests use it too).
pub(in crate::format) fn every_event_and_odd_sizes() -> Vec<Record> {
    vec![
        Record::Event(Event::ThreadStart {
            thread: ThreadId(7),
            process: 3,
        }),
        Record::Access(Access::new(
            ThreadId(7),
            AccessKind::Store,
            VirtAddr(u64::MAX - 3),
            3,
        )),
        Record::Access(Access::new(ThreadId(7), AccessKind::Load, VirtAddr(0), 0)),
        Record::Access(Access::new(
            ThreadId(u32::MAX),
            AccessKind::Instr,
            VirtAddr(1 << 63),
            4096,
        )),
        Record::Access(Access::new(ThreadId(1), AccessKind::Instr, VirtAddr(5), 0)),
        Record::Access(Access::new(ThreadId(1), AccessKind::Instr, VirtAddr(5), 15)),
        Record::Access(Access::new(
            ThreadId(1),
            AccessKind::Instr,
            VirtAddr(20),
            16,
        )),
        Record::Event(Event::ContextSwitch {
            core: CoreId(65535),
            from: ThreadId(1),
            to: ThreadId(2),
        }),
        Record::Event(Event::Migrate {
            thread: ThreadId(1),
            core: CoreId(3),
        }),
        Record::Event(Event::Mmap {
            process: 1,
            start: VirtAddr(0x7fff_0000_0000),
            len: 1 << 30,
            prot: 7,
            page_shift: 21,
        }),
        Record::Event(Event::Munmap {
            process: 1,
            start: VirtAddr(0x1000),
            len: 4096,
        }),
        Record::Event(Event::Mprotect {
            process: 1,
            start: VirtAddr(0x1000),
            len: 4096,
            prot: 1,
        }),
        Record::Event(Event::TaskRelease { task: 1, job: 2 }),
        Record::Event(Event::JobStart { task: 1, job: 2 }),
        Record::Event(Event::JobEnd { task: 1, job: 2 }),
        Record::Event(Event::Region {
            region: 0,
            start: VirtAddr(0x4000),
            len: 8192,
        }),
        Record::Event(Event::PhaseBegin { region: 0 }),
        Record::Event(Event::PhaseEnd { region: 0 }),
        Record::Event(Event::Flush {
            core: CoreId(0),
            what: 3,
        }),
        Record::Event(Event::MapShared {
            process: 2,
            start: VirtAddr(0x40_0000),
            len: 8192,
            prot: 5,
            page_shift: 12,
            object: 9,
        }),
        Record::Event(Event::TlbLock {
            process: 0,
            page: VirtAddr(0xbeff_f000),
            core: crate::record::ALL_CORES,
            lock: true,
        }),
        Record::Event(Event::TlbLock {
            process: 3,
            page: VirtAddr(0x10_0000),
            core: CoreId(2),
            lock: false,
        }),
        Record::Event(Event::FlushRange {
            process: 3,
            start: VirtAddr(0x0180_3000),
            len: 4096,
            what: 3,
        }),
        Record::Event(Event::ThreadExit {
            thread: ThreadId(7),
        }),
    ]
}

#[test]
fn every_event_and_odd_sizes_round_trip() {
    let mut recs = every_event_and_odd_sizes();
    assert_eq!(round_trip(&recs), recs);
    // Long enough for the group path too (tend >= 8), events in the middle of groups.
    let copy = recs.clone();
    for _ in 0..5 {
        recs.extend_from_slice(&copy);
    }
    assert_eq!(round_trip(&recs), recs);
}

#[test]
fn truncated_payload_is_an_error_not_a_panic() {
    let recs: Vec<Record> = (0..40)
        .map(|i| {
            Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Load,
                VirtAddr(0x1234_5678_9abc + i * 77_777),
                8,
            ))
        })
        .collect();
    for scan in [Scan::Auto, Scan::Word, Scan::Checked] {
        let (mut buf, len, n) = encode(&recs);
        let len = len - 2;
        buf.truncate(len);
        buf.resize(len + PAD, 0);
        let mut d = Decoder::default();
        d.set_scan(scan);
        d.start(&buf, len, n).unwrap();
        let err = d.decode(&buf, len, &mut Vec::new(), 100).unwrap_err();
        assert!(err.what.contains("past the end"), "{err:?}");
    }
}

#[test]
fn unknown_escape_and_opcode_are_named() {
    let mut buf = vec![1, 0x60];
    buf.resize(2 + PAD, 0);
    let mut d = Decoder::default();
    d.start(&buf, 2, 1).unwrap();
    let err = d.decode(&buf, 2, &mut Vec::new(), 1).unwrap_err();
    assert!(err.what.contains("unknown escape tag 0x60"), "{err:?}");
    let mut buf = vec![1, ESC_EVENT, 60];
    buf.resize(3 + PAD, 0);
    d.start(&buf, 3, 1).unwrap();
    let err = d.decode(&buf, 3, &mut Vec::new(), 1).unwrap_err();
    assert!(err.what.contains("unknown event opcode 60"), "{err:?}");
}

#[test]
fn leftover_bytes_are_an_error() {
    let recs = vec![Record::Access(Access::load(0x1000)); 30];
    let (mut buf, len, n) = encode(&recs);
    buf.insert(len, 7);
    let mut d = Decoder::default();
    d.start(&buf, len + 1, n).unwrap();
    let err = d.decode(&buf, len + 1, &mut Vec::new(), 100).unwrap_err();
    assert!(err.what.contains("left over"), "{err:?}");
}

/// A long stream shaped like a Lackey capture (runs of sequential fetches with branches,
/// loads and stores with mixed strides and jumps, long fetches), with a thread change or an
/// event now and then: the group path handles almost all of it.
fn lackey_like(n: usize, seed: u64) -> Vec<Record> {
    let mut x = seed;
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    let mut v = Vec::with_capacity(n);
    let (mut pc, mut sp, mut heap) = (0x40_1000u64, 0x001f_ff00_0000_u64, 0x5555_0000u64);
    let mut thread = 0;
    while v.len() < n {
        let r = next() % 1000;
        let size = [1u32, 2, 3, 3, 4, 5, 6, 7, 8, 11, 15][(next() % 11) as usize];
        v.push(Record::Access(Access::new(
            ThreadId(thread),
            AccessKind::Instr,
            VirtAddr(pc),
            size,
        )));
        pc += size as u64;
        if r < 100 {
            pc = 0x40_1000 + next() % (1 << 20);
        }
        if r % 3 == 0 {
            let (kind, addr) = match r % 4 {
                0 => (AccessKind::Load, sp - 8 * (next() % 16)),
                1 => (AccessKind::Store, sp - 8 * (next() % 16)),
                2 => {
                    heap += 8;
                    (AccessKind::Load, heap)
                }
                _ => (AccessKind::Store, 0x7f00_0000_0000 + next() % (1 << 30)),
            };
            let size = [1u32, 4, 8, 8, 16, 32, 3][(next() % 7) as usize];
            v.push(Record::Access(Access::new(
                ThreadId(thread),
                kind,
                VirtAddr(addr),
                size,
            )));
        }
        if r == 999 {
            sp -= 4096;
            v.push(Record::Event(Event::PhaseBegin { region: 1 }));
        }
        if r == 998 {
            thread = (thread + 1) % 3;
        }
    }
    v
}

#[test]
fn a_long_capture_like_stream_round_trips_through_every_path() {
    let recs = lackey_like(200_000, 7);
    assert_eq!(round_trip(&recs), recs);
}

#[test]
fn any_truncation_or_corruption_is_an_error_or_records_never_a_panic() {
    let recs = lackey_like(300, 3);
    let (buf, len, n) = encode(&recs);
    for cut in 0..len {
        for scan in [Scan::Auto, Scan::Word, Scan::Checked] {
            let mut b = buf[..cut].to_vec();
            b.resize(cut + PAD, 0xff);
            let mut d = Decoder::default();
            d.set_scan(scan);
            if d.start(&b, cut, n).is_ok() {
                let mut out = Vec::new();
                while d.remaining() > 0 {
                    if d.decode(&b, cut, &mut out, 50).is_err() {
                        break;
                    }
                }
            }
        }
    }
    // Flipped bytes: every path must agree on the records or on failing.
    for pos in 0..len {
        let mut b = buf.clone();
        b[pos] ^= 0x5a;
        let res: Vec<Result<Vec<Record>, String>> = [Scan::Auto, Scan::Word, Scan::Checked]
            .iter()
            .map(|&scan| {
                let mut d = Decoder::default();
                d.set_scan(scan);
                d.start(&b, len, n).map_err(|e| e.what)?;
                let mut out = Vec::new();
                while d.remaining() > 0 {
                    d.decode(&b, len, &mut out, 64).map_err(|e| e.what)?;
                }
                Ok(out)
            })
            .collect();
        assert_eq!(res[0].is_ok(), res[2].is_ok(), "flip at {pos}");
        assert_eq!(res[1].is_ok(), res[2].is_ok(), "flip at {pos}");
        if let (Ok(a), Ok(w), Ok(c)) = (&res[0], &res[1], &res[2]) {
            assert_eq!(a, c);
            assert_eq!(w, c);
        }
    }
}

use proptest::prelude::*;

fn kind(k: u8) -> AccessKind {
    [AccessKind::Instr, AccessKind::Load, AccessKind::Store][k as usize]
}

fn arb_record() -> impl Strategy<Value = Record> {
    prop_oneof![
        // Anything: any thread, address and size (page crossings, huge jumps, varint sizes).
        3 => (0u32..4, 0u8..3, any::<u64>(), prop_oneof![Just(1u32), Just(4), Just(8), 0u32..20, any::<u32>()]).prop_map(|(t, k, a, s)| {
            Record::Access(Access::new(ThreadId(t), kind(k), VirtAddr(a), s))
        }),
        // Nearby addresses and table sizes: the group path.
        8 => (0u8..3, 0u64..1_000_000, 1u32..16).prop_map(|(k, a, s)| {
            let size = if k == 0 { s } else { 1 << (s % 7) };
            Record::Access(Access::new(ThreadId(0), kind(k), VirtAddr(0x5555_0000 + a * 8 - 4), size))
        }),
        // Addresses near page boundaries and near the ends of the address space.
        2 => (0u8..3, 0u64..64, any::<bool>(), prop_oneof![Just(8u32), Just(64), Just(4096)]).prop_map(|(k, a, hi, s)| {
            let base = if hi { u64::MAX - 8191 } else { 0x7000_0000 };
            Record::Access(Access::new(ThreadId(0), kind(k), VirtAddr(base + 4096 - 32 + a), s))
        }),
        1 => (any::<u16>(), any::<u32>(), any::<u32>()).prop_map(|(c, f, t)| Record::Event(Event::ContextSwitch { core: CoreId(c), from: ThreadId(f), to: ThreadId(t) })),
        1 => (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(r, s, l)| Record::Event(Event::Region { region: r, start: VirtAddr(s), len: l })),
        1 => (any::<u32>(), any::<u64>(), any::<u64>(), any::<u8>(), 0u8..64, any::<u32>()).prop_map(|(p, s, l, pr, sh, o)| Record::Event(Event::MapShared { process: p, start: VirtAddr(s), len: l, prot: pr, page_shift: sh, object: o })),
        1 => (any::<u32>(), any::<u32>()).prop_map(|(t, j)| Record::Event(Event::JobEnd { task: t, job: j })),
        1 => (any::<u16>(), any::<u8>()).prop_map(|(c, w)| Record::Event(Event::Flush { core: CoreId(c), what: w })),
        1 => (any::<u32>(), any::<u64>(), any::<u16>(), any::<bool>()).prop_map(|(p, a, c, l)| Record::Event(Event::TlbLock { process: p, page: VirtAddr(a), core: CoreId(c), lock: l })),
        1 => (any::<u32>(), any::<u64>(), any::<u64>(), any::<u8>()).prop_map(|(p, a, l, w)| Record::Event(Event::FlushRange { process: p, start: VirtAddr(a), len: l, what: w })),
    ]
}

proptest! {
    #[test]
    fn any_record_sequence_round_trips(recs in proptest::collection::vec(arb_record(), 0..600)) {
        prop_assert_eq!(round_trip(&recs), recs);
    }
}
