//! `tlblab trace info`: what is in a trace — counts by kind, events by type, threads and
//! processes, and the footprint in 4 KiB pages, per named region (from `Region` events) and per
//! mapping of the `/proc/PID/maps` snapshot when the capture recorded one.

use crate::convert::{open_source, Format};
use crate::format::writer::{event_name, Summary};
use crate::format::TraceReader;
use crate::record::{Event, Record};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// One address range with a name.
#[derive(Clone, Debug)]
pub struct Range {
    pub name: String,
    pub start: u64,
    pub end: u64,
}

/// Parses `/proc/PID/maps` text into ranges (`[anon]` for unnamed mappings).
pub fn parse_maps(text: &str) -> Vec<Range> {
    let mut v = Vec::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let Some(span) = it.next() else { continue };
        let Some((a, b)) = span.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        let rest: Vec<&str> = it.collect();
        let name = if rest.len() >= 5 {
            rest[4..].join(" ")
        } else {
            "[anon]".to_string()
        };
        v.push(Range { name, start, end });
    }
    v
}

/// Scans a trace of any supported format and describes it as JSON.
pub fn info(path: &Path, fmt: Option<Format>) -> Result<Value, String> {
    let (mut src, meta, fmt) = open_source(path, fmt)?;
    let mut out = Map::new();
    out.insert("file".into(), json!(path.display().to_string()));
    out.insert("format".into(), json!(fmt.name()));
    let file_bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    out.insert("bytes".into(), json!(file_bytes));
    let region_names = src.region_names();
    let mut footer = Value::Null;
    if fmt == Format::Native {
        let mut r = TraceReader::open(path).map_err(|e| e.message)?;
        out.insert("version".into(), json!(r.version));
        out.insert("complete".into(), json!(r.is_complete()));
        if r.is_complete() {
            r.load_index().map_err(|e| e.message)?;
            out.insert("blocks".into(), json!(r.blocks.as_ref().map(|b| b.len())));
            footer = r.footer.clone().unwrap_or(Value::Null);
        }
        let mut m = meta.clone();
        if let Some(o) = m.as_object_mut() {
            o.remove("maps"); // shown as per-mapping footprint below
        }
        out.insert("meta".into(), m);
    }

    let mut summary = Summary::default();
    let mut pages: HashMap<u64, u64> = HashMap::new();
    let mut regions: Vec<Range> = Vec::new();
    let mut processes = BTreeSet::new();
    let mut tasks = BTreeSet::new();
    let mut cores = BTreeSet::new();
    let (mut min_a, mut max_a) = (u64::MAX, 0u64);
    crate::source::for_each_record(&mut *src, 8192, |r| {
        summary.add(r);
        match r {
            Record::Access(a) => {
                let first = a.vaddr.0 >> 12;
                let last = a.vaddr.0.saturating_add(a.size.max(1) as u64 - 1) >> 12;
                for p in first..=last.min(first + 16) {
                    *pages.entry(p).or_insert(0) += 1;
                }
                min_a = min_a.min(a.vaddr.0);
                max_a = max_a.max(a.vaddr.0);
            }
            Record::Event(e) => match *e {
                Event::Region { region, start, len } => {
                    let name = region_names
                        .get(region as usize)
                        .cloned()
                        .unwrap_or_else(|| format!("region{region}"));
                    regions.push(Range {
                        name,
                        start: start.0,
                        end: start.0.saturating_add(len),
                    });
                }
                Event::ThreadStart { process, .. } => {
                    processes.insert(process);
                }
                Event::TaskRelease { task, .. } => {
                    tasks.insert(task);
                }
                Event::ContextSwitch { core, .. } | Event::Migrate { core, .. } => {
                    cores.insert(core.0);
                }
                _ => {}
            },
        }
    })?;
    let s = summary.to_json();
    out.insert("records".into(), s["records"].clone());
    out.insert("accesses".into(), json!({"total": s["accesses"], "instr": summary.instr, "load": summary.loads, "store": summary.stores}));
    out.insert(
        "events".into(),
        json!({"total": summary.events, "by_type": s["event_counts"]}),
    );
    out.insert("threads".into(), s["threads"].clone());
    out.insert("processes".into(), json!(processes));
    out.insert("tasks".into(), json!(tasks));
    out.insert("cores_named".into(), json!(cores));
    out.insert(
        "page_crossing_accesses".into(),
        json!(summary.page_crossing_4k),
    );
    if summary.instr + summary.loads + summary.stores > 0 {
        out.insert(
            "address_range".into(),
            json!([format!("{min_a:#x}"), format!("{max_a:#x}")]),
        );
        out.insert(
            "bytes_per_access".into(),
            json!(file_bytes as f64 / (summary.instr + summary.loads + summary.stores) as f64),
        );
    }
    out.insert("footprint_pages_4k".into(), json!(pages.len()));
    let footprint = |ranges: &[Range]| -> Vec<Value> {
        let mut per: BTreeMap<(u64, u64, String), (u64, u64)> = BTreeMap::new();
        for r in ranges {
            per.entry((r.start, r.end, r.name.clone()))
                .or_insert((0, 0));
        }
        let keys: Vec<(u64, u64, String)> = per.keys().cloned().collect();
        for (&p, &c) in &pages {
            let a = p << 12;
            for k in &keys {
                if a + 4095 >= k.0 && a < k.1 {
                    let e = per.get_mut(k).unwrap();
                    e.0 += 1;
                    e.1 += c;
                }
            }
        }
        per.into_iter()
            .map(|((s, e, n), (pg, acc))| json!({"name": n, "start": format!("{s:#x}"), "end": format!("{e:#x}"), "pages_touched": pg, "page_references": acc}))
            .collect()
    };
    out.insert("regions".into(), json!(footprint(&regions)));
    let maps_text = meta
        .get("maps")
        .and_then(|v| v.as_str())
        .or_else(|| footer.get("maps").and_then(|v| v.as_str()));
    if let Some(text) = maps_text {
        let maps = parse_maps(text);
        let fp: Vec<Value> = footprint(&maps)
            .into_iter()
            .filter(|v| v["pages_touched"].as_u64() != Some(0))
            .collect();
        out.insert("mappings".into(), json!(fp));
    }
    if !footer.is_null() {
        let mut f = footer.clone();
        if let Some(o) = f.as_object_mut() {
            o.remove("maps");
            o.remove("summary");
        }
        out.insert("footer".into(), f);
    }
    Ok(Value::Object(out))
}

/// One record as a line of text (for `tlblab trace head`).
pub fn record_line(r: &Record, regions: &[String]) -> String {
    match r {
        Record::Access(a) => {
            let k = match a.kind {
                tlblab_types::AccessKind::Instr => "I",
                tlblab_types::AccessKind::Load => "L",
                tlblab_types::AccessKind::Store => "S",
            };
            format!("t{} {k} {:#014x} {}", a.thread.0, a.vaddr.0, a.size)
        }
        Record::Event(e) => {
            let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
            if let (
                Event::Region { region, .. }
                | Event::PhaseBegin { region }
                | Event::PhaseEnd { region },
                Some(o),
            ) = (e, v.as_object_mut())
            {
                if let Some(n) = regions.get(*region as usize) {
                    o.insert("name".into(), json!(n));
                }
            }
            let fields: Vec<String> = v
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(k, _)| *k != "event")
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect()
                })
                .unwrap_or_default();
            format!("= {} {}", event_name(e), fields.join(" "))
        }
    }
}
