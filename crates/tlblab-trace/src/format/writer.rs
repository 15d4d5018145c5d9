//! Streaming writer of the native trace format.
//!
//! Records are encoded into a block buffer; every `block_records` records the block is
//! compressed and appended, so memory stays bounded by one block however long the trace. The file
//! is written under a temporary name in the destination directory and renamed into place by
//! `finish`; a writer dropped without `finish` (an error, a panic, Ctrl-C unwinding) removes its
//! temporary file, so a failed capture or conversion never leaves a half-written trace behind.

use super::codec::Encoder;
use super::*;
use crate::record::{Event, Record};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use tlblab_types::AccessKind;

#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// Records per block: the unit of compression, seeking and reader memory.
    pub block_records: u32,
    /// zstd level (1 = fastest; 3 = default; 19 = smallest).
    pub level: i32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            block_records: 1 << 18,
            level: 3,
        }
    }
}

/// Counts kept while writing; stored as the footer JSON's `summary`.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub records: u64,
    pub instr: u64,
    pub loads: u64,
    pub stores: u64,
    pub events: u64,
    pub page_crossing_4k: u64,
    pub threads: BTreeSet<u32>,
    pub event_counts: std::collections::BTreeMap<&'static str, u64>,
}

/// Thread ids beyond this many are counted but not listed.
const MAX_LISTED_THREADS: usize = 4096;

impl Summary {
    #[inline]
    pub fn add(&mut self, r: &Record) {
        self.records += 1;
        match r {
            Record::Access(a) => {
                match a.kind {
                    AccessKind::Instr => self.instr += 1,
                    AccessKind::Load => self.loads += 1,
                    AccessKind::Store => self.stores += 1,
                }
                let end = a.vaddr.0.wrapping_add((a.size.max(1) - 1) as u64);
                if (end >> 12) != (a.vaddr.0 >> 12) {
                    self.page_crossing_4k += 1;
                }
                if self.threads.len() < MAX_LISTED_THREADS || self.threads.contains(&a.thread.0) {
                    self.threads.insert(a.thread.0);
                }
            }
            Record::Event(e) => {
                self.events += 1;
                *self.event_counts.entry(event_name(e)).or_insert(0) += 1;
                if let Event::ThreadStart { thread, .. } = e {
                    if self.threads.len() < MAX_LISTED_THREADS {
                        self.threads.insert(thread.0);
                    }
                }
            }
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "records": self.records,
            "accesses": self.instr + self.loads + self.stores,
            "instr": self.instr,
            "loads": self.loads,
            "stores": self.stores,
            "events": self.events,
            "event_counts": self.event_counts,
            "page_crossing_4k": self.page_crossing_4k,
            "threads": self.threads,
        })
    }
}

/// The snake_case name of an event kind (as in the JSON form and docs/formats/trace.md).
pub fn event_name(e: &Event) -> &'static str {
    match e {
        Event::ThreadStart { .. } => "thread_start",
        Event::ThreadExit { .. } => "thread_exit",
        Event::ContextSwitch { .. } => "context_switch",
        Event::Migrate { .. } => "migrate",
        Event::Mmap { .. } => "mmap",
        Event::Munmap { .. } => "munmap",
        Event::Mprotect { .. } => "mprotect",
        Event::TaskRelease { .. } => "task_release",
        Event::JobStart { .. } => "job_start",
        Event::JobEnd { .. } => "job_end",
        Event::Region { .. } => "region",
        Event::PhaseBegin { .. } => "phase_begin",
        Event::PhaseEnd { .. } => "phase_end",
        Event::Flush { .. } => "flush",
        Event::MapShared { .. } => "map_shared",
        Event::TlbLock { .. } => "tlb_lock",
        Event::FlushRange { .. } => "flush_range",
        Event::ProcessExit { .. } => "process_exit",
        Event::KernelEntry { .. } => "kernel_entry",
        Event::Independent { .. } => "independent",
        Event::Depends { .. } => "depends",
    }
}

pub struct TraceWriter {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<BufWriter<File>>,
    offset: u64,
    enc: Encoder,
    comp: zstd::bulk::Compressor<'static>,
    blocks: Vec<BlockInfo>,
    opts: WriterOptions,
    pub summary: Summary,
    footer: Map<String, Value>,
}

impl TraceWriter {
    /// Creates `path` (atomically, at `finish`) with header metadata `meta` (a JSON object; see
    /// docs/formats/trace.md §2 for the well-known keys, e.g. `regions`, `program`, `maps`).
    pub fn create(path: &Path, meta: &Value, opts: WriterOptions) -> Result<TraceWriter, Error> {
        let name = path.display().to_string();
        if !meta.is_object() {
            return Err(Error::msg(format!(
                "{name}: trace metadata must be a JSON object"
            )));
        }
        if opts.block_records == 0 {
            return Err(Error::msg("block_records must be positive"));
        }
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let fname = path
            .file_name()
            .ok_or_else(|| Error::msg(format!("{name}: not a file name")))?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            fname.to_string_lossy(),
            std::process::id()
        ));
        let f = File::create(&tmp).map_err(|e| Error::io(&name, &e))?;
        let comp = zstd::bulk::Compressor::new(opts.level)
            .map_err(|e| Error::msg(format!("zstd: {e}")))?;
        let mut w = TraceWriter {
            path: path.to_path_buf(),
            tmp,
            file: Some(BufWriter::with_capacity(1 << 20, f)),
            offset: 0,
            enc: Encoder::new(),
            comp,
            blocks: Vec::new(),
            opts,
            summary: Summary::default(),
            footer: Map::new(),
        };
        let js = serde_json::to_vec(meta).expect("JSON values serialize");
        let mut head = Vec::with_capacity(FILE_HEADER_LEN + js.len() + 4);
        head.extend_from_slice(&MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&0u16.to_le_bytes());
        head.extend_from_slice(&(js.len() as u32).to_le_bytes());
        head.extend_from_slice(&js);
        let crc = crc32fast::hash(&head);
        head.extend_from_slice(&crc.to_le_bytes());
        w.put(&head)?;
        Ok(w)
    }

    fn put(&mut self, b: &[u8]) -> Result<(), Error> {
        let name = self.path.display().to_string();
        self.file
            .as_mut()
            .expect("writer used after finish")
            .write_all(b)
            .map_err(|e| Error::io(&name, &e))?;
        self.offset += b.len() as u64;
        Ok(())
    }

    #[inline]
    pub fn write(&mut self, r: &Record) -> Result<(), Error> {
        self.summary.add(r);
        self.enc.push(r);
        if self.enc.records >= self.opts.block_records {
            self.flush_block()?;
        }
        Ok(())
    }

    pub fn write_all(&mut self, rs: &[Record]) -> Result<(), Error> {
        for r in rs {
            self.write(r)?;
        }
        Ok(())
    }

    /// Adds a key to the footer JSON (e.g. a `/proc/PID/maps` snapshot taken at the end).
    pub fn set_footer(&mut self, key: &str, v: Value) {
        self.footer.insert(key.to_string(), v);
    }

    fn flush_block(&mut self) -> Result<(), Error> {
        if self.enc.records == 0 {
            return Ok(());
        }
        let raw_len = self.enc.payload().len();
        let comp = self
            .comp
            .compress(self.enc.payload())
            .map_err(|e| Error::msg(format!("zstd: {e}")))?;
        let first = self
            .blocks
            .last()
            .map(|b| b.first_record + b.records as u64)
            .unwrap_or(0);
        let info = BlockInfo {
            offset: self.offset,
            first_record: first,
            records: self.enc.records,
            accesses: self.enc.accesses,
        };
        let mut h = [0u8; BLOCK_HEADER_LEN];
        h[0..4].copy_from_slice(&BLOCK_MAGIC);
        h[4..8].copy_from_slice(&(comp.len() as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(raw_len as u32).to_le_bytes());
        h[12..16].copy_from_slice(&info.records.to_le_bytes());
        h[16..20].copy_from_slice(&info.accesses.to_le_bytes());
        h[20..28].copy_from_slice(&first.to_le_bytes());
        h[28..32].copy_from_slice(&crc32fast::hash(&comp).to_le_bytes());
        let hc = crc32fast::hash(&h[..32]);
        h[32..36].copy_from_slice(&hc.to_le_bytes());
        self.put(&h)?;
        self.put(&comp)?;
        self.blocks.push(info);
        self.enc.reset();
        Ok(())
    }

    /// Writes the last block, the index, the footer and the trailer, and renames the file into
    /// place. Returns the summary.
    pub fn finish(mut self) -> Result<Summary, Error> {
        self.flush_block()?;
        let index_offset = self.offset;
        let mut footer = std::mem::take(&mut self.footer);
        footer.insert("summary".into(), self.summary.to_json());
        let fj = serde_json::to_vec(&Value::Object(footer)).expect("JSON values serialize");
        let mut idx = Vec::with_capacity(12 + self.blocks.len() * INDEX_ENTRY_LEN + fj.len());
        idx.extend_from_slice(&INDEX_MAGIC);
        idx.extend_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        for b in &self.blocks {
            idx.extend_from_slice(&b.offset.to_le_bytes());
            idx.extend_from_slice(&b.first_record.to_le_bytes());
            idx.extend_from_slice(&b.records.to_le_bytes());
            idx.extend_from_slice(&b.accesses.to_le_bytes());
        }
        idx.extend_from_slice(&(fj.len() as u32).to_le_bytes());
        idx.extend_from_slice(&fj);
        let crc = crc32fast::hash(&idx);
        idx.extend_from_slice(&crc.to_le_bytes());
        self.put(&idx)?;
        let mut t = [0u8; TRAILER_LEN];
        t[0..8].copy_from_slice(&index_offset.to_le_bytes());
        t[8..16].copy_from_slice(&self.summary.records.to_le_bytes());
        t[16..24].copy_from_slice(&TRAILER_MAGIC);
        self.put(&t)?;
        let name = self.path.display().to_string();
        let f = self.file.take().unwrap();
        // From here on `Drop` no longer removes the temporary file (the file handle is taken),
        // so each failure below removes it itself: a trace that fits in the write buffer meets
        // a full disk only at this last flush.
        let f = match f.into_inner() {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_file(&self.tmp);
                return Err(Error::io(&name, e.error()));
            }
        };
        f.sync_all().ok();
        drop(f);
        if let Err(e) = std::fs::rename(&self.tmp, &self.path) {
            let _ = std::fs::remove_file(&self.tmp);
            return Err(Error::io(&name, &e));
        }
        Ok(std::mem::take(&mut self.summary))
    }

    /// Bytes written so far (for progress reports).
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes every record of `src` to a new trace at `path`.
pub fn write_source(
    src: &mut dyn crate::source::RecordSource,
    path: &Path,
    meta: &Value,
    opts: WriterOptions,
) -> Result<Summary, Error> {
    let mut w = TraceWriter::create(path, meta, opts)?;
    let mut buf = Vec::with_capacity(8192);
    loop {
        buf.clear();
        let n = src.fill(&mut buf, 8192).map_err(Error::msg)?;
        if n == 0 {
            break;
        }
        w.write_all(&buf)?;
    }
    w.finish()
}
