//! Record encoding inside one block of the native format, version 2 (spec:
//! docs/formats/trace.md §4). Version 1 payloads are decoded by `codec_v1`.
//!
//! A payload is two streams: one tag byte per item, then the bytes the tags call for (address
//! deltas, varint fields). For an access the tag holds the kind, the size (4 bits for an
//! instruction fetch: x86 lengths 1..15; a power of two for data) and the number of address
//! bytes. Addresses are predicted: a fetch from the previous fetch plus its size, a data access
//! from the previous data address plus the previous data stride. A fetch stores its difference
//! from the prediction, a data access either nothing (the prediction is exact) or its difference
//! from the previous data address; differences are signed little-endian integers of 1..6 or 8
//! bytes. Events, thread changes and unusual sizes use escape tags with LEB128 fields.
//!
//! Decoding works on groups of 16 tags. A scan of the group (SSE2 compares on x86-64, a
//! portable 64-bit word-at-a-time scan elsewhere; `Decoder::set_scan` forces either, or no
//! group path at all, for tests) finds the run of plain accesses at its start and the data
//! bytes that run needs; the run is then decoded by a loop with no checks and no unpredictable
//! branches (one table lookup per tag, selects for the two predictor streams, each record a
//! copied 32-byte template plus its address). Everything else, and anything near the end of a
//! payload, goes through a fully checked path one item at a time. All state resets at a block
//! boundary.

use crate::record::{Access, Event, Record};
use std::hint::select_unpredictable;
use tlblab_types::{AccessKind, CoreId, ThreadId, VirtAddr};

/// Readable bytes a caller must provide after a payload (`buf.len() >= len + PAD`); their
/// value is irrelevant. (The tag scan reads 16 bytes at a time.)
pub const PAD: usize = 16;

// Escape tags: low five bits zero (an instruction fetch of "size 0"); the top three bits say what.
const ESC_THREAD: u8 = 0x00;
const ESC_EVENT: u8 = 0x20;
const ESC_FETCH: u8 = 0x40;

// Event opcodes (a varint after `ESC_EVENT`), as in version 1.
const OP_THREAD_START: u64 = 1;
const OP_THREAD_EXIT: u64 = 2;
const OP_CONTEXT_SWITCH: u64 = 3;
const OP_MIGRATE: u64 = 4;
const OP_MMAP: u64 = 5;
const OP_MUNMAP: u64 = 6;
const OP_MPROTECT: u64 = 7;
const OP_TASK_RELEASE: u64 = 8;
const OP_JOB_START: u64 = 9;
const OP_JOB_END: u64 = 10;
const OP_REGION: u64 = 11;
const OP_PHASE_BEGIN: u64 = 12;
const OP_PHASE_END: u64 = 13;
const OP_FLUSH: u64 = 14;
const OP_MAP_SHARED: u64 = 15;
const OP_TLB_LOCK: u64 = 16;
const OP_FLUSH_RANGE: u64 = 17;
const OP_PROCESS_EXIT: u64 = 18;
const OP_KERNEL_ENTRY: u64 = 19;
const OP_INDEPENDENT: u64 = 20;

/// Bytes of the address field for each address code `ac = tag >> 5`.
const ADDR_BYTES: [usize; 8] = [0, 1, 2, 3, 4, 5, 6, 8];

#[inline]
pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}
#[inline]
pub(super) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Sign-extends the low `n` bytes of `v` (n in 0..=8; 0 gives 0).
#[inline]
fn sext(v: u64, n: usize) -> u64 {
    if n == 0 {
        0
    } else {
        let sh = 64 - 8 * n as u32;
        (((v << sh) as i64) >> sh) as u64
    }
}

/// The address code for a signed difference that is not predicted: the fewest of 1..6 or 8
/// bytes that hold it as a two's-complement integer.
#[inline]
fn addr_code(d: i64) -> u8 {
    // Bits needed including the sign bit.
    let bits = 65 - (d ^ (d >> 63)).leading_zeros();
    let n = bits.div_ceil(8).max(1);
    if n <= 6 {
        n as u8
    } else {
        7
    }
}

/// The predictor state shared by encoder and decoder.
#[derive(Clone, Copy, Default, Debug)]
struct State {
    thread: u32,
    /// Predicted address of the next instruction fetch: the last fetch's address + size.
    ni: u64,
    /// Last data address and the stride to it from the data access before it.
    ld: u64,
    sd: u64,
}

/// Encodes records into one block payload.
#[derive(Default)]
pub struct Encoder {
    tags: Vec<u8>,
    data: Vec<u8>,
    /// The assembled payload (`payload()`).
    buf: Vec<u8>,
    st: State,
    pub records: u32,
    pub accesses: u32,
}

/// The opcode of an event (the same numbers in both payload versions, formats/trace.md §4.3).
pub(super) fn event_op(e: &Event) -> u64 {
    match e {
        Event::ThreadStart { .. } => OP_THREAD_START,
        Event::ThreadExit { .. } => OP_THREAD_EXIT,
        Event::ContextSwitch { .. } => OP_CONTEXT_SWITCH,
        Event::Migrate { .. } => OP_MIGRATE,
        Event::Mmap { .. } => OP_MMAP,
        Event::Munmap { .. } => OP_MUNMAP,
        Event::Mprotect { .. } => OP_MPROTECT,
        Event::TaskRelease { .. } => OP_TASK_RELEASE,
        Event::JobStart { .. } => OP_JOB_START,
        Event::JobEnd { .. } => OP_JOB_END,
        Event::Region { .. } => OP_REGION,
        Event::PhaseBegin { .. } => OP_PHASE_BEGIN,
        Event::PhaseEnd { .. } => OP_PHASE_END,
        Event::MapShared { .. } => OP_MAP_SHARED,
        Event::Flush { .. } => OP_FLUSH,
        Event::TlbLock { .. } => OP_TLB_LOCK,
        Event::FlushRange { .. } => OP_FLUSH_RANGE,
        Event::ProcessExit { .. } => OP_PROCESS_EXIT,
        Event::KernelEntry { .. } => OP_KERNEL_ENTRY,
        Event::Independent { .. } => OP_INDEPENDENT,
    }
}

/// An event's fields after its opcode, LEB128 varints in declaration order (both versions).
pub(super) fn put_event_fields(b: &mut Vec<u8>, e: &Event) {
    let fields: &[u64] = match *e {
        Event::ThreadStart { thread, process } => &[thread.0 as u64, process as u64],
        Event::ThreadExit { thread } => &[thread.0 as u64],
        Event::ProcessExit { process } => &[process as u64],
        Event::KernelEntry { process, path } => &[process as u64, path as u64],
        Event::Independent { thread, begin } => &[thread.0 as u64, begin as u64],
        Event::ContextSwitch { core, from, to } => &[core.0 as u64, from.0 as u64, to.0 as u64],
        Event::Migrate { thread, core } => &[thread.0 as u64, core.0 as u64],
        Event::Mmap {
            process,
            start,
            len,
            prot,
            page_shift,
        } => &[process as u64, start.0, len, prot as u64, page_shift as u64],
        Event::Munmap {
            process,
            start,
            len,
        } => &[process as u64, start.0, len],
        Event::Mprotect {
            process,
            start,
            len,
            prot,
        } => &[process as u64, start.0, len, prot as u64],
        Event::TaskRelease { task, job }
        | Event::JobStart { task, job }
        | Event::JobEnd { task, job } => &[task as u64, job as u64],
        Event::Region { region, start, len } => &[region as u64, start.0, len],
        Event::PhaseBegin { region } | Event::PhaseEnd { region } => &[region as u64],
        Event::MapShared {
            process,
            start,
            len,
            prot,
            page_shift,
            object,
        } => &[
            process as u64,
            start.0,
            len,
            prot as u64,
            page_shift as u64,
            object as u64,
        ],
        Event::Flush { core, what } => &[core.0 as u64, what as u64],
        Event::TlbLock {
            process,
            page,
            core,
            lock,
        } => &[process as u64, page.0, core.0 as u64, lock as u64],
        Event::FlushRange {
            process,
            start,
            len,
            what,
        } => &[process as u64, start.0, len, what as u64],
    };
    for &f in fields {
        put_varint(b, f);
    }
}

pub(super) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl Encoder {
    pub fn new() -> Self {
        Encoder::default()
    }

    /// Starts a new block: empties the buffer and resets the predictors.
    pub fn reset(&mut self) {
        self.tags.clear();
        self.data.clear();
        self.buf.clear();
        self.st = State::default();
        self.records = 0;
        self.accesses = 0;
    }

    /// The block payload of everything pushed since the last reset: varint(tag count), the
    /// tags, the data bytes.
    pub fn payload(&mut self) -> &[u8] {
        self.buf.clear();
        put_varint(&mut self.buf, self.tags.len() as u64);
        self.buf.extend_from_slice(&self.tags);
        self.buf.extend_from_slice(&self.data);
        &self.buf
    }

    #[inline]
    pub fn push(&mut self, r: &Record) {
        self.records += 1;
        match r {
            Record::Access(a) => self.push_access(a),
            Record::Event(e) => self.push_event(e),
        }
    }

    #[inline]
    fn push_access(&mut self, a: &Access) {
        self.accesses += 1;
        if a.thread.0 != self.st.thread {
            self.tags.push(ESC_THREAD);
            put_varint(&mut self.data, a.thread.0 as u64);
            self.st.thread = a.thread.0;
        }
        let addr = a.vaddr.0;
        let size = a.size;
        if a.kind == AccessKind::Instr {
            let d = addr.wrapping_sub(self.st.ni) as i64;
            if (1..=15).contains(&size) {
                let ac = if d == 0 { 0 } else { addr_code(d) };
                self.tags.push(((size as u8) << 1) | (ac << 5));
                self.data
                    .extend_from_slice(&(d as u64).to_le_bytes()[..ADDR_BYTES[ac as usize]]);
            } else {
                self.tags.push(ESC_FETCH);
                put_varint(&mut self.data, size as u64);
                put_varint(&mut self.data, zigzag(d));
            }
            self.st.ni = addr.wrapping_add(size as u64);
        } else {
            let store = (a.kind == AccessKind::Store) as u8;
            // Data sizes: powers of two 1..=64; code 7 = a varint after the address bytes.
            let sc: u8 = if size.is_power_of_two() && size <= 64 {
                size.trailing_zeros() as u8
            } else {
                7
            };
            let last = self.st.ld;
            let d = addr.wrapping_sub(last);
            let ac = if d == self.st.sd {
                0
            } else {
                addr_code(d as i64)
            };
            self.tags.push(1 | (store << 1) | (sc << 2) | (ac << 5));
            self.data
                .extend_from_slice(&d.to_le_bytes()[..ADDR_BYTES[ac as usize]]);
            if sc == 7 {
                put_varint(&mut self.data, size as u64);
            }
            self.st.sd = d;
            self.st.ld = addr;
        }
    }

    fn push_event(&mut self, e: &Event) {
        self.tags.push(ESC_EVENT);
        put_varint(&mut self.data, event_op(e));
        put_event_fields(&mut self.data, e);
    }
}

/// A decoding failure at a byte offset inside the raw (decompressed) payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub pos: usize,
    pub what: String,
}

/// Which implementation scans tag groups (a test hook: both must decode identically).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scan {
    /// The fastest available on this machine (SSE2 on x86-64, else `Word`).
    #[default]
    Auto,
    /// Portable 64-bit word-at-a-time scan.
    Word,
    /// One tag at a time through the fully checked path (no group fast path at all).
    Checked,
}

/// Decodes one block payload, resumably (a caller may ask for a few records at a time).
#[derive(Default, Clone, Debug)]
pub struct Decoder {
    st: State,
    /// Next tag, end of the tag stream, next data byte.
    tp: usize,
    tend: usize,
    dp: usize,
    remaining: u32,
    scan: Scan,
}

/// What a plain access tag says, precomputed for all 256 values.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct TagInfo {
    /// Shift that sign-extends the `n` address bytes ending at the read position (64 - 8n);
    /// 0 when n = 0 (the value is then masked away by `keep`).
    sh: u8,
    /// Bytes of the address field.
    n: u8,
    /// 1 for a load or store (data stream), 0 for a fetch.
    data: u8,
    /// 1 when the address is the data prediction (last data address + stride).
    pred: u8,
    size: u32,
    /// All ones when the tag carries address bytes, else 0.
    keep: u64,
    kind: AccessKind,
}

const fn tag_table() -> [TagInfo; 256] {
    let mut t = [TagInfo {
        sh: 0,
        n: 0,
        data: 0,
        pred: 0,
        size: 0,
        keep: 0,
        kind: AccessKind::Instr,
    }; 256];
    let mut i = 0;
    while i < 256 {
        let ac = i >> 5;
        let n = ADDR_BYTES[ac];
        let sh = if n == 0 { 0 } else { 64 - 8 * n as u8 };
        let keep = if n == 0 { 0 } else { u64::MAX };
        if i & 1 == 0 {
            let size = (i >> 1) & 15;
            if size != 0 {
                t[i] = TagInfo {
                    sh,
                    n: n as u8,
                    data: 0,
                    pred: 0,
                    size: size as u32,
                    keep,
                    kind: AccessKind::Instr,
                };
            }
        } else {
            let sc = (i >> 2) & 7;
            if sc != 7 {
                t[i] = TagInfo {
                    sh,
                    n: n as u8,
                    data: 1,
                    pred: (ac == 0) as u8,
                    size: 1 << sc,
                    keep,
                    kind: if i & 2 == 0 {
                        AccessKind::Load
                    } else {
                        AccessKind::Store
                    },
                };
            }
        }
        i += 1;
    }
    t
}

static TAG: [TagInfo; 256] = TAG_CONST;

/// The record of each tag with address 0 and thread 0 (a dummy access for tags that are not
/// plain): the group path copies it whole, then sets the address and the thread.
static TEMPLATE: [Record; 256] = {
    let mut t = [Record::Access(Access::new(ThreadId(0), AccessKind::Instr, VirtAddr(0), 0)); 256];
    let mut i = 0;
    while i < 256 {
        t[i] = Record::Access(Access::new(
            ThreadId(0),
            TAG_CONST[i].kind,
            VirtAddr(0),
            TAG_CONST[i].size,
        ));
        i += 1;
    }
    t
};
const TAG_CONST: [TagInfo; 256] = tag_table();

#[cfg(test)]
/// A plain tag: an access whose size is in the tag (not an escape, not a varint data size).
#[inline]
fn is_plain(t: u8) -> bool {
    t & 0x1f != 0 && t & 0x1d != 0x1d
}

const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
const HI: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// Word scan of 8 tags (little-endian, lane i = byte i): the high bit of each byte that is not a
/// plain tag, and each lane's address bytes in its byte.
#[inline(always)]
fn scan_word(w: u64) -> (u64, u64) {
    // Bytes are at most 0x1f after masking, so adding 0x7f sets a byte's high bit exactly when
    // it is non-zero, with no carry into the next byte.
    let a = w & (0x1f * ONES);
    let esc = !(a.wrapping_add(LO7)) & HI;
    let c = (w & (0x1d * ONES)) ^ (0x1d * ONES);
    let vsz = !(c.wrapping_add(LO7)) & HI;
    let ac = (w >> 5) & (0x07 * ONES);
    // n = ac, except 8 for ac = 7: add bit 3 of ac + 1.
    let n = ac + (((ac + ONES) >> 3) & ONES);
    (esc | vsz, n)
}

/// Sum of the low `k` bytes (k in 0..=8) of a word of byte counts (each at most 8).
#[inline(always)]
fn sum_low(n: u64, k: usize) -> usize {
    let m = if k >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * k)) - 1
    };
    ((n & m).wrapping_mul(ONES) >> 56) as usize
}

/// Scans the 16 tags at `g`: how many plain tags lead the group (0..=16), and two words holding
/// each tag's address-field length in its byte (lanes 0..8, 8..16), for `run_bytes`.
#[inline(always)]
fn scan_group_word(g: &[u8; 16]) -> (usize, u64, u64) {
    let w0 = u64::from_le_bytes(g[..8].try_into().unwrap());
    let w1 = u64::from_le_bytes(g[8..].try_into().unwrap());
    let (b0, n0) = scan_word(w0);
    let (b1, n1) = scan_word(w1);
    let run = if b0 != 0 {
        b0.trailing_zeros() as usize / 8
    } else if b1 != 0 {
        8 + b1.trailing_zeros() as usize / 8
    } else {
        16
    };
    (run, n0, n1)
}

/// Address bytes used by the first `r` (0..=16) tags of a scanned group.
#[inline(always)]
fn run_bytes(n0: u64, n1: u64, r: usize) -> usize {
    if r <= 8 {
        sum_low(n0, r)
    } else {
        sum_low(n0, 8) + sum_low(n1, r - 8)
    }
}

/// SSE2 variant of the run search (SSE2 is part of x86-64, so no runtime detection is needed);
/// the byte counts come from the word scan, which is cheap next to the compare.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn scan_group_sse2(g: &[u8; 16]) -> (usize, u64, u64) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is always available on x86-64; the load reads exactly the 16 bytes of `g`
    // (unaligned load allowed).
    let mask = unsafe {
        let v = _mm_loadu_si128(g.as_ptr() as *const __m128i);
        let esc = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(0x1f)), _mm_setzero_si128());
        let vsz = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(0x1d)), _mm_set1_epi8(0x1d));
        _mm_movemask_epi8(_mm_or_si128(esc, vsz)) as u32
    };
    let run = (mask | 0x1_0000).trailing_zeros() as usize;
    let w0 = u64::from_le_bytes(g[..8].try_into().unwrap());
    let w1 = u64::from_le_bytes(g[8..].try_into().unwrap());
    let ac0 = (w0 >> 5) & (0x07 * ONES);
    let ac1 = (w1 >> 5) & (0x07 * ONES);
    (
        run,
        ac0 + (((ac0 + ONES) >> 3) & ONES),
        ac1 + (((ac1 + ONES) >> 3) & ONES),
    )
}

impl Decoder {
    /// Starts decoding the payload `buf[..len]`, which holds `records` records: reads the tag
    /// stream's length.
    pub fn start(&mut self, buf: &[u8], len: usize, records: u32) -> Result<(), DecodeError> {
        self.st = State::default();
        self.remaining = records;
        let mut p = 0usize;
        let ntags = read_varint(buf, &mut p, len).ok_or_else(|| DecodeError {
            pos: 0,
            what: "payload too short for its tag count".into(),
        })?;
        if ntags > (len - p) as u64 || ntags < records as u64 {
            self.remaining = 0;
            return Err(DecodeError {
                pos: 0,
                what: format!(
                    "tag count {ntags} does not fit the {len}-byte payload of {records} records"
                ),
            });
        }
        self.tp = p;
        self.tend = p + ntags as usize;
        self.dp = self.tend;
        Ok(())
    }

    /// Test hook: forces a scan implementation (`Scan::Auto` by default).
    pub fn set_scan(&mut self, scan: Scan) {
        self.scan = scan;
    }

    /// Forgets the current payload (nothing remains to decode).
    pub fn clear(&mut self) {
        self.remaining = 0;
    }

    pub fn remaining(&self) -> u32 {
        self.remaining
    }

    /// Appends up to `max` records from `buf[..len]` (the payload given to `start`) to `out`.
    /// `buf` must have `PAD` readable bytes after `len` (their value is irrelevant). When the
    /// last record is decoded, both streams must be consumed exactly.
    pub fn decode(
        &mut self,
        buf: &[u8],
        len: usize,
        out: &mut Vec<Record>,
        max: usize,
    ) -> Result<usize, DecodeError> {
        match self.scan {
            Scan::Auto => self.decode_with::<1>(buf, len, out, max),
            Scan::Word => self.decode_with::<0>(buf, len, out, max),
            Scan::Checked => self.decode_with::<2>(buf, len, out, max),
        }
    }

    /// `SCAN`: 0 word scan, 1 the best scan for the target, 2 no group path.
    #[inline(always)]
    fn decode_with<const SCAN: u8>(
        &mut self,
        buf: &[u8],
        len: usize,
        out: &mut Vec<Record>,
        max: usize,
    ) -> Result<usize, DecodeError> {
        assert!(buf.len() >= len + PAD, "payload buffer must be padded");
        let buf = &buf[..len + PAD];
        let n = (self.remaining as usize).min(max);
        out.reserve(n);
        let mut done = 0usize;
        // The group path reads each access's address as the 8 bytes that end at its field, so
        // it needs 8 bytes before the data stream (the tags and the tag count are there).
        let fast = SCAN != 2 && self.tend >= 8;
        while done < n {
            if fast {
                let k = if self.st.thread == 0 {
                    self.run_groups::<SCAN, true>(buf, len, out, n - done)
                } else {
                    self.run_groups::<SCAN, false>(buf, len, out, n - done)
                };
                done += k;
                if done >= n {
                    break;
                }
            }
            // One item, with every check.
            match self.decode_one(buf, len, out) {
                Ok(true) => done += 1,
                Ok(false) => {}
                Err(e) => {
                    self.remaining -= done as u32;
                    return Err(e);
                }
            }
        }
        self.remaining -= done as u32;
        if self.remaining == 0 && (self.tp != self.tend || self.dp != len) {
            return Err(DecodeError {
                pos: self.dp,
                what: format!(
                    "{} tag and {} data bytes left over after the block's last record",
                    self.tend - self.tp,
                    len - self.dp
                ),
            });
        }
        Ok(done)
    }

    /// Decodes groups of plain access tags from `tp` on, at most `room` records, into `out`'s
    /// spare capacity (at least `room` records reserved); stops where a group does not start
    /// with a plain tag or its address fields would run past the payload's end, leaving that
    /// to the checked path. Returns the records written.
    /// `THREAD0`: the thread is 0, as in the templates (every Lackey capture), so the thread
    /// needs no store of its own.
    #[inline(never)]
    fn run_groups<const SCAN: u8, const THREAD0: bool>(
        &mut self,
        buf: &[u8],
        len: usize,
        out: &mut Vec<Record>,
        room: usize,
    ) -> usize {
        debug_assert!(out.capacity() - out.len() >= room && self.tend >= 8);
        debug_assert!(buf.len() >= len + PAD && self.tend <= len);
        debug_assert!(!THREAD0 || self.st.thread == 0);
        let State { thread, ni, ld, sd } = self.st;
        let (mut ni, mut ld, mut sd) = (ni, ld, sd);
        let thread = ThreadId(thread);
        let (mut tp, tend, mut dp) = (self.tp, self.tend, self.dp);
        let mut done = 0usize;
        while tp < tend && done < room {
            // In bounds: tp < tend <= len and buf holds PAD (16) bytes past len.
            let g: &[u8; 16] = buf[tp..tp + 16].try_into().unwrap();
            #[cfg(target_arch = "x86_64")]
            let (run, n0, n1) = if SCAN == 1 {
                scan_group_sse2(g)
            } else {
                scan_group_word(g)
            };
            #[cfg(not(target_arch = "x86_64"))]
            let (run, n0, n1) = scan_group_word(g);
            let r = run.min(tend - tp).min(room - done);
            if r == 0 || dp + run_bytes(n0, n1, r) > len {
                break;
            }
            // SAFETY: `tp + r <= tend <= len`, so the `r` tags read are in bounds; they are
            // plain (the scan), and their address fields, read in order from `dp`, end at or
            // before `len` (checked just above). Each read covers the 8 bytes ending at its
            // field's end, which start at `dp - 8 + n >= tend - 8 >= 0` (the caller requires
            // `tend >= 8`), so every read is inside `buf`. `done + r <= room` records of
            // reserved capacity are written, and `set_len` follows for exactly those. Each is
            // first a byte copy of a `TEMPLATE` entry, all of which are `Record::Access`
            // values, so it is a valid `Record::Access` and the `Event` arm is unreachable.
            unsafe {
                let base = buf.as_ptr();
                let mut dptr = base.add(dp);
                let mut tptr = base.add(tp);
                let tlast = tptr.add(r);
                let mut dst = out.as_mut_ptr().add(out.len());
                while tptr < tlast {
                    let t = *tptr;
                    let info = *TAG.get_unchecked(t as usize);
                    tptr = tptr.add(1);
                    dptr = dptr.add(info.n as usize);
                    let raw = (dptr.sub(8) as *const u64).read_unaligned();
                    let delta = (((raw as i64) >> info.sh) as u64) & info.keep;
                    // Fetches and data accesses interleave unpredictably in real traces:
                    // selects, never branches. Both candidates are computed, so each
                    // predictor's update is one add and one select long.
                    let data = info.data != 0;
                    let fetch_addr = ni.wrapping_add(delta);
                    let next_fetch = ni.wrapping_add(delta.wrapping_add(info.size as u64));
                    let dd = select_unpredictable(info.pred != 0, sd, delta);
                    let data_addr = ld.wrapping_add(dd);
                    let addr = select_unpredictable(data, data_addr, fetch_addr);
                    ni = select_unpredictable(data, ni, next_fetch);
                    sd = select_unpredictable(data, dd, sd);
                    ld = select_unpredictable(data, data_addr, ld);
                    // The tag's record (kind and size set) copied as 32 raw bytes, then its
                    // address and thread: fewer stores than writing it field by field.
                    std::ptr::copy_nonoverlapping(
                        TEMPLATE.as_ptr().add(t as usize) as *const u8,
                        dst as *mut u8,
                        std::mem::size_of::<Record>(),
                    );
                    match &mut *dst {
                        Record::Access(a) => {
                            a.vaddr = VirtAddr(addr);
                            if !THREAD0 {
                                a.thread = thread;
                            }
                        }
                        Record::Event(_) => std::hint::unreachable_unchecked(),
                    }
                    dst = dst.add(1);
                }
                out.set_len(out.len() + r);
                dp = dptr.offset_from(base) as usize;
            }
            tp += r;
            done += r;
            if r < 16 {
                break;
            }
        }
        self.st.ni = ni;
        self.st.ld = ld;
        self.st.sd = sd;
        self.tp = tp;
        self.dp = dp;
        done
    }

    /// Decodes one item with every bounds check. Ok(true): a record was appended; Ok(false): a
    /// thread change (no record).
    fn decode_one(
        &mut self,
        buf: &[u8],
        len: usize,
        out: &mut Vec<Record>,
    ) -> Result<bool, DecodeError> {
        let tpos = self.tp;
        if tpos >= self.tend {
            return Err(DecodeError {
                pos: tpos,
                what: "tag stream ends before the block's last record".into(),
            });
        }
        let t = buf[tpos];
        self.tp += 1;
        let mut dp = self.dp;
        let err = |pos: usize, what: String| Err(DecodeError { pos, what });
        if t & 0x1f == 0 {
            match t {
                ESC_THREAD => match read_varint(buf, &mut dp, len) {
                    Some(v) if v <= u32::MAX as u64 => {
                        self.st.thread = v as u32;
                        self.dp = dp;
                        return Ok(false);
                    }
                    _ => {
                        return err(
                            self.dp,
                            "thread id overruns the payload or exceeds 32 bits".into(),
                        )
                    }
                },
                ESC_EVENT => {
                    let ev = decode_event(buf, &mut dp, len);
                    match ev {
                        Ok(ev) => {
                            self.dp = dp;
                            out.push(Record::Event(ev));
                            return Ok(true);
                        }
                        Err(what) => return err(dp, what),
                    }
                }
                ESC_FETCH => {
                    let size =
                        match read_varint(buf, &mut dp, len) {
                            Some(v) if v <= u32::MAX as u64 => v,
                            _ => return err(
                                self.dp,
                                "bad fetch size (varint overruns the payload or exceeds 32 bits)"
                                    .into(),
                            ),
                        };
                    let Some(z) = read_varint(buf, &mut dp, len) else {
                        return err(dp, "fetch address overruns the payload".into());
                    };
                    let addr = self.st.ni.wrapping_add(unzigzag(z) as u64);
                    self.st.ni = addr.wrapping_add(size);
                    self.dp = dp;
                    out.push(Record::Access(Access {
                        thread: ThreadId(self.st.thread),
                        kind: AccessKind::Instr,
                        vaddr: VirtAddr(addr),
                        size: size as u32,
                    }));
                    return Ok(true);
                }
                _ => {
                    return err(
                        tpos,
                        format!("unknown escape tag {t:#04x} (expected 0x00, 0x20 or 0x40)"),
                    )
                }
            }
        }
        let ac = (t >> 5) as usize;
        let nb = ADDR_BYTES[ac];
        if dp + nb > len {
            return err(
                dp,
                format!(
                    "an address runs past the end of the payload ({nb} bytes needed, {} left)",
                    len - dp
                ),
            );
        }
        let mut b = [0u8; 8];
        b[..nb].copy_from_slice(&buf[dp..dp + nb]);
        dp += nb;
        let delta = sext(u64::from_le_bytes(b), nb);
        let (kind, addr, size);
        if t & 1 == 0 {
            kind = AccessKind::Instr;
            size = ((t >> 1) & 15) as u64;
            addr = self.st.ni.wrapping_add(delta);
            self.st.ni = addr.wrapping_add(size);
        } else {
            kind = if t & 2 == 0 {
                AccessKind::Load
            } else {
                AccessKind::Store
            };
            let sc = (t >> 2) & 7;
            size = if sc == 7 {
                match read_varint(buf, &mut dp, len) {
                    Some(v) if v <= u32::MAX as u64 => v,
                    _ => {
                        return err(
                            dp,
                            "bad access size (varint overruns the payload or exceeds 32 bits)"
                                .into(),
                        )
                    }
                }
            } else {
                1 << sc
            };
            let d = if ac == 0 { self.st.sd } else { delta };
            addr = self.st.ld.wrapping_add(d);
            self.st.sd = d;
            self.st.ld = addr;
        }
        self.dp = dp;
        out.push(Record::Access(Access {
            thread: ThreadId(self.st.thread),
            kind,
            vaddr: VirtAddr(addr),
            size: size as u32,
        }));
        Ok(true)
    }
}

/// An event after `ESC_EVENT`: its opcode and fields, LEB128 varints.
fn decode_event(buf: &[u8], p: &mut usize, len: usize) -> Result<Event, String> {
    let op = read_varint(buf, p, len).ok_or("event field opcode overruns the payload")?;
    decode_event_fields(op, buf, p, len)?
        .ok_or_else(|| format!("unknown event opcode {op} (expected 1..=18)"))
}

/// The fields of an event with opcode `op` (both payload versions), checked against their
/// types' ranges; None when `op` names no event.
pub(super) fn decode_event_fields(
    op: u64,
    buf: &[u8],
    p: &mut usize,
    len: usize,
) -> Result<Option<Event>, String> {
    let mut f = |max: u64, name: &str| -> Result<u64, String> {
        match read_varint(buf, p, len) {
            Some(v) if v <= max => Ok(v),
            Some(v) => Err(format!(
                "event field {name} = {v} is out of range (max {max})"
            )),
            None => Err(format!("event field {name} overruns the payload")),
        }
    };
    const U32: u64 = u32::MAX as u64;
    const U16: u64 = u16::MAX as u64;
    const U8: u64 = u8::MAX as u64;
    const U64: u64 = u64::MAX;
    Ok(Some(match op {
        OP_THREAD_START => Event::ThreadStart {
            thread: ThreadId(f(U32, "thread")? as u32),
            process: f(U32, "process")? as u32,
        },
        OP_THREAD_EXIT => Event::ThreadExit {
            thread: ThreadId(f(U32, "thread")? as u32),
        },
        OP_PROCESS_EXIT => Event::ProcessExit {
            process: f(U32, "process")? as u32,
        },
        OP_KERNEL_ENTRY => Event::KernelEntry {
            process: f(U32, "process")? as u32,
            path: f(crate::record::kernel_entry::MAX as u64, "path")? as u8,
        },
        OP_INDEPENDENT => Event::Independent {
            thread: ThreadId(f(U32, "thread")? as u32),
            begin: f(1, "begin")? != 0,
        },
        OP_CONTEXT_SWITCH => Event::ContextSwitch {
            core: CoreId(f(U16, "core")? as u16),
            from: ThreadId(f(U32, "from")? as u32),
            to: ThreadId(f(U32, "to")? as u32),
        },
        OP_MIGRATE => Event::Migrate {
            thread: ThreadId(f(U32, "thread")? as u32),
            core: CoreId(f(U16, "core")? as u16),
        },
        OP_MMAP => Event::Mmap {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            prot: f(U8, "prot")? as u8,
            page_shift: f(63, "page_shift")? as u8,
        },
        OP_MUNMAP => Event::Munmap {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
        },
        OP_MPROTECT => Event::Mprotect {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            prot: f(U8, "prot")? as u8,
        },
        OP_TASK_RELEASE => Event::TaskRelease {
            task: f(U32, "task")? as u32,
            job: f(U32, "job")? as u32,
        },
        OP_JOB_START => Event::JobStart {
            task: f(U32, "task")? as u32,
            job: f(U32, "job")? as u32,
        },
        OP_JOB_END => Event::JobEnd {
            task: f(U32, "task")? as u32,
            job: f(U32, "job")? as u32,
        },
        OP_REGION => Event::Region {
            region: f(U32, "region")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
        },
        OP_PHASE_BEGIN => Event::PhaseBegin {
            region: f(U32, "region")? as u32,
        },
        OP_PHASE_END => Event::PhaseEnd {
            region: f(U32, "region")? as u32,
        },
        OP_MAP_SHARED => Event::MapShared {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            prot: f(U8, "prot")? as u8,
            page_shift: f(63, "page_shift")? as u8,
            object: f(U32, "object")? as u32,
        },
        OP_FLUSH => Event::Flush {
            core: CoreId(f(U16, "core")? as u16),
            what: f(U8, "what")? as u8,
        },
        OP_TLB_LOCK => Event::TlbLock {
            process: f(U32, "process")? as u32,
            page: VirtAddr(f(U64, "page")?),
            core: CoreId(f(U16, "core")? as u16),
            lock: f(1, "lock")? != 0,
        },
        OP_FLUSH_RANGE => Event::FlushRange {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            what: f(U8, "what")? as u8,
        },
        _ => return Ok(None),
    }))
}

/// LEB128, at most 10 bytes, never reading at or past `len`.
#[inline]
pub(super) fn read_varint(buf: &[u8], p: &mut usize, len: usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        if *p >= len || shift > 63 {
            return None;
        }
        let b = buf[*p];
        *p += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn encode(recs: &[Record]) -> (Vec<u8>, usize, u32) {
        let mut e = Encoder::new();
        for r in recs {
            e.push(r);
        }
        let mut buf = e.payload().to_vec();
        let len = buf.len();
        buf.resize(len + PAD, 0xAA);
        (buf, len, e.records)
    }

    fn decode_all(buf: &[u8], len: usize, records: u32, scan: Scan) -> Vec<Record> {
        let mut d = Decoder::default();
        d.set_scan(scan);
        d.start(buf, len, records).unwrap();
        let mut out = Vec::new();
        // Decode in uneven pieces to exercise resumption.
        let mut step = 1;
        while d.remaining() > 0 {
            d.decode(buf, len, &mut out, step).unwrap();
            step = (step * 3 + 1) % 5000;
        }
        out
    }

    /// Round trip through every scan implementation; all must agree.
    fn round_trip(recs: &[Record]) -> Vec<Record> {
        let (buf, len, n) = encode(recs);
        let a = decode_all(&buf, len, n, Scan::Auto);
        let w = decode_all(&buf, len, n, Scan::Word);
        let c = decode_all(&buf, len, n, Scan::Checked);
        assert_eq!(a, w, "SIMD scan and word scan differ");
        assert_eq!(a, c, "group path and checked path differ");
        a
    }

    #[test]
    fn addr_codes_are_minimal_signed_widths() {
        for (d, ac) in [
            (0i64, 1u8),
            (127, 1),
            (-128, 1),
            (128, 2),
            (-129, 2),
            (1 << 47, 7),
            ((1 << 47) - 1, 6),
            (-(1 << 47), 6),
            (i64::MIN, 7),
            (i64::MAX, 7),
        ] {
            assert_eq!(addr_code(d), ac, "{d}");
            let n = ADDR_BYTES[ac as usize];
            assert_eq!(sext(d as u64, n) as i64, d);
        }
    }

    #[test]
    fn word_scan_matches_the_definition() {
        let mut g = [0u8; 16];
        let mut x = 12345u64;
        for _ in 0..20_000 {
            for b in g.iter_mut() {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Mostly plain tags, so runs are long.
                *b = (x >> 56) as u8;
                if *b & 0x1f == 0 && x & 0x100 != 0 {
                    *b |= 2;
                }
            }
            let run = g.iter().take_while(|&&t| is_plain(t)).count();
            for (name, f) in [
                (
                    "word",
                    scan_group_word as fn(&[u8; 16]) -> (usize, u64, u64),
                ),
                #[cfg(target_arch = "x86_64")]
                ("sse2", scan_group_sse2),
            ] {
                let (r, n0, n1) = f(&g);
                assert_eq!(r, run, "{name} {g:02x?}");
                for k in 0..=16 {
                    let want: usize = g[..k].iter().map(|&t| ADDR_BYTES[(t >> 5) as usize]).sum();
                    assert_eq!(run_bytes(n0, n1, k), want, "{name} {k} {g:02x?}");
                }
            }
        }
    }

    #[test]
    fn sequential_code_and_strided_data_cost_one_byte_each() {
        let mut recs = Vec::new();
        for i in 0..1000u64 {
            recs.push(Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Instr,
                VirtAddr(0x400000 + 4 * i),
                4,
            )));
            recs.push(Record::Access(Access::new(
                ThreadId(0),
                AccessKind::Load,
                VirtAddr(0x1000_0000 + 4096 * i),
                8,
            )));
        }
        let (_, n, _) = encode(&recs);
        assert!(
            n < recs.len() + 20,
            "{} bytes for {} records",
            n,
            recs.len()
        );
        assert_eq!(round_trip(&recs), recs);
    }

    /// Every event kind, extreme field values and odd access sizes: the records both payload
    /// versions must round-trip (codec_v1's tests use it too).
    pub(in crate::format) fn every_event_and_odd_sizes() -> Vec<Record> {
        vec![
            Record::Event(Event::ThreadStart {
                thread: ThreadId(7),
                process: 3,
            }),
            Record::Access(Access::new(
                ThreadId(7),
                AccessKind::Store,
                VirtAddr(u64::MAX - 3),
                3,
            )),
            Record::Access(Access::new(ThreadId(7), AccessKind::Load, VirtAddr(0), 0)),
            Record::Access(Access::new(
                ThreadId(u32::MAX),
                AccessKind::Instr,
                VirtAddr(1 << 63),
                4096,
            )),
            Record::Access(Access::new(ThreadId(1), AccessKind::Instr, VirtAddr(5), 0)),
            Record::Access(Access::new(ThreadId(1), AccessKind::Instr, VirtAddr(5), 15)),
            Record::Access(Access::new(
                ThreadId(1),
                AccessKind::Instr,
                VirtAddr(20),
                16,
            )),
            Record::Event(Event::ContextSwitch {
                core: CoreId(65535),
                from: ThreadId(1),
                to: ThreadId(2),
            }),
            Record::Event(Event::Migrate {
                thread: ThreadId(1),
                core: CoreId(3),
            }),
            Record::Event(Event::Mmap {
                process: 1,
                start: VirtAddr(0x7fff_0000_0000),
                len: 1 << 30,
                prot: 7,
                page_shift: 21,
            }),
            Record::Event(Event::Munmap {
                process: 1,
                start: VirtAddr(0x1000),
                len: 4096,
            }),
            Record::Event(Event::Mprotect {
                process: 1,
                start: VirtAddr(0x1000),
                len: 4096,
                prot: 1,
            }),
            Record::Event(Event::TaskRelease { task: 1, job: 2 }),
            Record::Event(Event::JobStart { task: 1, job: 2 }),
            Record::Event(Event::JobEnd { task: 1, job: 2 }),
            Record::Event(Event::Region {
                region: 0,
                start: VirtAddr(0x4000),
                len: 8192,
            }),
            Record::Event(Event::PhaseBegin { region: 0 }),
            Record::Event(Event::PhaseEnd { region: 0 }),
            Record::Event(Event::Flush {
                core: CoreId(0),
                what: 3,
            }),
            Record::Event(Event::MapShared {
                process: 2,
                start: VirtAddr(0x40_0000),
                len: 8192,
                prot: 5,
                page_shift: 12,
                object: 9,
            }),
            Record::Event(Event::TlbLock {
                process: 0,
                page: VirtAddr(0xbeff_f000),
                core: crate::record::ALL_CORES,
                lock: true,
            }),
            Record::Event(Event::TlbLock {
                process: 3,
                page: VirtAddr(0x10_0000),
                core: CoreId(2),
                lock: false,
            }),
            Record::Event(Event::FlushRange {
                process: 3,
                start: VirtAddr(0x0180_3000),
                len: 4096,
                what: 3,
            }),
            Record::Event(Event::ThreadExit {
                thread: ThreadId(7),
            }),
        ]
    }

    #[test]
    fn every_event_and_odd_sizes_round_trip() {
        let mut recs = every_event_and_odd_sizes();
        assert_eq!(round_trip(&recs), recs);
        // Long enough for the group path too (tend >= 8), events in the middle of groups.
        let copy = recs.clone();
        for _ in 0..5 {
            recs.extend_from_slice(&copy);
        }
        assert_eq!(round_trip(&recs), recs);
    }

    #[test]
    fn truncated_payload_is_an_error_not_a_panic() {
        let recs: Vec<Record> = (0..40)
            .map(|i| {
                Record::Access(Access::new(
                    ThreadId(0),
                    AccessKind::Load,
                    VirtAddr(0x1234_5678_9abc + i * 77_777),
                    8,
                ))
            })
            .collect();
        for scan in [Scan::Auto, Scan::Word, Scan::Checked] {
            let (mut buf, len, n) = encode(&recs);
            let len = len - 2;
            buf.truncate(len);
            buf.resize(len + PAD, 0);
            let mut d = Decoder::default();
            d.set_scan(scan);
            d.start(&buf, len, n).unwrap();
            let err = d.decode(&buf, len, &mut Vec::new(), 100).unwrap_err();
            assert!(err.what.contains("past the end"), "{err:?}");
        }
    }

    #[test]
    fn unknown_escape_and_opcode_are_named() {
        let mut buf = vec![1, 0x60];
        buf.resize(2 + PAD, 0);
        let mut d = Decoder::default();
        d.start(&buf, 2, 1).unwrap();
        let err = d.decode(&buf, 2, &mut Vec::new(), 1).unwrap_err();
        assert!(err.what.contains("unknown escape tag 0x60"), "{err:?}");
        let mut buf = vec![1, ESC_EVENT, 60];
        buf.resize(3 + PAD, 0);
        d.start(&buf, 3, 1).unwrap();
        let err = d.decode(&buf, 3, &mut Vec::new(), 1).unwrap_err();
        assert!(err.what.contains("unknown event opcode 60"), "{err:?}");
    }

    #[test]
    fn leftover_bytes_are_an_error() {
        let recs = vec![Record::Access(Access::load(0x1000)); 30];
        let (mut buf, len, n) = encode(&recs);
        buf.insert(len, 7);
        let mut d = Decoder::default();
        d.start(&buf, len + 1, n).unwrap();
        let err = d.decode(&buf, len + 1, &mut Vec::new(), 100).unwrap_err();
        assert!(err.what.contains("left over"), "{err:?}");
    }

    /// A long stream shaped like a Lackey capture (runs of sequential fetches with branches,
    /// loads and stores with mixed strides and jumps, long fetches), with a thread change or an
    /// event now and then: the group path handles almost all of it.
    fn lackey_like(n: usize, seed: u64) -> Vec<Record> {
        let mut x = seed;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut v = Vec::with_capacity(n);
        let (mut pc, mut sp, mut heap) = (0x40_1000u64, 0x001f_ff00_0000_u64, 0x5555_0000u64);
        let mut thread = 0;
        while v.len() < n {
            let r = next() % 1000;
            let size = [1u32, 2, 3, 3, 4, 5, 6, 7, 8, 11, 15][(next() % 11) as usize];
            v.push(Record::Access(Access::new(
                ThreadId(thread),
                AccessKind::Instr,
                VirtAddr(pc),
                size,
            )));
            pc += size as u64;
            if r < 100 {
                pc = 0x40_1000 + next() % (1 << 20);
            }
            if r % 3 == 0 {
                let (kind, addr) = match r % 4 {
                    0 => (AccessKind::Load, sp - 8 * (next() % 16)),
                    1 => (AccessKind::Store, sp - 8 * (next() % 16)),
                    2 => {
                        heap += 8;
                        (AccessKind::Load, heap)
                    }
                    _ => (AccessKind::Store, 0x7f00_0000_0000 + next() % (1 << 30)),
                };
                let size = [1u32, 4, 8, 8, 16, 32, 3][(next() % 7) as usize];
                v.push(Record::Access(Access::new(
                    ThreadId(thread),
                    kind,
                    VirtAddr(addr),
                    size,
                )));
            }
            if r == 999 {
                sp -= 4096;
                v.push(Record::Event(Event::PhaseBegin { region: 1 }));
            }
            if r == 998 {
                thread = (thread + 1) % 3;
            }
        }
        v
    }

    #[test]
    fn a_long_capture_like_stream_round_trips_through_every_path() {
        let recs = lackey_like(200_000, 7);
        assert_eq!(round_trip(&recs), recs);
    }

    #[test]
    fn any_truncation_or_corruption_is_an_error_or_records_never_a_panic() {
        let recs = lackey_like(300, 3);
        let (buf, len, n) = encode(&recs);
        for cut in 0..len {
            for scan in [Scan::Auto, Scan::Word, Scan::Checked] {
                let mut b = buf[..cut].to_vec();
                b.resize(cut + PAD, 0xff);
                let mut d = Decoder::default();
                d.set_scan(scan);
                if d.start(&b, cut, n).is_ok() {
                    let mut out = Vec::new();
                    while d.remaining() > 0 {
                        if d.decode(&b, cut, &mut out, 50).is_err() {
                            break;
                        }
                    }
                }
            }
        }
        // Flipped bytes: every path must agree on the records or on failing.
        for pos in 0..len {
            let mut b = buf.clone();
            b[pos] ^= 0x5a;
            let res: Vec<Result<Vec<Record>, String>> = [Scan::Auto, Scan::Word, Scan::Checked]
                .iter()
                .map(|&scan| {
                    let mut d = Decoder::default();
                    d.set_scan(scan);
                    d.start(&b, len, n).map_err(|e| e.what)?;
                    let mut out = Vec::new();
                    while d.remaining() > 0 {
                        d.decode(&b, len, &mut out, 64).map_err(|e| e.what)?;
                    }
                    Ok(out)
                })
                .collect();
            assert_eq!(res[0].is_ok(), res[2].is_ok(), "flip at {pos}");
            assert_eq!(res[1].is_ok(), res[2].is_ok(), "flip at {pos}");
            if let (Ok(a), Ok(w), Ok(c)) = (&res[0], &res[1], &res[2]) {
                assert_eq!(a, c);
                assert_eq!(w, c);
            }
        }
    }

    use proptest::prelude::*;

    fn kind(k: u8) -> AccessKind {
        [AccessKind::Instr, AccessKind::Load, AccessKind::Store][k as usize]
    }

    fn arb_record() -> impl Strategy<Value = Record> {
        prop_oneof![
            // Anything: any thread, address and size (page crossings, huge jumps, varint sizes).
            3 => (0u32..4, 0u8..3, any::<u64>(), prop_oneof![Just(1u32), Just(4), Just(8), 0u32..20, any::<u32>()]).prop_map(|(t, k, a, s)| {
                Record::Access(Access::new(ThreadId(t), kind(k), VirtAddr(a), s))
            }),
            // Nearby addresses and table sizes: the group path.
            8 => (0u8..3, 0u64..1_000_000, 1u32..16).prop_map(|(k, a, s)| {
                let size = if k == 0 { s } else { 1 << (s % 7) };
                Record::Access(Access::new(ThreadId(0), kind(k), VirtAddr(0x5555_0000 + a * 8 - 4), size))
            }),
            // Addresses near page boundaries and near the ends of the address space.
            2 => (0u8..3, 0u64..64, any::<bool>(), prop_oneof![Just(8u32), Just(64), Just(4096)]).prop_map(|(k, a, hi, s)| {
                let base = if hi { u64::MAX - 8191 } else { 0x7000_0000 };
                Record::Access(Access::new(ThreadId(0), kind(k), VirtAddr(base + 4096 - 32 + a), s))
            }),
            1 => (any::<u16>(), any::<u32>(), any::<u32>()).prop_map(|(c, f, t)| Record::Event(Event::ContextSwitch { core: CoreId(c), from: ThreadId(f), to: ThreadId(t) })),
            1 => (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(r, s, l)| Record::Event(Event::Region { region: r, start: VirtAddr(s), len: l })),
            1 => (any::<u32>(), any::<u64>(), any::<u64>(), any::<u8>(), 0u8..64, any::<u32>()).prop_map(|(p, s, l, pr, sh, o)| Record::Event(Event::MapShared { process: p, start: VirtAddr(s), len: l, prot: pr, page_shift: sh, object: o })),
            1 => (any::<u32>(), any::<u32>()).prop_map(|(t, j)| Record::Event(Event::JobEnd { task: t, job: j })),
            1 => (any::<u16>(), any::<u8>()).prop_map(|(c, w)| Record::Event(Event::Flush { core: CoreId(c), what: w })),
            1 => (any::<u32>(), any::<u64>(), any::<u16>(), any::<bool>()).prop_map(|(p, a, c, l)| Record::Event(Event::TlbLock { process: p, page: VirtAddr(a), core: CoreId(c), lock: l })),
            1 => (any::<u32>(), any::<u64>(), any::<u64>(), any::<u8>()).prop_map(|(p, a, l, w)| Record::Event(Event::FlushRange { process: p, start: VirtAddr(a), len: l, what: w })),
        ]
    }

    proptest! {
        #[test]
        fn any_record_sequence_round_trips(recs in proptest::collection::vec(arb_record(), 0..600)) {
            prop_assert_eq!(round_trip(&recs), recs);
        }
    }
}
