//! Any byte string given to the native trace reader: an error or records, never a panic, a hang
//! or unbounded memory. Also exercises the index, seeking and the footer.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use tlblab_trace::format::TraceReader;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut r) = TraceReader::new(Cursor::new(data.to_vec()), "fuzz.tlbt") {
        let mut out = Vec::new();
        let mut total = 0usize;
        loop {
            out.clear();
            match r.read(&mut out, 1000) {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
            if total > 10_000_000 {
                break;
            }
        }
        if r.load_index().is_ok() {
            let _ = r.seek_record(total as u64 / 2);
            out.clear();
            let _ = r.read(&mut out, 10);
        }
    }
});
