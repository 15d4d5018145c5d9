//! Format detection and conversion between the native format, Lackey text and ChampSim binary.
//!
//! One source type per input format (all `RecordSource`), one sink per output format; `convert`
//! streams records from one to the other in bounded memory. Outputs are atomic (a failed
//! conversion leaves nothing behind).

use crate::champsim::{ChampSimOptions, ChampSimSource, ChampSimWriter};
use crate::fileio::{sniff, AtomicOutput, Compression, Input};
use crate::format::writer::Summary;
use crate::format::{TraceReader, TraceWriter, WriterOptions};
use crate::lackey::{LackeySource, LackeyWriter};
use crate::record::Record;
use crate::source::RecordSource;
use serde_json::{json, Value};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Native,
    Lackey,
    ChampSim,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "tlbt" | "native" => Ok(Format::Native),
            "lackey" | "txt" => Ok(Format::Lackey),
            "champsim" => Ok(Format::ChampSim),
            _ => Err(format!(
                "unknown trace format '{s}': expected one of tlbt, lackey, champsim"
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "tlbt",
            Format::Lackey => "lackey",
            Format::ChampSim => "champsim",
        }
    }
}

fn stem_lower(path: &Path) -> String {
    let s = path
        .file_name()
        .map(|f| f.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    s.trim_end_matches(".xz")
        .trim_end_matches(".gz")
        .trim_end_matches(".bz2")
        .trim_end_matches(".zst")
        .to_string()
}

/// Guesses an output format from a file name: `.tlbt` native, `.txt`/`.lackey`/`.log` Lackey,
/// `.champsim`/`.trace` (optionally `.xz`/`.gz`) ChampSim.
pub fn format_from_name(path: &Path) -> Result<Format, String> {
    let s = stem_lower(path);
    if s.ends_with(".tlbt") {
        Ok(Format::Native)
    } else if s.ends_with(".txt") || s.ends_with(".lackey") || s.ends_with(".log") {
        Ok(Format::Lackey)
    } else if s.ends_with(".champsim") || s.ends_with(".trace") || s.ends_with(".champsimtrace") {
        Ok(Format::ChampSim)
    } else {
        Err(format!(
            "{}: cannot tell the trace format from the name (use .tlbt, .txt for Lackey, .champsim[.xz|.gz] for ChampSim, or say it with --to)",
            path.display()
        ))
    }
}

/// Detects an input's format from its first bytes (native magic; Lackey text) and its name.
pub fn detect(path: &Path) -> Result<Format, String> {
    if std::fs::metadata(path)
        .map(|m| !m.is_file())
        .unwrap_or(false)
    {
        return Err(format!(
            "{}: not a regular file: say its format with --from",
            path.display()
        ));
    }
    let (c, head) = sniff(path)?;
    if crate::format::is_native(&head) {
        return Ok(Format::Native);
    }
    if c == Compression::None {
        let looks_lackey = head.starts_with(b"I  ")
            || head.starts_with(b" L ")
            || head.starts_with(b" S ")
            || head.starts_with(b" M ")
            || head.starts_with(b"==");
        if looks_lackey {
            return Ok(Format::Lackey);
        }
    }
    match format_from_name(path) {
        Ok(f) => Ok(f),
        Err(_) if c != Compression::None => Ok(Format::ChampSim),
        Err(_) if head.is_empty() => Err(format!("{}: the file is empty", path.display())),
        Err(_) => Err(format!(
            "{}: byte 0: unknown trace format: not a tlblab trace (no \"TLBTRACE\" magic), not Lackey text, and the name does not say (use --from)",
            path.display()
        )),
    }
}

/// A Lackey or ChampSim source that also checks, at its end, that the decompressor succeeded.
struct Finishing<S> {
    src: S,
    finish: fn(&mut S) -> Result<(), String>,
    finished: bool,
}

impl<S: RecordSource> RecordSource for Finishing<S> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let n = self.src.fill(out, max)?;
        if n == 0 && max > 0 && !self.finished {
            self.finished = true;
            (self.finish)(&mut self.src)?;
        }
        Ok(n)
    }
    fn len_hint(&self) -> Option<u64> {
        self.src.len_hint()
    }
    fn region_names(&self) -> Vec<String> {
        self.src.region_names()
    }
}

/// Opens any supported input as a record source, with the native header (or `{}`).
pub fn open_source(
    path: &Path,
    fmt: Option<Format>,
) -> Result<(Box<dyn RecordSource + Send>, Value, Format), String> {
    open_source_with(path, fmt, ChampSimOptions::default())
}

/// `open_source` with ChampSim import options; options other than the defaults on another
/// format are an error naming the file and the format.
pub fn open_source_with(
    path: &Path,
    fmt: Option<Format>,
    champsim: ChampSimOptions,
) -> Result<(Box<dyn RecordSource + Send>, Value, Format), String> {
    let fmt = match fmt {
        Some(f) => f,
        None => detect(path)?,
    };
    let name = path.display().to_string();
    if fmt != Format::ChampSim && champsim != ChampSimOptions::default() {
        let what = if !champsim.fetches {
            "turning instruction fetches off"
        } else {
            "counting instructions (--warmup-instructions, --simulation-instructions)"
        };
        return Err(format!(
            "{name}: {what} needs a ChampSim trace (this is a {} trace: use --warmup, --roi or --max-references, which count references)",
            fmt.name()
        ));
    }
    Ok(match fmt {
        Format::Native => {
            let r = TraceReader::open(path).map_err(|e| e.message)?;
            let meta = r.meta.clone();
            (Box::new(r), meta, fmt)
        }
        Format::Lackey => {
            let inp = Input::open(path)?;
            let s = LackeySource::new(inp, &name);
            (
                decode_thread(
                    path,
                    Box::new(Finishing {
                        src: s,
                        finish: |s: &mut LackeySource<Input>| s.get_mut().finish(),
                        finished: false,
                    }),
                )?,
                json!({}),
                fmt,
            )
        }
        Format::ChampSim => {
            let inp = Input::open(path)?;
            let s = ChampSimSource::with_options(inp, &name, champsim);
            (
                decode_thread(
                    path,
                    Box::new(Finishing {
                        src: s,
                        // A stream ended at `--simulation-instructions` leaves the decompressor
                        // unread: dropping the input stops it, and its exit is no error.
                        finish: |s: &mut ChampSimSource<Input>| {
                            if s.stopped_early {
                                Ok(())
                            } else {
                                s.get_mut().finish()
                            }
                        },
                        finished: false,
                    }),
                )?,
                json!({}),
                fmt,
            )
        }
    })
}

/// A compressed input is read on a thread of its own (`Threaded`): the decompressor and the
/// decoding overlap with whatever consumes the records (the engine, a converter).
fn decode_thread(
    path: &Path,
    source: Box<dyn RecordSource + Send>,
) -> Result<Box<dyn RecordSource + Send>, String> {
    Ok(if sniff(path)?.0 == Compression::None {
        source
    } else {
        Box::new(crate::threaded::Threaded::new(source))
    })
}

/// Where converted records go.
pub enum Sink {
    Native(TraceWriter),
    Lackey(LackeyWriter<AtomicOutput>, String),
    ChampSim(ChampSimWriter<AtomicOutput>, String),
}

impl Sink {
    pub fn create(
        path: &Path,
        fmt: Format,
        meta: &Value,
        opts: WriterOptions,
    ) -> Result<Sink, String> {
        let name = path.display().to_string();
        Ok(match fmt {
            Format::Native => {
                Sink::Native(TraceWriter::create(path, meta, opts).map_err(|e| e.message)?)
            }
            Format::Lackey => Sink::Lackey(LackeyWriter::new(AtomicOutput::create(path)?), name),
            Format::ChampSim => {
                Sink::ChampSim(ChampSimWriter::new(AtomicOutput::create(path)?), name)
            }
        })
    }

    #[inline]
    pub fn write(&mut self, r: &Record) -> Result<(), String> {
        match self {
            Sink::Native(w) => w.write(r).map_err(|e| e.message),
            Sink::Lackey(w, n) => w.write(r).map_err(|e| format!("{n}: {e}")),
            Sink::ChampSim(w, n) => w.write(r).map_err(|e| format!("{n}: {e}")),
        }
    }

    /// Completes the output; returns (events skipped because the format cannot hold them).
    pub fn finish(self) -> Result<u64, String> {
        match self {
            Sink::Native(w) => {
                w.finish().map_err(|e| e.message)?;
                Ok(0)
            }
            Sink::Lackey(w, n) => {
                let skipped = w.skipped_events;
                w.finish().map_err(|e| format!("{n}: {e}"))?.commit()?;
                Ok(skipped)
            }
            Sink::ChampSim(w, n) => {
                let skipped = w.skipped_events;
                w.finish().map_err(|e| format!("{n}: {e}"))?.commit()?;
                Ok(skipped)
            }
        }
    }
}

/// What a conversion did.
#[derive(Debug, Default)]
pub struct ConvertReport {
    pub records_in: u64,
    pub records_out: u64,
    pub skipped_events: u64,
    pub summary: Summary,
}

/// Copies records `skip..skip+limit` of `src` to `sink`.
pub fn pump(
    src: &mut dyn RecordSource,
    sink: &mut Sink,
    skip: u64,
    limit: Option<u64>,
    summary: &mut Summary,
) -> Result<(u64, u64), String> {
    let mut buf = Vec::with_capacity(8192);
    let (mut seen, mut written) = (0u64, 0u64);
    loop {
        buf.clear();
        let n = src.fill(&mut buf, 8192)?;
        if n == 0 {
            break;
        }
        for r in &buf {
            seen += 1;
            if seen <= skip {
                continue;
            }
            if let Some(l) = limit {
                if written >= l {
                    return Ok((seen, written));
                }
            }
            sink.write(r)?;
            summary.add(r);
            written += 1;
        }
    }
    Ok((seen, written))
}

/// Converts `input` to `output` (formats are detected when not given), the input source
/// passed through `wrap` first (the Python binding wraps it to stop on Ctrl-C; an error from
/// the wrapped source leaves no output, as any other; `|s| s` wraps nothing).
pub fn convert_with(
    input: &Path,
    from: Option<Format>,
    output: &Path,
    to: Option<Format>,
    skip: u64,
    limit: Option<u64>,
    wrap: impl FnOnce(Box<dyn RecordSource + Send>) -> Box<dyn RecordSource + Send>,
) -> Result<ConvertReport, String> {
    let to = match to {
        Some(t) => t,
        None => format_from_name(output)?,
    };
    let (src, in_meta, from) = open_source(input, from)?;
    let mut src = wrap(src);
    let mut meta = if from == Format::Native {
        in_meta
    } else {
        json!({})
    };
    let obj = meta.as_object_mut().unwrap();
    let mut regions = src.region_names();
    if regions.is_empty() {
        if let Some(Value::Array(a)) = obj.get("regions") {
            regions = a
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
        }
    }
    obj.insert("regions".into(), json!(regions));
    obj.insert(
        "converted_from".into(),
        json!({"format": from.name(), "file": input.display().to_string(), "skip": skip, "limit": limit}),
    );
    let mut sink = Sink::create(output, to, &meta, WriterOptions::default())?;
    let mut summary = Summary::default();
    let (seen, written) = pump(src.as_mut(), &mut sink, skip, limit, &mut summary)?;
    let skipped = sink.finish()?;
    Ok(ConvertReport {
        records_in: seen,
        records_out: written,
        skipped_events: skipped,
        summary,
    })
}
