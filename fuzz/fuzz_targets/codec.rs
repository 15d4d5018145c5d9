//! Any decompressed block payload (checksums bypassed): the record decoder must return records
//! or an error, never read out of bounds or panic. The first 2 bytes choose the record count.
//! Every payload that decodes completely must re-encode to records that decode identically.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlblab_trace::format::codec::{Decoder, Encoder, PAD};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let records = u16::from_le_bytes([data[0], data[1]]) as u32;
    let payload = &data[2..];
    let len = payload.len();
    let mut buf = payload.to_vec();
    buf.resize(len + PAD, 0xAA);
    let mut d = Decoder::default();
    let mut out = Vec::new();
    let mut ok = d.start(&buf, len, records).is_ok();
    while ok && d.remaining() > 0 {
        match d.decode(&buf, len, &mut out, 3) {
            Ok(_) => {}
            Err(_) => {
                ok = false;
                break;
            }
        }
    }
    if ok {
        let mut e = Encoder::new();
        out.iter().for_each(|r| e.push(r));
        let mut b2 = e.payload().to_vec();
        let l2 = b2.len();
        b2.resize(l2 + PAD, 0);
        let mut d2 = Decoder::default();
        d2.start(&b2, l2, e.records).expect("re-encoded payload starts");
        let mut again = Vec::new();
        while d2.remaining() > 0 {
            d2.decode(&b2, l2, &mut again, 1000).expect("re-encoded records decode");
        }
        assert_eq!(again, out);
    }
});
