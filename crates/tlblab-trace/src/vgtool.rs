//! The word stream of tlblab's own Valgrind tool (`runtime/valgrind/tlblab_main.c`), as records.
//!
//! The tool writes little-endian 64-bit words to a pipe; the protocol is written out at the top
//! of `tlblab_main.c`, and its constants are repeated here (`runtime/valgrind/tlblab_vgtool.h`
//! holds the C side). In short: a magic word, then one word per access (48-bit canonical
//! address, 2-bit kind, 14-bit size), control words for thread switches, thread start and exit,
//! region-of-interest marks and long accesses, and an END word with the exit code and the tool's
//! own counts. A stream without END was cut short.
//!
//! Records made: accesses with the thread of the last `THREAD` word (0 until one comes),
//! `ThreadStart { thread, process: 0 }` / `ThreadExit`, `PhaseBegin` / `PhaseEnd` of region
//! 0, which a capture's header names `roi` ([`ROI_REGION_NAME`]), and, with the tool's
//! `--dependence=yes`, `Depends { thread, back }` before a load whose address came from the
//! thread's load `back` references before it.

use crate::record::{Access, Event, Record};
use crate::source::RecordSource;
use std::io::Read;
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

pub const MAGIC: u64 = u64::from_le_bytes(*b"TLBVGT01");
const ADDR_MASK: u64 = (1 << 48) - 1;
const KIND_SHIFT: u32 = 48;
const SIZE_SHIFT: u32 = 50;
const KIND_CONTROL: u64 = 3;
const OP_LONG_ACCESS: u64 = 0;
const OP_THREAD: u64 = 1;
const OP_THREAD_START: u64 = 2;
const OP_THREAD_EXIT: u64 = 3;
const OP_ROI_BEGIN: u64 = 4;
const OP_ROI_END: u64 = 5;
const OP_END: u64 = 6;
const OP_DEPENDS: u64 = 7;
const END_EXIT: u64 = 0;
const END_MAX: u64 = 1;

/// The name of region 0 in a capture's header: the program's `TLBLAB_ROI_BEGIN/END` marks.
pub const ROI_REGION_NAME: &str = "roi";

/// Why the tool ended its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The program exited (or died of a signal; the wait status says which) with this code.
    Exited(i64),
    /// `--max-instructions` traced instructions were reached; the program still runs.
    MaxInstructions,
}

/// The tool's own counts at the end (fetches, loads, stores), to check the stream against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolCounts {
    pub fetches: u64,
    pub loads: u64,
    pub stores: u64,
}

const KINDS: [AccessKind; 3] = [AccessKind::Instr, AccessKind::Load, AccessKind::Store];

pub struct VgToolSource<R: Read> {
    name: String,
    r: R,
    buf: Vec<u8>,
    /// Bytes of `buf` filled, and the next byte to decode.
    len: usize,
    pos: usize,
    /// Bytes consumed before `buf[0]` (for error offsets).
    base: u64,
    started: bool,
    eof: bool,
    thread: ThreadId,
    /// Set when the END word and its four words were read.
    pub end: Option<StreamEnd>,
    pub counts: ToolCounts,
    /// Accesses decoded so far (a modify counts twice, as the tool writes it twice).
    pub references: u64,
}

impl<R: Read> VgToolSource<R> {
    pub fn new(r: R, name: &str) -> Self {
        VgToolSource {
            name: name.to_string(),
            r,
            buf: vec![0; 1 << 20],
            len: 0,
            pos: 0,
            base: 0,
            started: false,
            eof: false,
            thread: ThreadId(0),
            end: None,
            counts: ToolCounts::default(),
            references: 0,
        }
    }

    /// Byte offset in the stream of the next undecoded byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Reads more bytes; false at the end of the stream.
    fn refill(&mut self) -> Result<bool, String> {
        if self.eof {
            return Ok(false);
        }
        self.buf.copy_within(self.pos..self.len, 0);
        self.base += self.pos as u64;
        self.len -= self.pos;
        self.pos = 0;
        loop {
            match self.r.read(&mut self.buf[self.len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.len += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("{}: byte {}: {e}", self.name, self.offset())),
            }
        }
    }

    /// The next word, reading more if needed; None at a clean end of the stream.
    fn word(&mut self) -> Result<Option<u64>, String> {
        while self.len - self.pos < 8 {
            if !self.refill()? {
                if self.len > self.pos {
                    return Err(format!(
                        "{}: byte {}: the stream ends inside a word ({} of 8 bytes)",
                        self.name,
                        self.offset(),
                        self.len - self.pos
                    ));
                }
                return Ok(None);
            }
        }
        let w = u64::from_le_bytes(self.buf[self.pos..self.pos + 8].try_into().unwrap());
        self.pos += 8;
        Ok(Some(w))
    }

    fn word_after(&mut self, what: &str) -> Result<u64, String> {
        self.word()?.ok_or_else(|| {
            format!(
                "{}: byte {}: the stream ends before the {what}",
                self.name,
                self.offset()
            )
        })
    }

    fn bad(&self, what: String) -> String {
        format!(
            "{}: byte {}: {what}",
            self.name,
            self.offset().saturating_sub(8)
        )
    }

    #[inline]
    fn access(&self, kind: u64, vaddr: u64, size: u32) -> Record {
        Record::Access(Access::new(
            self.thread,
            KINDS[kind as usize],
            VirtAddr(vaddr),
            size,
        ))
    }

    /// Decodes one control word (and the words it calls for); Some(record) if it makes one.
    fn control(&mut self, w: u64) -> Result<Option<Record>, String> {
        let op = w >> SIZE_SHIFT;
        let payload = w & ADDR_MASK;
        let thread = || -> Result<ThreadId, String> {
            u32::try_from(payload)
                .map(ThreadId)
                .map_err(|_| self.bad(format!("thread number {payload} does not fit in 32 bits")))
        };
        Ok(match op {
            OP_LONG_ACCESS => {
                let kind = payload & 3;
                let size = payload >> 2;
                if kind == KIND_CONTROL || size > u32::MAX as u64 {
                    return Err(self.bad(format!("a long access of kind {kind} and size {size}")));
                }
                let addr = self.word_after("address of a long access")?;
                self.references += 1;
                Some(self.access(kind, addr, size as u32))
            }
            OP_THREAD => {
                self.thread = thread()?;
                None
            }
            OP_THREAD_START => Some(Record::Event(Event::ThreadStart {
                thread: thread()?,
                process: 0,
            })),
            OP_THREAD_EXIT => Some(Record::Event(Event::ThreadExit { thread: thread()? })),
            OP_ROI_BEGIN => Some(Record::Event(Event::PhaseBegin { region: 0 })),
            OP_ROI_END => Some(Record::Event(Event::PhaseEnd { region: 0 })),
            OP_DEPENDS => match u32::try_from(payload) {
                Ok(back) if back > 0 => Some(Record::Event(Event::Depends {
                    thread: self.thread,
                    back,
                })),
                _ => {
                    return Err(self.bad(format!(
                        "a dependence {payload} references back (expected 1..=2^32-1)"
                    )))
                }
            },
            OP_END => {
                let code = self.word_after("exit code of the END word")?;
                self.counts = ToolCounts {
                    fetches: self.word_after("counts of the END word")?,
                    loads: self.word_after("counts of the END word")?,
                    stores: self.word_after("counts of the END word")?,
                };
                self.end = Some(match payload {
                    END_EXIT => StreamEnd::Exited(code as i64),
                    END_MAX => StreamEnd::MaxInstructions,
                    other => return Err(self.bad(format!("END word with unknown reason {other}"))),
                });
                None
            }
            _ => {
                return Err(self.bad(format!(
                    "unknown control word {w:#018x} (opcode {op}); expected opcodes 0..=7"
                )))
            }
        })
    }
}

impl<R: Read> RecordSource for VgToolSource<R> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        if !self.started {
            self.started = true;
            match self.word()? {
                Some(MAGIC) => {}
                Some(w) => {
                    return Err(format!(
                        "{}: byte 0: expected the magic word TLBVGT01 of tlblab's Valgrind tool, found {:?}",
                        self.name,
                        String::from_utf8_lossy(&w.to_le_bytes())
                    ))
                }
                None => return Ok(0),
            }
        }
        let mut n = 0;
        while n < max && self.end.is_none() {
            // The fast path: every whole word in the buffer that is a plain access.
            let words = (self.len - self.pos) / 8;
            let take = words.min(max - n);
            let mut i = 0;
            while i < take {
                let at = self.pos + i * 8;
                let w = u64::from_le_bytes(self.buf[at..at + 8].try_into().unwrap());
                let kind = (w >> KIND_SHIFT) & 3;
                if kind == KIND_CONTROL {
                    break;
                }
                // Sign-extend the 48-bit canonical address.
                let vaddr = (((w & ADDR_MASK) << 16) as i64 >> 16) as u64;
                out.push(self.access(kind, vaddr, (w >> SIZE_SHIFT) as u32));
                i += 1;
            }
            self.pos += i * 8;
            n += i;
            self.references += i as u64;
            if n >= max {
                break;
            }
            match self.word()? {
                None => break,
                Some(w) => {
                    if (w >> KIND_SHIFT) & 3 == KIND_CONTROL {
                        if let Some(r) = self.control(w)? {
                            out.push(r);
                            n += 1;
                        }
                    } else {
                        // A whole access word that straddled the buffer's end.
                        let vaddr = (((w & ADDR_MASK) << 16) as i64 >> 16) as u64;
                        out.push(self.access(
                            (w >> KIND_SHIFT) & 3,
                            vaddr,
                            (w >> SIZE_SHIFT) as u32,
                        ));
                        self.references += 1;
                        n += 1;
                    }
                }
            }
        }
        if self.end.is_some() && n == 0 {
            // Nothing may follow END.
            if let Some(w) = self.word()? {
                return Err(self.bad(format!("word {w:#018x} after the END word")));
            }
        }
        Ok(n)
    }

    fn region_names(&self) -> Vec<String> {
        vec![ROI_REGION_NAME.to_string()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn control(op: u64, payload: u64) -> u64 {
        (op << SIZE_SHIFT) | (KIND_CONTROL << KIND_SHIFT) | payload
    }
    fn access(kind: u64, addr: u64, size: u64) -> u64 {
        (addr & ADDR_MASK) | (kind << KIND_SHIFT) | (size << SIZE_SHIFT)
    }
    fn bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
    /// Records, end, counts and references of a whole stream.
    #[derive(Debug)]
    struct Read {
        end: Option<StreamEnd>,
        counts: ToolCounts,
        references: u64,
    }

    fn read_all(b: &[u8]) -> Result<(Vec<Record>, Read), String> {
        let mut s = VgToolSource::new(b, "stream");
        let mut out = Vec::new();
        // Small batches, so records cross batch boundaries.
        while s.fill(&mut out, 3)? > 0 {}
        let r = Read {
            end: s.end,
            counts: s.counts,
            references: s.references,
        };
        Ok((out, r))
    }

    #[test]
    fn given_a_stream_of_every_word_kind_when_read_then_the_records_come_out_in_order() {
        let words = [
            MAGIC,
            access(0, 0x401000, 4),
            access(1, 0x1fff000ff8, 8),
            access(2, 0xffff_ffff_ff60_0000, 8), // sign-extended: the vsyscall page
            control(OP_THREAD_START, 1),
            control(OP_THREAD, 1),
            control(OP_ROI_BEGIN, 0),
            control(OP_DEPENDS, 3),
            control(OP_LONG_ACCESS, 1 | (100_000 << 2)),
            0x8000_0000_0000_0000, // not canonical
            control(OP_ROI_END, 0),
            control(OP_THREAD_EXIT, 1),
            control(OP_THREAD, 0),
            access(2, 0x10, 64),
            control(OP_END, END_EXIT),
            3,
            2,
            2,
            2,
        ];
        let (recs, s) = read_all(&bytes(&words)).unwrap();
        let t = |n| ThreadId(n);
        assert_eq!(
            recs,
            vec![
                Record::Access(Access::new(t(0), AccessKind::Instr, VirtAddr(0x401000), 4)),
                Record::Access(Access::new(
                    t(0),
                    AccessKind::Load,
                    VirtAddr(0x1fff000ff8),
                    8
                )),
                Record::Access(Access::new(
                    t(0),
                    AccessKind::Store,
                    VirtAddr(0xffff_ffff_ff60_0000),
                    8
                )),
                Record::Event(Event::ThreadStart {
                    thread: t(1),
                    process: 0
                }),
                Record::Event(Event::PhaseBegin { region: 0 }),
                Record::Event(Event::Depends {
                    thread: t(1),
                    back: 3
                }),
                Record::Access(Access::new(
                    t(1),
                    AccessKind::Load,
                    VirtAddr(0x8000_0000_0000_0000),
                    100_000
                )),
                Record::Event(Event::PhaseEnd { region: 0 }),
                Record::Event(Event::ThreadExit { thread: t(1) }),
                Record::Access(Access::new(t(0), AccessKind::Store, VirtAddr(0x10), 64)),
            ]
        );
        assert_eq!(s.end, Some(StreamEnd::Exited(3)));
        assert_eq!(
            s.counts,
            ToolCounts {
                fetches: 2,
                loads: 2,
                stores: 2
            }
        );
        assert_eq!(s.references, 5);
    }

    #[test]
    fn given_a_stream_cut_short_when_read_then_there_is_no_end_and_no_error() {
        let (recs, s) = read_all(&bytes(&[MAGIC, access(0, 0x1000, 2)])).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(s.end, None);
    }

    #[test]
    fn given_bad_streams_when_read_then_one_message_names_the_byte_and_the_problem() {
        let e = read_all(b"#!/bin/sh\nexit 0\n").unwrap_err();
        assert!(e.contains("byte 0") && e.contains("TLBVGT01"), "{e}");
        let e = read_all(&bytes(&[MAGIC, control(9, 0)])).unwrap_err();
        assert!(e.contains("byte 8") && e.contains("opcode 9"), "{e}");
        let mut b = bytes(&[MAGIC, access(0, 0x1000, 2)]);
        b.extend_from_slice(&[1, 2, 3]);
        let e = read_all(&b).unwrap_err();
        assert!(e.contains("byte 16") && e.contains("inside a word"), "{e}");
        let e = read_all(&bytes(&[MAGIC, control(OP_END, END_EXIT), 0, 0, 0, 0, 7])).unwrap_err();
        assert!(e.contains("after the END word"), "{e}");
        let e = read_all(&bytes(&[MAGIC, control(OP_END, END_EXIT), 0])).unwrap_err();
        assert!(e.contains("ends before the counts"), "{e}");
        let e = read_all(&bytes(&[MAGIC, control(OP_DEPENDS, 0)])).unwrap_err();
        assert!(e.contains("byte 8") && e.contains("dependence 0"), "{e}");
    }
}
