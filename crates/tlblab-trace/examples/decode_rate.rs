//! Times sequential decoding of a native trace: `cargo run --release --example decode_rate -- FILE [REPEATS]`;
//! `FILE REPEATS breakdown` times record decoding and zstd apart; `IN 0 rewrite OUT` rewrites IN
//! in the current format version.
//! (The `tlblab bench trace_decode` benchmark runs the same loop through the Python binding.)
use tlblab_trace::clock::thread_cpu_seconds as cpu_now;
use tlblab_trace::format::TraceReader;
use tlblab_trace::source::RecordSource;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let reps: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(5);
    eprintln!(
        "size_of::<Record>() = {}",
        std::mem::size_of::<tlblab_trace::Record>()
    );
    if args.get(3).map(String::as_str) == Some("baseline") {
        baseline();
        return;
    }
    if args.get(3).map(String::as_str) == Some("rewrite") {
        // Rewrites FILE in the current format version: `decode_rate IN 0 rewrite OUT`.
        let mut r = TraceReader::open(&path).unwrap();
        let meta = r.meta.clone();
        let out = std::path::PathBuf::from(&args[4]);
        let s = tlblab_trace::format::writer::write_source(&mut r, &out, &meta, Default::default())
            .unwrap();
        println!("{} records -> {}", s.records, out.display());
        return;
    }
    if args.get(3).map(String::as_str) == Some("compare") {
        // `decode_rate A 0 compare B`: both files hold the same records.
        let mut a = TraceReader::open(&path).unwrap();
        let mut b = TraceReader::open(std::path::Path::new(&args[4])).unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        let mut n = 0u64;
        loop {
            x.clear();
            y.clear();
            let k = a.fill(&mut x, 4096).unwrap();
            assert_eq!(k, b.fill(&mut y, 4096).unwrap());
            assert!(x == y, "records differ in the batch starting at record {n}");
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        println!("{n} identical records");
        return;
    }
    if args.get(3).map(String::as_str) == Some("breakdown") {
        breakdown(&path);
        return;
    }
    for _ in 0..reps {
        let mut r = TraceReader::open(&path).unwrap();
        let mut buf = Vec::with_capacity(4096);
        let t0 = std::time::Instant::now();
        let c0 = cpu_now();
        let mut n = 0u64;
        let mut x = 0u64;
        loop {
            buf.clear();
            let k = r.fill(&mut buf, 4096).unwrap();
            if k == 0 {
                break;
            }
            n += k as u64;
            if let Some(tlblab_trace::Record::Access(a)) = buf.last() {
                x ^= a.vaddr.0;
            }
        }
        let s = t0.elapsed().as_secs_f64();
        let c = cpu_now() - c0;
        println!("{n} records in {s:.3} s wall = {:.1} M records/s; {c:.3} s CPU = {:.1} M records/s ({x:x})", n as f64 / s / 1e6, n as f64 / c / 1e6);
    }
}

/// Breakdown: pure record decoding vs zstd decompression, on the file's first 4 M records.
#[allow(dead_code)]
pub fn breakdown(path: &std::path::Path) {
    use tlblab_trace::format::codec::{Decoder, Encoder, PAD};
    let mut r = TraceReader::open(path).unwrap();
    let mut recs = Vec::new();
    while recs.len() < 4_000_000 && r.fill(&mut recs, 4096).unwrap() > 0 {}
    let mut e = Encoder::new();
    recs.iter().for_each(|x| e.push(x));
    let mut buf = e.payload().to_vec();
    let len = buf.len();
    let comp = zstd::bulk::compress(&buf, 3).unwrap();
    buf.resize(len + PAD, 0);
    for _ in 0..3 {
        let mut out = Vec::with_capacity(4096);
        let mut d = Decoder::default();
        d.start(&buf, len, e.records).unwrap();
        let t0 = cpu_now();
        while d.remaining() > 0 {
            out.clear();
            d.decode(&buf, len, &mut out, 4096).unwrap();
        }
        let s1 = cpu_now() - t0;
        let t0 = cpu_now();
        let raw = zstd::bulk::decompress(&comp, len + 16).unwrap();
        let s2 = cpu_now() - t0;
        println!(
            "decode only: {:.1} M rec/s; zstd only: {:.1} M rec/s ({:.2} raw B/rec, {:.2} comp B/rec) {}",
            recs.len() as f64 / s1 / 1e6,
            recs.len() as f64 / s2 / 1e6,
            len as f64 / recs.len() as f64,
            comp.len() as f64 / recs.len() as f64,
            raw.len()
        );
    }
}

/// Baseline: just materialize 20 M access records into a reused 4096-record buffer.
#[allow(dead_code)]
pub fn baseline() {
    use tlblab_trace::record::{Access, Record};
    use tlblab_types::{AccessKind, ThreadId, VirtAddr};
    let mut out: Vec<Record> = Vec::with_capacity(4096);
    let c0 = cpu_now();
    let mut a = 0u64;
    for _ in 0..(20_000_000 / 4096) {
        out.clear();
        for _ in 0..4096 {
            a = a.wrapping_add(4096);
            out.push(Record::Access(Access {
                thread: ThreadId(0),
                kind: AccessKind::Load,
                vaddr: VirtAddr(a),
                size: 8,
            }));
        }
        std::hint::black_box(&out);
    }
    let c = cpu_now() - c0;
    println!("baseline: {:.1} M records/s CPU", 20_000_000.0 / c / 1e6);
}
