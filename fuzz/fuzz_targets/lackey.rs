//! Any text given to the Lackey parser: records or a line-numbered error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlblab_trace::lackey::LackeySource;
use tlblab_trace::source::RecordSource;

fuzz_target!(|data: &[u8]| {
    let mut s = LackeySource::new(data, "fuzz.txt");
    let mut out = Vec::new();
    loop {
        out.clear();
        match s.fill(&mut out, 7) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
});
