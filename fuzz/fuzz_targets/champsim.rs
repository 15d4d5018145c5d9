//! Any bytes given to the ChampSim reader: records or an offset-naming error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tlblab_trace::champsim::ChampSimSource;
use tlblab_trace::source::RecordSource;

fuzz_target!(|data: &[u8]| {
    let mut s = ChampSimSource::new(data, "fuzz.champsim");
    let mut out = Vec::new();
    loop {
        out.clear();
        match s.fill(&mut out, 5) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
});
