//! Any decompressed block payload (checksums bypassed): the record decoders must return records
//! or an error, never read out of bounds or panic. The first 2 bytes choose the record count.
//! Version 2 (`codec`): the group path (SIMD scan), the word scan and the checked path must agree
//! on the records, or all fail; every payload that decodes completely must re-encode to records
//! that decode identically. Version 1 (`codec_v1`) gets the same bytes: records or an error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlblab_trace::format::codec::{Decoder, Encoder, Scan, PAD};
use tlblab_trace::format::codec_v1;
use tlblab_trace::Record;

fn decode_v2(buf: &[u8], len: usize, records: u32, scan: Scan) -> Option<Vec<Record>> {
    let mut d = Decoder::default();
    d.set_scan(scan);
    d.start(buf, len, records).ok()?;
    let mut out = Vec::new();
    // Uneven pieces, so resumption in the middle of groups is exercised too.
    let mut step = 3;
    while d.remaining() > 0 {
        d.decode(buf, len, &mut out, step).ok()?;
        step = step * 7 % 61 + 1;
    }
    Some(out)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let records = u16::from_le_bytes([data[0], data[1]]) as u32;
    let payload = &data[2..];
    let len = payload.len();
    let mut buf = payload.to_vec();
    buf.resize(len + PAD, 0xAA);

    let auto = decode_v2(&buf, len, records, Scan::Auto);
    let word = decode_v2(&buf, len, records, Scan::Word);
    let checked = decode_v2(&buf, len, records, Scan::Checked);
    assert_eq!(auto, checked, "group path and checked path disagree");
    assert_eq!(word, checked, "word scan and checked path disagree");
    if let Some(out) = auto {
        let mut e = Encoder::new();
        out.iter().for_each(|r| e.push(r));
        let mut b2 = e.payload().to_vec();
        let l2 = b2.len();
        b2.resize(l2 + PAD, 0);
        let again = decode_v2(&b2, l2, e.records, Scan::Auto).expect("re-encoded records decode");
        assert_eq!(again, out);
    }

    let mut d1 = codec_v1::Decoder::default();
    if d1.start(&buf, len, records).is_ok() {
        let mut out = Vec::new();
        while d1.remaining() > 0 {
            if d1.decode(&buf, len, &mut out, 7).is_err() {
                break;
            }
        }
    }
});
