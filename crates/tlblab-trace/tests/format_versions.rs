//! Files of every format version this code has written still read: `tests/data/v1.tlbt` was
//! written by the version 1 writer (before the v2 payload) from `fixture_records()`.

use std::path::Path;
use tlblab_trace::format::TraceReader;
use tlblab_trace::record::{Access, Event, Record};
use tlblab_trace::source::RecordSource;
use tlblab_types::{AccessKind, CoreId, SplitMix64, ThreadId, VirtAddr};

include!("fixture_records.rs.inc");

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn a_version_1_file_reads_back_its_records() {
    let mut r = TraceReader::open(&fixture("v1.tlbt")).unwrap();
    assert_eq!(r.version, 1);
    assert_eq!(r.meta["program"], "v1-fixture");
    let mut out = Vec::new();
    while r.fill(&mut out, 333).unwrap() > 0 {}
    assert_eq!(out, fixture_records());
}

#[test]
fn a_version_1_file_seeks() {
    let want = fixture_records();
    let mut r = TraceReader::open(&fixture("v1.tlbt")).unwrap();
    for n in [0u64, 699, 700, 1500, want.len() as u64 - 1] {
        r.seek_record(n).unwrap();
        let mut out = Vec::new();
        r.fill(&mut out, 3).unwrap();
        assert_eq!(
            out[..],
            want[n as usize..(n as usize + 3).min(want.len())],
            "seek {n}"
        );
    }
}
