//! Version 1 record encoding (spec: docs/formats/trace.md §4.5), kept so that version 1 files
//! still read; new files are written in version 2 (`codec`). Its coding is the tests'
//! (`tests`, a `codec::Coding` for `codec::Encoder`): they make the version 1 payloads the
//! decoder must read.
//!
//! Original description:
//! Record encoding inside one block of the native format (spec: docs/formats/trace.md §4).
//!
//! A payload is two streams: one tag byte per item, then the bytes the tags call for (address
//! deltas, varint fields). Keeping tags apart means the decoder's next tag never waits for the
//! previous record's length (its position just advances by one), which is what lets the
//! decode loop run at a few cycles per record. Each record has a tag byte. For an access the tag holds the kind (2 bits), a size
//! code (3 bits) and an address code (3 bits); the address is predicted from the previous access
//! of the same stream (instruction fetches: previous fetch + its size; data: previous data
//! address + previous data stride), so sequential code and strided sweeps cost one byte per
//! reference, and otherwise a zigzag delta of 1–6 bytes or an absolute 8-byte address follows.
//! Events and thread changes use the fourth kind with an opcode and LEB128 fields. All state
//! resets at a block boundary, which is what makes blocks independently decodable.

use super::codec::{decode_event_fields, read_varint, tag_stream, unzigzag, DecodeError};
use crate::record::{Access, Event, Record};
use tlblab_types::{AccessKind, ThreadId, VirtAddr};

/// Zero bytes appended after a payload so the decoder may read 8 bytes past any position.
pub const PAD: usize = 16;

/// The opcode of a thread change; events use the opcodes of `codec` (the same numbers).
const OP_THREAD: u8 = 0;

/// The predictor state shared by encoder and decoder.
#[derive(Clone, Copy, Default, Debug)]
struct State {
    thread: u32,
    /// Last address of stream 0 (instruction fetches) and 1 (data).
    last: [u64; 2],
    /// Predicted step of each stream: the last fetch's size; the last data stride.
    step: [u64; 2],
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
}

/// Bytes of an address field for each address code (code 0 = predicted, 7 = absolute).
const ADDR_BYTES: [usize; 8] = [0, 1, 2, 3, 4, 5, 6, 8];
const ADDR_MASK: [u64; 8] = [
    0,
    0xff,
    0xffff,
    0xff_ffff,
    0xffff_ffff,
    0xff_ffff_ffff,
    0xffff_ffff_ffff,
    u64::MAX,
];

/// What a tag byte says, precomputed for all 256 values.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct TagInfo {
    mask: u64,
    /// 0 marks a tag the fast path leaves alone: an event, a thread change, a varint size.
    size: u32,
    stream: u8,
    ac: u8,
    /// Bytes of the address field in the data stream.
    nbytes: u8,
    kind: AccessKind,
}

const fn tag_table() -> [TagInfo; 256] {
    let mut t = [TagInfo {
        stream: 0,
        ac: 0,
        nbytes: 0,
        kind: AccessKind::Instr,
        size: 0,
        mask: 0,
    }; 256];
    let mut i = 0;
    while i < 256 {
        let kind = i & 3;
        let sc = (i >> 2) & 7;
        let ac = i >> 5;
        if kind != 3 && sc != 7 {
            t[i] = TagInfo {
                stream: (kind != 0) as u8,
                ac: ac as u8,
                nbytes: ADDR_BYTES[ac] as u8,
                kind: match kind {
                    0 => AccessKind::Instr,
                    1 => AccessKind::Load,
                    _ => AccessKind::Store,
                },
                size: if kind == 0 { sc as u32 + 1 } else { 1 << sc },
                mask: ADDR_MASK[ac],
            };
        }
        i += 1;
    }
    t
}

static TAG: [TagInfo; 256] = tag_table();

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
        assert!(buf.len() >= len + PAD, "payload buffer must be padded");
        let n = (self.remaining as usize).min(max);
        out.reserve(n);
        let mut st = self.st;
        let (mut tp, tend, mut dp) = (self.tp, self.tend, self.dp);
        let mut done = 0usize;
        let buf = &buf[..len + PAD];
        // Fails at `pos`, keeping the position reached (the state a resumed call would find).
        macro_rules! fail {
            ($pos:expr, $what:expr $(,)?) => {{
                self.st = st;
                self.tp = tp;
                self.dp = dp;
                self.remaining = self.remaining.saturating_sub(done as u32);
                return Err(DecodeError {
                    pos: $pos,
                    what: $what,
                });
            }};
        }
        while done < n {
            if tp >= tend {
                let missing = self.remaining as usize - done;
                fail!(
                    tp,
                    format!("tag stream ends with {missing} of the block's records still to come")
                );
            }
            // Fast path: a run of accesses with table sizes, written straight into `out`'s
            // spare capacity. Safety: `tp < tend <= len` before each tag read; `dp <= len`
            // before each data read, which reads 8 bytes and `buf` has `PAD` (16) bytes past
            // `len`; at most `n - done` records are written into capacity reserved above.
            unsafe {
                let base = buf.as_ptr();
                let dst0 = out.as_mut_ptr().add(out.len());
                let mut k = 0usize;
                let room = n - done;
                // Both streams' state in registers; selects instead of branches, because in a
                // real trace fetches and data accesses interleave unpredictably.
                let (mut li, mut si, mut ld, mut sd) =
                    (st.last[0], st.step[0], st.last[1], st.step[1]);
                let thread = ThreadId(st.thread);
                let kmax = room.min(tend - tp);
                let tags = base.add(tp);
                while k < kmax && dp <= len {
                    let t = *tags.add(k);
                    let info = *TAG.get_unchecked(t as usize);
                    if info.size == 0 {
                        break;
                    }
                    let raw = (base.add(dp) as *const u64).read_unaligned() & info.mask;
                    dp += info.nbytes as usize;
                    let data = info.stream != 0;
                    let last = if data { ld } else { li };
                    let step = if data { sd } else { si };
                    let delta = if info.ac == 0 {
                        step
                    } else {
                        unzigzag(raw) as u64
                    };
                    let rel = last.wrapping_add(delta);
                    let addr = if info.ac == 7 { raw } else { rel };
                    si = if data { si } else { info.size as u64 };
                    li = if data { li } else { addr };
                    sd = if data { addr.wrapping_sub(ld) } else { sd };
                    ld = if data { addr } else { ld };
                    dst0.add(k).write(Record::Access(Access {
                        thread,
                        kind: info.kind,
                        vaddr: VirtAddr(addr),
                        size: info.size,
                    }));
                    k += 1;
                }
                tp += k;
                st.last = [li, ld];
                st.step = [si, sd];
                out.set_len(out.len() + k);
                done += k;
            }
            if dp > len {
                fail!(len, "an address runs past the end of the payload".into());
            }
            if done >= n || tp >= tend {
                continue;
            }
            let t = buf[tp];
            let kind = t & 3;
            let tpos = tp;
            tp += 1;
            if kind != 3 {
                let ac = (t >> 5) as usize;
                let raw = le_u64_at(buf, dp) & ADDR_MASK[ac];
                dp += ADDR_BYTES[ac];
                if dp > len {
                    fail!(len, "an address runs past the end of the payload".into());
                }
                // Only size code 7 reaches here: an explicit varint size.
                let size = match read_varint(buf, &mut dp, len) {
                    Some(v) if v <= u32::MAX as u64 => v,
                    _ => {
                        fail!(
                            tpos,
                            "bad access size (varint overruns the payload or exceeds 32 bits)"
                                .into(),
                        )
                    }
                };
                let s = (kind != 0) as usize;
                let last = st.last[s];
                let a = match ac {
                    0 => last.wrapping_add(st.step[s]),
                    7 => raw,
                    _ => last.wrapping_add(unzigzag(raw) as u64),
                };
                st.step[s] = if s == 0 { size } else { a.wrapping_sub(last) };
                st.last[s] = a;
                let k = [AccessKind::Instr, AccessKind::Load, AccessKind::Store][kind as usize];
                out.push(Record::Access(Access {
                    thread: ThreadId(st.thread),
                    kind: k,
                    vaddr: VirtAddr(a),
                    size: size as u32,
                }));
                done += 1;
            } else {
                match self.decode_op(t >> 2, buf, &mut dp, len, &mut st) {
                    Ok(Some(ev)) => {
                        out.push(Record::Event(ev));
                        done += 1;
                    }
                    Ok(None) => {}
                    Err(what) => fail!(tpos, what),
                }
            }
        }
        self.st = st;
        self.tp = tp;
        self.dp = dp;
        self.remaining -= done as u32;
        if self.remaining == 0 && (tp != tend || dp != len) {
            return Err(DecodeError {
                pos: dp,
                what: format!(
                    "{} tag and {} data bytes left over after the block's last record",
                    tend - tp,
                    len - dp
                ),
            });
        }
        Ok(done)
    }

    fn decode_op(
        &self,
        op: u8,
        buf: &[u8],
        p: &mut usize,
        len: usize,
        st: &mut State,
    ) -> Result<Option<Event>, String> {
        if op == OP_THREAD {
            let t = read_varint(buf, p, len).ok_or("event field thread overruns the payload")?;
            st.thread = u32::try_from(t).map_err(|_| {
                format!(
                    "event field thread = {t} is out of range (max {})",
                    u32::MAX
                )
            })?;
            return Ok(None);
        }
        match decode_event_fields(op as u64, buf, p, len)? {
            Some(e) => Ok(Some(e)),
            None => Err(format!(
                "unknown record opcode {op} (tag byte {:#04x})",
                3 | (op << 2)
            )),
        }
    }
}

#[inline(always)]
fn le_u64_at(buf: &[u8], p: usize) -> u64 {
    let b: [u8; 8] = buf[p..p + 8].try_into().unwrap();
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::super::codec::{event_op, put_event_fields, put_varint, zigzag, Coding};
    use super::*;
    use tlblab_types::CoreId;

    /// Version 1's coding, for the tests only (no file is written in version 1 any more): what
    /// makes the payloads the decoder must still read, through the one `codec::Encoder`.
    impl Coding for State {
        fn access(&mut self, a: &Access, tags: &mut Vec<u8>, data: &mut Vec<u8>) {
            if a.thread.0 != self.thread {
                tags.push(3 | (OP_THREAD << 2));
                put_varint(data, a.thread.0 as u64);
                self.thread = a.thread.0;
            }
            let kind: u8 = match a.kind {
                AccessKind::Instr => 0,
                AccessKind::Load => 1,
                AccessKind::Store => 2,
            };
            let size = a.size;
            // Size codes: fetches 1..=7 bytes (x86 instruction lengths), data 1..=64 as powers of 2.
            let sc: u8 = if kind == 0 {
                if (1..=7).contains(&size) {
                    (size - 1) as u8
                } else {
                    7
                }
            } else if size.is_power_of_two() && size <= 64 {
                size.trailing_zeros() as u8
            } else {
                7
            };
            let addr = a.vaddr.0;
            let sidx = (kind != 0) as usize;
            let last = self.last[sidx];
            let pred = last.wrapping_add(self.step[sidx]);
            let ac: u8;
            let mut tail = [0u8; 8];
            let mut ntail = 0usize;
            if addr == pred {
                ac = 0;
            } else {
                let zz = zigzag(addr.wrapping_sub(last) as i64);
                let nbytes = (64 - zz.leading_zeros() as usize).div_ceil(8).max(1);
                if nbytes <= 6 {
                    ac = nbytes as u8;
                    tail = zz.to_le_bytes();
                    ntail = nbytes;
                } else {
                    ac = 7;
                    tail = addr.to_le_bytes();
                    ntail = 8;
                }
            }
            tags.push(kind | (sc << 2) | (ac << 5));
            data.extend_from_slice(&tail[..ntail]);
            if sc == 7 {
                put_varint(data, size as u64);
            }
            self.step[sidx] = if sidx == 0 {
                size as u64
            } else {
                addr.wrapping_sub(last)
            };
            self.last[sidx] = addr;
        }

        fn event(&mut self, e: &Event, tags: &mut Vec<u8>, data: &mut Vec<u8>) {
            tags.push(3 | ((event_op(e) as u8) << 2));
            put_event_fields(data, e);
        }
    }

    type Encoder = super::super::codec::Encoder<State>;

    fn round_trip(recs: &[Record]) -> Vec<Record> {
        let (buf, len, records) = super::super::codec::tests::encode_with::<State>(recs);
        let mut d = Decoder::default();
        d.start(&buf, len, records).unwrap();
        let mut out = Vec::new();
        // Decode in uneven pieces to exercise resumption.
        let mut step = 1;
        while d.remaining() > 0 {
            d.decode(&buf, len, &mut out, step).unwrap();
            step = step * 3 + 1;
        }
        out
    }

    #[test]
    fn sequential_code_and_strided_data_cost_one_byte_each() {
        let recs = super::super::codec::tests::sequential_code_and_strided_data();
        let mut e = Encoder::default();
        recs.iter().for_each(|r| e.push(r));
        // First of each stream needs an address; everything after is predicted.
        let n = e.payload().len();
        assert!(
            n < recs.len() + 20,
            "{} bytes for {} records",
            n,
            recs.len()
        );
        assert_eq!(round_trip(&recs), recs);
    }

    #[test]
    fn every_event_and_odd_sizes_round_trip() {
        let recs = super::super::codec::tests::every_event_and_odd_sizes();
        assert_eq!(round_trip(&recs), recs);
    }

    #[test]
    fn truncated_payload_is_an_error_not_a_panic() {
        let mut e = Encoder::default();
        e.push(&Record::Access(Access::new(
            ThreadId(0),
            AccessKind::Load,
            VirtAddr(0x1234_5678_9abc),
            8,
        )));
        let mut buf = e.payload().to_vec();
        let len = buf.len() - 2;
        buf.resize(len + PAD, 0);
        let mut d = Decoder::default();
        d.start(&buf, len, 1).unwrap();
        let err = d.decode(&buf, len, &mut Vec::new(), 10).unwrap_err();
        assert!(err.what.contains("past the end"), "{err:?}");
    }

    #[test]
    fn unknown_opcode_is_named() {
        let buf = [
            1,
            3 | (60 << 2),
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        let mut d = Decoder::default();
        d.start(&buf, 2, 1).unwrap();
        let err = d.decode(&buf, 2, &mut Vec::new(), 1).unwrap_err();
        assert!(err.what.contains("unknown record opcode 60"), "{err:?}");
    }

    use proptest::prelude::*;

    fn arb_record() -> impl Strategy<Value = Record> {
        prop_oneof![
            4 => (0u32..4, 0u8..3, any::<u64>(), prop_oneof![Just(1u32), Just(4), Just(8), any::<u32>()]).prop_map(|(t, k, a, s)| {
                let kind = [AccessKind::Instr, AccessKind::Load, AccessKind::Store][k as usize];
                Record::Access(Access::new(ThreadId(t), kind, VirtAddr(a), s))
            }),
            4 => (0u8..3, 0u64..1_000_000).prop_map(|(k, a)| {
                let kind = [AccessKind::Instr, AccessKind::Load, AccessKind::Store][k as usize];
                Record::Access(Access::new(ThreadId(0), kind, VirtAddr(0x5555_0000 + a * 8), 8))
            }),
            1 => (any::<u16>(), any::<u32>(), any::<u32>()).prop_map(|(c, f, t)| Record::Event(Event::ContextSwitch { core: CoreId(c), from: ThreadId(f), to: ThreadId(t) })),
            1 => (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(r, s, l)| Record::Event(Event::Region { region: r, start: VirtAddr(s), len: l })),
        ]
    }

    proptest! {
        #[test]
        fn any_record_sequence_round_trips(recs in proptest::collection::vec(arb_record(), 0..400)) {
            prop_assert_eq!(round_trip(&recs), recs);
        }
    }
}
