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

mod event;
mod scan;
#[cfg(test)]
pub(super) mod tests;

use event::*;
pub(super) use event::{decode_event_fields, event_op, put_event_fields, put_varint, read_varint};
use scan::*;

/// Readable bytes a caller must provide after a payload (`buf.len() >= len + PAD`); their
/// value is irrelevant. (The tag scan reads 16 bytes at a time.)
pub const PAD: usize = 16;

// Escape tags: low five bits zero (an instruction fetch of "size 0"); the top three bits say what.
const ESC_THREAD: u8 = 0x00;
const ESC_EVENT: u8 = 0x20;
const ESC_FETCH: u8 = 0x40;

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

/// The predictor state shared by encoder and decoder (version 2's `Coding`).
#[derive(Clone, Copy, Default, Debug)]
pub struct State {
    thread: u32,
    /// Predicted address of the next instruction fetch: the last fetch's address + size.
    ni: u64,
    /// Last data address and the stride to it from the data access before it.
    ld: u64,
    sd: u64,
}

/// How one payload version turns records into its two streams: the predictor state of an
/// encoder (version 2's is `State`; version 1's, in `codec_v1`'s tests, its own). `Encoder`
/// keeps the streams and the counts, the same for every version.
pub trait Coding: Default {
    /// Appends one access's tags and data bytes.
    fn access(&mut self, a: &Access, tags: &mut Vec<u8>, data: &mut Vec<u8>);
    /// Appends one event's tag and fields.
    fn event(&mut self, e: &Event, tags: &mut Vec<u8>, data: &mut Vec<u8>);
}

/// Encodes records into one block payload (version 2 unless `C` says otherwise).
#[derive(Default)]
pub struct Encoder<C: Coding = State> {
    tags: Vec<u8>,
    data: Vec<u8>,
    /// The assembled payload (`payload()`).
    buf: Vec<u8>,
    st: C,
    pub records: u32,
    pub accesses: u32,
}

impl Encoder {
    pub fn new() -> Self {
        Encoder::default()
    }
}

impl<C: Coding> Encoder<C> {
    /// Starts a new block: empties the buffer and resets the predictors.
    pub fn reset(&mut self) {
        self.tags.clear();
        self.data.clear();
        self.buf.clear();
        self.st = C::default();
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
            Record::Access(a) => {
                self.accesses += 1;
                self.st.access(a, &mut self.tags, &mut self.data)
            }
            Record::Event(e) => self.st.event(e, &mut self.tags, &mut self.data),
        }
    }
}

impl Coding for State {
    #[inline]
    fn access(&mut self, a: &Access, tags: &mut Vec<u8>, data: &mut Vec<u8>) {
        if a.thread.0 != self.thread {
            tags.push(ESC_THREAD);
            put_varint(data, a.thread.0 as u64);
            self.thread = a.thread.0;
        }
        let addr = a.vaddr.0;
        let size = a.size;
        if a.kind == AccessKind::Instr {
            let d = addr.wrapping_sub(self.ni) as i64;
            if (1..=15).contains(&size) {
                let ac = if d == 0 { 0 } else { addr_code(d) };
                tags.push(((size as u8) << 1) | (ac << 5));
                data.extend_from_slice(&(d as u64).to_le_bytes()[..ADDR_BYTES[ac as usize]]);
            } else {
                tags.push(ESC_FETCH);
                put_varint(data, size as u64);
                put_varint(data, zigzag(d));
            }
            self.ni = addr.wrapping_add(size as u64);
        } else {
            let store = (a.kind == AccessKind::Store) as u8;
            // Data sizes: powers of two 1..=64; code 7 = a varint after the address bytes.
            let sc: u8 = if size.is_power_of_two() && size <= 64 {
                size.trailing_zeros() as u8
            } else {
                7
            };
            let last = self.ld;
            let d = addr.wrapping_sub(last);
            let ac = if d == self.sd { 0 } else { addr_code(d as i64) };
            tags.push(1 | (store << 1) | (sc << 2) | (ac << 5));
            data.extend_from_slice(&d.to_le_bytes()[..ADDR_BYTES[ac as usize]]);
            if sc == 7 {
                put_varint(data, size as u64);
            }
            self.sd = d;
            self.ld = addr;
        }
    }

    fn event(&mut self, e: &Event, tags: &mut Vec<u8>, data: &mut Vec<u8>) {
        tags.push(ESC_EVENT);
        put_varint(data, event_op(e));
        put_event_fields(data, e);
    }
}

/// A decoding failure at a byte offset inside the raw (decompressed) payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub pos: usize,
    pub what: String,
}

/// Where the tag stream of the payload `buf[..len]` of `records` records lies (its start and end;
/// the data stream follows it): both versions begin a payload with the tag count (docs/formats/
/// trace.md §4), and a count that does not fit the payload or its records is an error.
pub(in crate::format) fn tag_stream(
    buf: &[u8],
    len: usize,
    records: u32,
) -> Result<(usize, usize), DecodeError> {
    let mut p = 0usize;
    let ntags = read_varint(buf, &mut p, len).ok_or_else(|| DecodeError {
        pos: 0,
        what: "payload too short for its tag count".into(),
    })?;
    if ntags > (len - p) as u64 || ntags < records as u64 {
        return Err(DecodeError {
            pos: 0,
            what: format!(
                "tag count {ntags} does not fit the {len}-byte payload of {records} records"
            ),
        });
    }
    Ok((p, p + ntags as usize))
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
        // A fetch: its size in bits 1..4 (0: an escape). A load or store: bit 1 says which, a
        // power-of-two size code in bits 2..4 (7: the size follows as a varint), predicted
        // when it carries no address bytes.
        let (data, size, kind) = if i & 1 == 0 {
            (0, ((i >> 1) & 15) as u32, AccessKind::Instr)
        } else if (i >> 2) & 7 == 7 {
            (1, 0, AccessKind::Load)
        } else if i & 2 == 0 {
            (1, 1 << ((i >> 2) & 7), AccessKind::Load)
        } else {
            (1, 1 << ((i >> 2) & 7), AccessKind::Store)
        };
        if size != 0 {
            t[i] = TagInfo {
                sh,
                n: n as u8,
                data,
                pred: (data == 1 && ac == 0) as u8,
                size,
                keep,
                kind,
            };
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

impl Decoder {
    /// Starts decoding the payload `buf[..len]`, which holds `records` records: reads the tag
    /// stream's length.
    pub fn start(&mut self, buf: &[u8], len: usize, records: u32) -> Result<(), DecodeError> {
        self.st = State::default();
        self.remaining = 0;
        (self.tp, self.tend) = tag_stream(buf, len, records)?;
        self.dp = self.tend;
        self.remaining = records;
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
