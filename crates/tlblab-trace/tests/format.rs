//! Behaviour of the native trace format as files: round trips, seeking, and the messages for bad
//! input (wrong magic, unknown version, truncation, corrupt blocks), and atomic writing.

use serde_json::json;
use std::io::Cursor;
use std::path::{Path, PathBuf};
use tlblab_trace::format::{writer::write_source, Error, TraceReader, TraceWriter, WriterOptions};
use tlblab_trace::record::{Access, Event, Record};
use tlblab_trace::source::{RecordSource, VecSource};
use tlblab_types::{AccessKind, CoreId, SplitMix64, ThreadId, VirtAddr};

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tlblab-format-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A trace file's path in a fresh directory named `tag`.
fn trace_path(tag: &str) -> PathBuf {
    tmpdir(tag).join("t.tlbt")
}

fn sample(n: usize, seed: u64) -> Vec<Record> {
    let mut rng = SplitMix64::new(seed);
    let mut v = Vec::with_capacity(n);
    let mut pc = 0x40_1000u64;
    for i in 0..n {
        match rng.below(10) {
            0..=4 => {
                v.push(Record::Access(Access::new(
                    ThreadId(0),
                    AccessKind::Instr,
                    VirtAddr(pc),
                    4,
                )));
                pc += 4;
                if rng.below(8) == 0 {
                    pc = 0x40_1000 + rng.below(1 << 16);
                }
            }
            5..=7 => v.push(Record::Access(Access::new(
                ThreadId((i / 5000) as u32 % 3),
                AccessKind::Load,
                VirtAddr(0x7ff0_0000_0000 + rng.below(1 << 24)),
                8,
            ))),
            8 => v.push(Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Store,
                VirtAddr(0x5555_0000 + 8 * (i as u64)),
                8,
            ))),
            _ => v.push(Record::Event(Event::ContextSwitch {
                core: CoreId(0),
                from: ThreadId(0),
                to: ThreadId(1),
            })),
        }
    }
    v
}

fn write(path: &Path, recs: &[Record], block: u32) {
    let opts = WriterOptions {
        block_records: block,
        ..Default::default()
    };
    let mut w =
        TraceWriter::create(path, &json!({"program": "test", "regions": ["heap"]}), opts).unwrap();
    w.write_all(recs).unwrap();
    w.finish().unwrap();
}

/// The bytes of a file of `recs` written in blocks of `block` records, in a fresh directory
/// named `tag`.
fn written_bytes(tag: &str, recs: &[Record], block: u32) -> Vec<u8> {
    let p = trace_path(tag);
    write(&p, recs, block);
    std::fs::read(&p).unwrap()
}

/// Where block `i` of the file `b` starts, by its index.
fn block_offset(b: &[u8], i: usize) -> usize {
    let mut r = TraceReader::new(Cursor::new(b.to_vec()), "t").unwrap();
    r.load_index().unwrap();
    r.blocks.as_ref().unwrap()[i].offset as usize
}

/// Reads `r` to its error (ending without one fails the test): what it delivered, the error.
fn read_to_error(r: &mut TraceReader<Cursor<Vec<u8>>>) -> (Vec<Record>, Error) {
    let mut out = Vec::new();
    loop {
        match r.read(&mut out, 100) {
            Ok(0) => panic!("the damage must be reported, not end the file silently"),
            Ok(_) => {}
            Err(e) => return (out, e),
        }
    }
}

fn read_all(path: &Path) -> Result<Vec<Record>, String> {
    let mut r = TraceReader::open(path).map_err(|e| e.message)?;
    let mut out = Vec::new();
    while r.fill(&mut out, 1000)? > 0 {}
    Ok(out)
}

#[test]
fn given_many_blocks_when_read_back_then_records_are_identical() {
    let p = trace_path("rt");
    let recs = sample(50_000, 1);
    write(&p, &recs, 4096);
    assert_eq!(read_all(&p).unwrap(), recs);
    let r = TraceReader::open(&p).unwrap();
    assert_eq!(r.total_records(), Some(50_000));
    assert_eq!(r.regions(), vec!["heap".to_string()]);
    assert_eq!(r.meta["program"], "test");
}

#[test]
fn given_an_empty_trace_when_read_then_zero_records() {
    let p = trace_path("empty");
    write(&p, &[], 10);
    assert_eq!(read_all(&p).unwrap(), vec![]);
}

#[test]
fn seek_lands_on_the_requested_record() {
    let p = trace_path("seek");
    let recs = sample(20_000, 2);
    write(&p, &recs, 1000);
    let mut r = TraceReader::open(&p).unwrap();
    for n in [0u64, 1, 999, 1000, 1001, 12_345, 19_999, 20_000] {
        r.seek_record(n).unwrap();
        let mut out = Vec::new();
        r.fill(&mut out, 5).unwrap();
        let want: Vec<Record> = recs.iter().skip(n as usize).take(5).copied().collect();
        assert_eq!(out, want, "seek to {n}");
    }
    assert!(r
        .seek_record(20_001)
        .unwrap_err()
        .message
        .contains("past the end"));
}

#[test]
fn skipping_records_of_a_trace_file_seeks_and_the_rest_is_what_reading_gives() {
    // A restored checkpoint goes on from its record by `skip_records`: a complete file
    // seeks by its index, from wherever the reader is; the count stops at the end.
    let p = trace_path("skip");
    let recs = sample(20_000, 3);
    write(&p, &recs, 1000);
    for (first, n) in [
        (0u64, 0u64),
        (0, 1),
        (0, 999),
        (0, 1000),
        (7, 12_345),
        (1500, 18_500),
        (0, 25_000),
    ] {
        let mut r = TraceReader::open(&p).unwrap();
        let mut out = Vec::new();
        r.fill(&mut out, first as usize).unwrap();
        let k = r.skip_records(n).unwrap();
        assert_eq!(k, n.min(20_000 - first), "skip {n} after {first}");
        out.clear();
        while r.fill(&mut out, 777).unwrap() > 0 {}
        assert!(
            out == recs[(first + k) as usize..],
            "skip {n} after {first}"
        );
    }
}

#[test]
fn wrong_magic_is_reported_at_byte_0() {
    let e = TraceReader::new(Cursor::new(b"I  04001000,4\n".to_vec()), "x.tlbt")
        .err()
        .unwrap();
    assert!(
        e.message.starts_with("x.tlbt: byte 0: not a tlblab trace"),
        "{}",
        e.message
    );
}

#[test]
fn unknown_version_is_named() {
    let mut b = written_bytes("ver", &sample(10, 3), 10);
    b[8] = 9;
    let e = TraceReader::new(Cursor::new(b), "v.tlbt").err().unwrap();
    assert!(
        e.message
            .contains("byte 8: unsupported trace format version 9"),
        "{}",
        e.message
    );
}

#[test]
fn truncation_anywhere_is_an_error_never_a_panic_or_silent_success() {
    let recs = sample(3000, 4);
    let b = written_bytes("trunc", &recs, 500);
    // Every cut point must fail with a message naming the file; none may panic.
    for cut in (0..b.len()).step_by(7).chain([b.len() - 1, b.len() - 24]) {
        let res = TraceReader::new(Cursor::new(b[..cut].to_vec()), "t.tlbt").and_then(|mut r| {
            let mut out = Vec::new();
            while r.read(&mut out, 777)? > 0 {}
            Ok(out)
        });
        let e = res.expect_err(&format!("cut at {cut} must fail"));
        assert!(e.message.starts_with("t.tlbt"), "{}", e.message);
    }
}

#[test]
fn truncated_after_a_block_says_the_writer_did_not_finish() {
    let b = written_bytes("trunc2", &sample(1000, 5), 500);
    let second = block_offset(&b, 1);
    let mut r = TraceReader::new(Cursor::new(b[..second].to_vec()), "t.tlbt").unwrap();
    assert!(!r.is_complete());
    let (out, e) = read_to_error(&mut r);
    assert_eq!(
        out.len(),
        500,
        "the complete first block is still delivered"
    );
    assert!(
        e.message.contains(&format!("byte {second}: truncated")),
        "{}",
        e.message
    );
    assert!(e.message.contains("did not finish"), "{}", e.message);
}

#[test]
fn a_flipped_bit_in_a_block_is_reported_as_corrupt_with_its_offset() {
    let b = written_bytes("corrupt", &sample(2000, 6), 1000);
    let blk = block_offset(&b, 1);
    let mut bad = b.clone();
    bad[blk + 40] ^= 0x10;
    let mut r = TraceReader::new(Cursor::new(bad), "c.tlbt").unwrap();
    let (_, e) = read_to_error(&mut r);
    assert!(
        e.message.contains(&format!(
            "byte {}: corrupt block 1: payload checksum mismatch",
            blk + 36
        )),
        "{}",
        e.message
    );
}

#[test]
fn a_failed_write_leaves_no_file_behind() {
    let d = tmpdir("atomic");
    let p = d.join("never.tlbt");
    {
        let mut w = TraceWriter::create(
            &p,
            &json!({}),
            WriterOptions {
                block_records: 10,
                ..Default::default()
            },
        )
        .unwrap();
        w.write_all(&sample(100, 7)).unwrap();
        // dropped without finish: as on an error
    }
    assert!(!p.exists());
    let leftovers: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // A source that fails half-way produces no file either.
    struct Failing(VecSource, u32);
    impl RecordSource for Failing {
        fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
            self.1 += 1;
            if self.1 > 3 {
                return Err("input.txt: line 7: malformed".into());
            }
            self.0.fill(out, max)
        }
    }
    let mut src = Failing(VecSource::new(sample(100_000, 8)), 0);
    let e = write_source(&mut src, &p, &json!({}), WriterOptions::default()).unwrap_err();
    assert!(e.message.contains("line 7"));
    assert!(!p.exists());
}

#[test]
fn typical_traces_take_at_most_4_bytes_per_reference() {
    let p = trace_path("size");
    let recs = sample(200_000, 9);
    write(&p, &recs, 1 << 16);
    let bytes = std::fs::metadata(&p).unwrap().len() as f64;
    let per = bytes / recs.len() as f64;
    assert!(per <= 4.0, "{per} bytes/record");
}
