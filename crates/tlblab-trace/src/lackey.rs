//! Valgrind Lackey text traces (`valgrind --tool=lackey --trace-mem=yes`): reader and writer.
//!
//! Exact grammar (valgrind `lackey/lk_main.c`, verified on 3.19; see docs/formats/trace.md §6):
//! `I  %08lx,%lu` for an instruction fetch and ` L|S|M %08lx,%lu` for a data access — lowercase
//! hex zero-padded to *at least* 8 digits (64-bit addresses print more), decimal size. `M` is a
//! read-modify-write of the same address and size and becomes a load followed by a store.
//! Valgrind's own `==PID==` / `--PID--` message lines and `SB` superblock lines (from
//! `--trace-superblocks=yes`) are skipped; `SYSCALL` lines (from `--trace-syscalls=yes`) are
//! kept apart, each with the number of memory lines before it, when the reader was asked to
//! (`keep_syscalls`: a capture that needs the program's system calls gets them from its own
//! run instead of a second one; the syscall trace's other lines are then skipped); anything
//! else is an error naming the line.
//!
//! Lackey prints no thread id (Valgrind serialises threads but Lackey does not say which one
//! runs), so every access is attributed to thread 0. Accesses that cross a page boundary keep
//! their address and size; consumers split them (docs/formats/trace.md §3).

use crate::record::{Access, Record};
use crate::source::RecordSource;
use std::io::{BufRead, Write};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

pub struct LackeySource<R: BufRead> {
    name: String,
    r: R,
    line: Vec<u8>,
    line_no: u64,
    /// A store still to emit for an `M` line whose load was the last record of a fill.
    pending: Option<Access>,
    done: bool,
    /// References seen (loads+stores+fetches, an M counting twice).
    pub references: u64,
    /// Memory lines seen (`I`, `L`, `S`, `M`: an M counting once).
    pub memory_lines: u64,
    /// With `keep_syscalls`: each `SYSCALL` line (without its line end) and the memory lines
    /// before it.
    pub syscalls: Option<Vec<(u64, String)>>,
}

impl<R: BufRead> LackeySource<R> {
    pub fn new(r: R, name: &str) -> Self {
        LackeySource {
            name: name.to_string(),
            r,
            line: Vec::with_capacity(64),
            line_no: 0,
            pending: None,
            done: false,
            references: 0,
            memory_lines: 0,
            syscalls: None,
        }
    }

    /// Keeps Valgrind's `SYSCALL` lines (`--trace-syscalls=yes`) in `syscalls` instead of
    /// refusing them.
    pub fn keep_syscalls(mut self) -> Self {
        self.syscalls = Some(Vec::new());
        self
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.r
    }

    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    fn bad(&self, what: &str) -> String {
        let shown = String::from_utf8_lossy(self.line.strip_suffix(b"\n").unwrap_or(&self.line));
        let shown: String = shown.chars().take(80).collect();
        format!(
            "{}: line {}: {what}; expected a Lackey line \"I  <hex>,<size>\" or \" L|S|M <hex>,<size>\", found {:?}",
            self.name, self.line_no, shown
        )
    }

    /// Parses the current line: Ok(Some((kind, addr, size, is_modify))) or Ok(None) to skip.
    #[inline]
    fn parse(&self) -> Result<Option<(AccessKind, u64, u32, bool)>, String> {
        let mut l: &[u8] = &self.line;
        if let Some(x) = l.strip_suffix(b"\n") {
            l = x;
        }
        if let Some(x) = l.strip_suffix(b"\r") {
            l = x;
        }
        if l.len() < 4 {
            if l.is_empty() {
                return Ok(None);
            }
            return Err(self.bad("line too short"));
        }
        let (kind, modify, rest) = match (l[0], l[1], l[2]) {
            (b'I', b' ', b' ') => (AccessKind::Instr, false, &l[3..]),
            (b' ', b'L', b' ') => (AccessKind::Load, false, &l[3..]),
            (b' ', b'S', b' ') => (AccessKind::Store, false, &l[3..]),
            (b' ', b'M', b' ') => (AccessKind::Load, true, &l[3..]),
            (b'=', b'=', _) | (b'-', b'-', _) => return Ok(None),
            (b'S', b'B', b' ') => return Ok(None),
            _ => return Err(self.bad("unknown record type")),
        };
        let mut addr: u64 = 0;
        let mut i = 0;
        while i < rest.len() && rest[i] != b',' {
            let d = match rest[i] {
                c @ b'0'..=b'9' => c - b'0',
                c @ b'a'..=b'f' => c - b'a' + 10,
                c @ b'A'..=b'F' => c - b'A' + 10,
                _ => return Err(self.bad("bad hex digit in the address")),
            };
            if addr >> 60 != 0 {
                return Err(self.bad("address has more than 64 bits"));
            }
            addr = (addr << 4) | d as u64;
            i += 1;
        }
        if i == 0 {
            return Err(self.bad("missing address"));
        }
        if i == rest.len() {
            return Err(self.bad("missing \",<size>\""));
        }
        let sz = &rest[i + 1..];
        if sz.is_empty() || sz.len() > 10 || !sz.iter().all(|c| c.is_ascii_digit()) {
            return Err(self.bad("size must be a decimal number"));
        }
        let size: u64 = sz.iter().fold(0u64, |a, c| a * 10 + (c - b'0') as u64);
        if size > u32::MAX as u64 {
            return Err(self.bad("size too large"));
        }
        Ok(Some((kind, addr, size as u32, modify)))
    }
}

impl<R: BufRead> RecordSource for LackeySource<R> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        let mut n = 0;
        if max == 0 {
            return Ok(0);
        }
        if let Some(a) = self.pending.take() {
            out.push(Record::Access(a));
            n += 1;
        }
        while n < max && !self.done {
            self.line.clear();
            let got = self
                .r
                .read_until(b'\n', &mut self.line)
                .map_err(|e| format!("{}: line {}: {e}", self.name, self.line_no + 1))?;
            if got == 0 {
                self.done = true;
                break;
            }
            self.line_no += 1;
            let parsed = match self.syscalls.as_mut() {
                None => self.parse()?,
                Some(calls) if self.line.starts_with(b"SYSCALL") => {
                    let text = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                    calls.push((
                        self.memory_lines,
                        String::from_utf8_lossy(text).into_owned(),
                    ));
                    continue;
                }
                // Valgrind's syscall trace also writes other lines (a call's " --> [pre-fail]
                // Failure(..)" after a line break, its own messages): not memory lines, skipped.
                Some(_) => self.parse().unwrap_or(None),
            };
            if let Some((kind, addr, size, modify)) = parsed {
                self.memory_lines += 1;
                let a = Access::new(ThreadId(0), kind, VirtAddr(addr), size);
                out.push(Record::Access(a));
                n += 1;
                self.references += 1;
                if modify {
                    let s = Access::new(ThreadId(0), AccessKind::Store, VirtAddr(addr), size);
                    self.references += 1;
                    if n < max {
                        out.push(Record::Access(s));
                        n += 1;
                    } else {
                        self.pending = Some(s);
                    }
                }
            }
        }
        Ok(n)
    }
}

/// Writes records as Lackey text. Events have no Lackey form: they are skipped and counted.
/// A load immediately followed by a store of the same address, size and thread is written as
/// `M`, so Lackey → tlbt → Lackey reproduces the original text.
pub struct LackeyWriter<W: Write> {
    w: W,
    held: Option<Access>,
    pub skipped_events: u64,
}

impl<W: Write> LackeyWriter<W> {
    pub fn new(w: W) -> Self {
        LackeyWriter {
            w,
            held: None,
            skipped_events: 0,
        }
    }

    fn emit(&mut self, tag: &str, a: &Access) -> std::io::Result<()> {
        writeln!(self.w, "{tag}{:08x},{}", a.vaddr.0, a.size)
    }

    pub fn write(&mut self, r: &Record) -> std::io::Result<()> {
        match r {
            Record::Event(_) => {
                self.skipped_events += 1;
                Ok(())
            }
            Record::Access(a) => {
                if let Some(h) = self.held.take() {
                    if a.kind == AccessKind::Store
                        && a.vaddr == h.vaddr
                        && a.size == h.size
                        && a.thread == h.thread
                    {
                        return self.emit(" M ", a);
                    }
                    self.emit(" L ", &h)?;
                }
                match a.kind {
                    AccessKind::Instr => self.emit("I  ", a),
                    AccessKind::Load => {
                        self.held = Some(*a);
                        Ok(())
                    }
                    AccessKind::Store => self.emit(" S ", a),
                }
            }
        }
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        if let Some(h) = self.held.take() {
            self.emit(" L ", &h)?;
        }
        self.w.flush()?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<Record>, String> {
        let mut s = LackeySource::new(text.as_bytes(), "t.txt");
        let mut out = Vec::new();
        while s.fill(&mut out, 3)? > 0 {}
        Ok(out)
    }

    fn acc(kind: AccessKind, a: u64, s: u32) -> Record {
        Record::Access(Access::new(ThreadId(0), kind, VirtAddr(a), s))
    }

    #[test]
    fn exact_lackey_lines_parse_including_64_bit_and_modify() {
        let t = "==123== Lackey, an example Valgrind tool\nI  04001000,3\n L 1fff000758,8\n S 04223ff8,8\n M 0421a2c0,4\nSB 04001000\nI  ffffffffff600000,16\n";
        let r = parse(t).unwrap();
        assert_eq!(
            r,
            vec![
                acc(AccessKind::Instr, 0x0400_1000, 3),
                acc(AccessKind::Load, 0x1f_ff00_0758, 8),
                acc(AccessKind::Store, 0x0422_3ff8, 8),
                acc(AccessKind::Load, 0x0421_a2c0, 4),
                acc(AccessKind::Store, 0x0421_a2c0, 4),
                acc(AccessKind::Instr, 0xffff_ffff_ff60_0000, 16),
            ]
        );
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let e = parse("I  04001000,3\n X 1234,4\n").unwrap_err();
        assert!(e.starts_with("t.txt: line 2: unknown record type"), "{e}");
        let e = parse("I  04001000,3\n L 12g4,4\n").unwrap_err();
        assert!(e.contains("line 2: bad hex digit"), "{e}");
        let e = parse(" L 1234\n").unwrap_err();
        assert!(e.contains("line 1: missing \",<size>\""), "{e}");
        let e = parse(" L 1234,x\n").unwrap_err();
        assert!(e.contains("size must be a decimal"), "{e}");
        let e = parse(" L 11112222333344445,8\n").unwrap_err();
        assert!(e.contains("more than 64 bits"), "{e}");
    }

    #[test]
    fn syscall_lines_are_kept_with_the_memory_lines_before_them_only_when_asked() {
        // An M line counts once (the line), as the references before a call are counted by the
        // caller from these; without keep_syscalls a SYSCALL line is an unknown record.
        let t = "I  04001000,3\n M 0421a2c0,4\nSYSCALL[7,1](12) sys_brk ( 0x0 ) --> Success(0x4000)\n L 00000010,1\nSYSCALL[7,1](231) sys_exit_group ( 0 )\n --> [pre-fail] Failure(0x26)\n";
        let mut s = LackeySource::new(t.as_bytes(), "t.txt").keep_syscalls();
        let mut out = Vec::new();
        while s.fill(&mut out, 2).unwrap() > 0 {}
        assert_eq!(out.len(), 4);
        assert_eq!((s.memory_lines, s.references), (3, 4));
        assert_eq!(
            s.syscalls.unwrap(),
            vec![
                (
                    2,
                    "SYSCALL[7,1](12) sys_brk ( 0x0 ) --> Success(0x4000)".to_string()
                ),
                (3, "SYSCALL[7,1](231) sys_exit_group ( 0 )".to_string()),
            ]
        );
        let e = parse(t).unwrap_err();
        assert!(e.starts_with("t.txt: line 3: unknown record type"), "{e}");
    }

    #[test]
    fn writer_reproduces_lackey_text_with_m_lines() {
        let t = "I  04001000,3\n L 1fff000758,8\n M 0421a2c0,4\n S 04223ff8,8\n L 00000010,1\n";
        let r = parse(t).unwrap();
        let mut w = LackeyWriter::new(Vec::new());
        r.iter().for_each(|x| w.write(x).unwrap());
        assert_eq!(String::from_utf8(w.finish().unwrap()).unwrap(), t);
    }
}
