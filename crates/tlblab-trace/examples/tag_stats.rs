//! Statistics of a trace as the v1 predictors see it (development aid).
use tlblab_trace::format::TraceReader;
use tlblab_trace::source::RecordSource;
use tlblab_trace::Record;
use tlblab_types::AccessKind;
fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).unwrap());
    let mut r = TraceReader::open(&path).unwrap();
    let mut buf = Vec::new();
    let (mut li, mut si, mut ld, mut sd) = (0u64, 0u64, 0u64, 0u64);
    let mut hist = std::collections::BTreeMap::new();
    let mut sizes = std::collections::BTreeMap::new();
    let mut n = 0u64;
    let mut runs = std::collections::BTreeMap::new();
    let mut prev_kind = 9u8;
    let mut run = 0u64;
    loop {
        buf.clear();
        if r.fill(&mut buf, 4096).unwrap() == 0 {
            break;
        }
        for rec in &buf {
            n += 1;
            if let Record::Access(a) = rec {
                let k = a.kind as u8;
                let s = (a.kind != AccessKind::Instr) as usize;
                let (last, step) = if s == 0 { (li, si) } else { (ld, sd) };
                let pred = last.wrapping_add(step);
                let d = a.vaddr.0.wrapping_sub(pred) as i64;
                let nb = if d == 0 {
                    0
                } else {
                    (64 - ((d << 1) ^ (d >> 63)).leading_zeros() as usize).div_ceil(8)
                };
                *hist.entry((k, nb)).or_insert(0u64) += 1;
                *sizes.entry((k, a.size)).or_insert(0u64) += 1;
                if s == 0 {
                    si = a.size as u64;
                    li = a.vaddr.0;
                } else {
                    sd = a.vaddr.0.wrapping_sub(ld);
                    ld = a.vaddr.0;
                }
                let c = if k == 0 && nb == 0 { 0 } else { 1 };
                if c == prev_kind {
                    run += 1
                } else {
                    *runs.entry((prev_kind, run.min(20))).or_insert(0u64) += 1;
                    run = 1;
                    prev_kind = c;
                }
            }
        }
    }
    println!("{n} records");
    for ((k, nb), c) in &hist {
        println!(
            "kind {k} delta-bytes-from-pred {nb}: {:.2}%",
            *c as f64 * 100.0 / n as f64
        );
    }
    for ((k, s), c) in &sizes {
        if *c * 1000 > n {
            println!("kind {k} size {s}: {:.2}%", *c as f64 * 100.0 / n as f64);
        }
    }
    let big: u64 = sizes
        .iter()
        .filter(|((k, s), _)| *k == 0 && *s > 7)
        .map(|(_, c)| *c)
        .sum();
    println!("fetch size > 7: {:.3}%", big as f64 * 100.0 / n as f64);
    for ((c, l), k) in &runs {
        println!("run class {c} len {l}: {k}");
    }
}
