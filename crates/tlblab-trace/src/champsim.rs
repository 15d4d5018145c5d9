//! ChampSim binary traces: the classic 64-byte `input_instr` record (ChampSim
//! `inc/trace_instruction.h`), read and written, usually xz-compressed (`fileio` handles that).
//!
//! Layout, little-endian: `ip` u64 @0, `is_branch` u8 @8, `branch_taken` u8 @9,
//! `destination_registers[2]` @10, `source_registers[4]` @12, `destination_memory[2]` u64 @16,
//! `source_memory[4]` u64 @32; a zero memory operand means "none".
//!
//! Mapping (documented in docs/formats/trace.md §7): each record becomes an instruction fetch of
//! `ip` (size 4: ChampSim records no instruction length), then a load (size 8) per non-zero
//! source operand, then a store (size 8) per non-zero destination. Writing groups a fetch with the
//! loads and stores that follow it (4 loads and 2 stores fit; more open another record with the
//! same ip); loads and stores with no fetch before them get the last ip seen, or `DATA_ONLY_IP`.
//! Events have no ChampSim form and are skipped (and counted). Registers and branch fields are
//! written as zero: the trace drives ChampSim's memory system, not its branch predictor.

use crate::record::{Access, Event, Record, ROI_REGION};
use crate::source::RecordSource;
use std::io::{Read, Write};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

pub const RECORD_LEN: usize = 64;
/// The ip given to data accesses that have no instruction fetch before them.
pub const DATA_ONLY_IP: u64 = 0x1000;

/// How a ChampSim trace is read: which references each record gives, and which instructions
/// are simulated (ChampSim's own `--warmup-instructions` and `--simulation-instructions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChampSimOptions {
    /// Give each record's instruction fetch (the default). Off: the data references alone,
    /// so reference counts (`--max-references`, `--warmup`, `--roi`) count data references.
    pub fetches: bool,
    /// Instructions of warm-up: after the last reference of this many records the reader
    /// marks the region of interest's start (`PhaseBegin` of `ROI_REGION`). 0: none.
    pub warmup_instructions: u64,
    /// Instructions simulated after the warm-up; the stream ends there. 0: to the trace's end.
    pub simulation_instructions: u64,
}

impl Default for ChampSimOptions {
    fn default() -> Self {
        ChampSimOptions {
            fetches: true,
            warmup_instructions: 0,
            simulation_instructions: 0,
        }
    }
}

pub struct ChampSimSource<R: Read> {
    name: String,
    opts: ChampSimOptions,
    /// The record after which the stream ends (`u64::MAX`: none).
    last_instruction: u64,
    /// The stream ended at `last_instruction` rather than at the file's end: what is left of
    /// the input is not read (nor, for a compressed one, checked).
    pub stopped_early: bool,
    r: R,
    offset: u64,
    buf: Vec<u8>,
    pending: Vec<Record>,
    pend_pos: usize,
    done: bool,
    pub instructions: u64,
}

impl<R: Read> ChampSimSource<R> {
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.r
    }

    pub fn new(r: R, name: &str) -> Self {
        Self::with_options(r, name, ChampSimOptions::default())
    }

    pub fn with_options(r: R, name: &str, opts: ChampSimOptions) -> Self {
        let last_instruction = match opts.simulation_instructions {
            0 => u64::MAX,
            n => opts.warmup_instructions.saturating_add(n),
        };
        ChampSimSource {
            name: name.into(),
            opts,
            last_instruction,
            stopped_early: false,
            r,
            offset: 0,
            buf: vec![0; RECORD_LEN * 4096],
            pending: Vec::new(),
            pend_pos: 0,
            done: false,
            instructions: 0,
        }
    }
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// An access of thread 0: ChampSim traces are of one thread.
fn access(kind: AccessKind, addr: u64, size: u32) -> Record {
    Record::Access(Access::new(ThreadId(0), kind, VirtAddr(addr), size))
}

/// The highest virtual address bit any machine tlblab simulates has (x86-64 5-level paging:
/// 57 bits); a record with an address above it is no program's.
const ADDRESS_BITS: u32 = 57;

/// Checks what a real record always holds: `is_branch` and `branch_taken` are C++ bools (0 or
/// 1), and `ip` and every memory operand are addresses of the 57-bit space. Random bytes fail
/// the first record (a bool byte is 0 or 1 by chance 1 time in 128), so a file that is no
/// ChampSim trace is refused at its start, with its offset, rather than read as addresses.
fn check_record(rec: &[u8]) -> Result<(), String> {
    for (field, at) in [("is_branch", 8), ("branch_taken", 9)] {
        if rec[at] > 1 {
            return Err(format!("{field} is {}, expected 0 or 1", rec[at]));
        }
    }
    let fields = [("ip", 0)]
        .into_iter()
        .chain((0..2).map(|i| ("destination_memory", 16 + 8 * i)))
        .chain((0..4).map(|i| ("source_memory", 32 + 8 * i)));
    for (field, at) in fields {
        let a = u64_at(rec, at);
        if a >> ADDRESS_BITS != 0 {
            return Err(format!(
                "{field} {a:#x} is outside the {ADDRESS_BITS}-bit address space"
            ));
        }
    }
    Ok(())
}

impl<R: Read> RecordSource for ChampSimSource<R> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let mut n = 0;
        while n < max {
            if self.pend_pos < self.pending.len() {
                let k = (self.pending.len() - self.pend_pos).min(max - n);
                out.extend_from_slice(&self.pending[self.pend_pos..self.pend_pos + k]);
                self.pend_pos += k;
                n += k;
                continue;
            }
            self.pending.clear();
            self.pend_pos = 0;
            if self.done {
                break;
            }
            // Read a chunk of whole records.
            let mut got = 0;
            while got < self.buf.len() {
                match self.r.read(&mut self.buf[got..]) {
                    Ok(0) => break,
                    Ok(k) => got += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(format!(
                            "{}: byte {}: {e}",
                            self.name,
                            self.offset + got as u64
                        ))
                    }
                }
            }
            if got < self.buf.len() {
                self.done = true;
            }
            if got % RECORD_LEN != 0 {
                let at = self.offset + (got - got % RECORD_LEN) as u64;
                return Err(format!(
                    "{}: byte {at} (of the uncompressed stream): truncated: the last ChampSim record has {} of {RECORD_LEN} bytes",
                    self.name,
                    got % RECORD_LEN
                ));
            }
            for (k, rec) in self.buf[..got].chunks_exact(RECORD_LEN).enumerate() {
                if self.instructions == self.last_instruction {
                    self.done = true;
                    self.stopped_early = true;
                    break;
                }
                if let Err(why) = check_record(rec) {
                    return Err(format!(
                        "{}: byte {} (of the uncompressed stream): not a ChampSim trace: {why}",
                        self.name,
                        self.offset + (k * RECORD_LEN) as u64
                    ));
                }
                self.instructions += 1;
                if self.opts.fetches {
                    let ip = u64_at(rec, 0);
                    self.pending.push(access(AccessKind::Instr, ip, 4));
                }
                for i in 0..4 {
                    let a = u64_at(rec, 32 + 8 * i);
                    if a != 0 {
                        self.pending.push(access(AccessKind::Load, a, 8));
                    }
                }
                for i in 0..2 {
                    let a = u64_at(rec, 16 + 8 * i);
                    if a != 0 {
                        self.pending.push(access(AccessKind::Store, a, 8));
                    }
                }
                if self.instructions == self.opts.warmup_instructions {
                    // ChampSim's warm-up ends after this many instructions; the engine
                    // begins the region of interest here (`System::begin_roi`).
                    self.pending
                        .push(Record::Event(Event::PhaseBegin { region: ROI_REGION }));
                }
            }
            self.offset += got as u64;
        }
        Ok(n)
    }
}

pub struct ChampSimWriter<W: Write> {
    w: W,
    cur: Option<[u8; RECORD_LEN]>,
    loads: usize,
    stores: usize,
    last_ip: u64,
    pub skipped_events: u64,
    pub records: u64,
}

impl<W: Write> ChampSimWriter<W> {
    pub fn new(w: W) -> Self {
        ChampSimWriter {
            w,
            cur: None,
            loads: 0,
            stores: 0,
            last_ip: DATA_ONLY_IP,
            skipped_events: 0,
            records: 0,
        }
    }

    fn flush_cur(&mut self) -> std::io::Result<()> {
        if let Some(c) = self.cur.take() {
            self.w.write_all(&c)?;
            self.records += 1;
        }
        self.loads = 0;
        self.stores = 0;
        Ok(())
    }

    fn open(&mut self, ip: u64) -> std::io::Result<()> {
        self.flush_cur()?;
        let mut c = [0u8; RECORD_LEN];
        c[..8].copy_from_slice(&ip.to_le_bytes());
        self.cur = Some(c);
        Ok(())
    }

    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        let a = match r {
            Record::Event(_) => {
                self.skipped_events += 1;
                return Ok(());
            }
            Record::Access(a) => a,
        };
        match a.kind {
            AccessKind::Instr => {
                self.last_ip = a.vaddr.0;
                self.open(a.vaddr.0)
            }
            AccessKind::Load => self.operand(a.vaddr.0, false),
            AccessKind::Store => self.operand(a.vaddr.0, true),
        }
    }

    /// Puts a data address in the open record's next memory operand: a store in one of its 2
    /// destination slots (from byte 16), a load in one of its 4 source slots (from byte 32);
    /// with no record open, or its slots of that kind full, a new one opens at the last ip.
    fn operand(&mut self, addr: u64, store: bool) -> std::io::Result<()> {
        let (base, slots) = if store { (16, 2) } else { (32, 4) };
        let used = if store { self.stores } else { self.loads };
        if self.cur.is_none() || used == slots {
            self.open(self.last_ip)?;
        }
        let used = if store {
            &mut self.stores
        } else {
            &mut self.loads
        };
        let o = base + 8 * *used;
        *used += 1;
        self.cur.as_mut().unwrap()[o..o + 8].copy_from_slice(&addr.to_le_bytes());
        Ok(())
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush_cur()?;
        self.w.flush()?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(kind: AccessKind, a: u64, s: u32) -> Record {
        Record::Access(Access::new(ThreadId(0), kind, VirtAddr(a), s))
    }

    #[test]
    fn fetch_loads_and_stores_round_trip_through_64_byte_records() {
        let recs = vec![
            acc(AccessKind::Instr, 0x401000, 4),
            acc(AccessKind::Load, 0x7fff_0000_1000, 8),
            acc(AccessKind::Load, 0x7fff_0000_2000, 8),
            acc(AccessKind::Store, 0x5555_0000, 8),
            acc(AccessKind::Instr, 0x401004, 4),
        ];
        let mut w = ChampSimWriter::new(Vec::new());
        recs.iter().for_each(|r| w.write(r).unwrap());
        let bytes = w.finish().unwrap();
        assert_eq!(bytes.len(), 2 * RECORD_LEN);
        let mut s = ChampSimSource::new(&bytes[..], "x.champsim");
        let mut out = Vec::new();
        while s.fill(&mut out, 2).unwrap() > 0 {}
        assert_eq!(out, recs);
    }

    #[test]
    fn garbage_is_refused_with_the_offset_of_the_first_bad_record() {
        let mut good = Vec::new();
        let mut w = ChampSimWriter::new(&mut good);
        w.write(&acc(AccessKind::Instr, 0x40_1000, 4)).unwrap();
        w.write(&acc(AccessKind::Load, 0x7fff_0000, 8)).unwrap();
        w.finish().unwrap();
        assert_eq!(good.len(), RECORD_LEN);
        // A second record whose branch byte is no bool, then one with a 64-bit address.
        let mut bad = good.clone();
        bad.extend_from_slice(&good);
        bad[RECORD_LEN + 8] = 0x7a;
        let mut src = ChampSimSource::new(&bad[..], "g.champsimtrace");
        let e = src.fill(&mut Vec::new(), 100).unwrap_err();
        assert_eq!(
            e,
            "g.champsimtrace: byte 64 (of the uncompressed stream): not a ChampSim trace: is_branch is 122, expected 0 or 1"
        );
        let mut bad = good.clone();
        bad[32..40].copy_from_slice(&0xdead_beef_dead_beefu64.to_le_bytes());
        let e = ChampSimSource::new(&bad[..], "g")
            .fill(&mut Vec::new(), 100)
            .unwrap_err();
        assert!(
            e.contains("byte 0 ") && e.contains("source_memory 0xdeadbeefdeadbeef is outside"),
            "{e}"
        );
    }

    #[test]
    fn a_partial_record_is_reported_with_its_offset() {
        let bytes = [0u8; RECORD_LEN * 2 + 10];
        let mut s = ChampSimSource::new(&bytes[..], "x.champsim");
        let e = s.fill(&mut Vec::new(), 100).unwrap_err();
        assert!(
            e.contains("x.champsim: byte 128 (of the uncompressed stream): truncated"),
            "{e}"
        );
    }
}
