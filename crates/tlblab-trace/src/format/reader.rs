//! Streaming reader of the native trace format.
//!
//! Holds one decompressed block at a time (bounded memory for traces of any length), checks
//! every checksum and length it reads, and reports problems as "file: byte N: what". With the
//! index (read from the trailer at the end of a complete file) it seeks to any record number by
//! decoding only the block that holds it.

use super::codec::{DecodeError, Decoder, PAD};
use super::codec_v1;
use super::*;
use crate::record::Record;
use crate::source::RecordSource;
use serde_json::Value;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The record decoder of the file's format version.
enum Dec {
    V1(codec_v1::Decoder),
    V2(Decoder),
}

impl Dec {
    fn start(&mut self, buf: &[u8], len: usize, records: u32) -> Result<(), DecodeError> {
        match self {
            Dec::V1(d) => d.start(buf, len, records),
            Dec::V2(d) => d.start(buf, len, records),
        }
    }
    #[inline]
    fn decode(
        &mut self,
        buf: &[u8],
        len: usize,
        out: &mut Vec<Record>,
        max: usize,
    ) -> Result<usize, DecodeError> {
        match self {
            Dec::V1(d) => d.decode(buf, len, out, max),
            Dec::V2(d) => d.decode(buf, len, out, max),
        }
    }
    fn remaining(&self) -> u32 {
        match self {
            Dec::V1(d) => d.remaining(),
            Dec::V2(d) => d.remaining(),
        }
    }
    fn clear(&mut self) {
        match self {
            Dec::V1(d) => d.clear(),
            Dec::V2(d) => d.clear(),
        }
    }
}

pub struct TraceReader<R: Read + Seek = BufReader<File>> {
    name: String,
    inner: R,
    /// File offset of the next unread byte of `inner`.
    pos: u64,
    file_len: u64,
    pub version: u16,
    /// The header JSON object.
    pub meta: Value,
    /// Where the first block starts.
    data_start: u64,
    /// Total records according to a valid trailer (None: incomplete file).
    trailer_records: Option<u64>,
    index_offset: Option<u64>,
    // current block
    raw: Vec<u8>,
    raw_len: usize,
    dec: Dec,
    block_no: u64,
    block_offset: u64,
    records_done: u64,
    comp: Vec<u8>,
    dctx: zstd::bulk::Decompressor<'static>,
    at_end: bool,
    /// The footer JSON, once the index has been read.
    pub footer: Option<Value>,
    pub blocks: Option<Vec<BlockInfo>>,
}

impl TraceReader<BufReader<File>> {
    pub fn open(path: &Path) -> Result<Self, Error> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| Error::io(&name, &e))?;
        TraceReader::new(BufReader::with_capacity(1 << 20, f), &name)
    }
}

fn read_exact_at<R: Read>(r: &mut R, buf: &mut [u8]) -> Result<usize, std::io::Error> {
    // Like read_exact, but reports how much was read before EOF.
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read + Seek> TraceReader<R> {
    /// Reads and checks the header; `name` is used in messages.
    pub fn new(mut inner: R, name: &str) -> Result<Self, Error> {
        let name = name.to_string();
        let file_len = inner
            .seek(SeekFrom::End(0))
            .map_err(|e| Error::io(&name, &e))?;
        inner
            .seek(SeekFrom::Start(0))
            .map_err(|e| Error::io(&name, &e))?;
        let mut h = [0u8; FILE_HEADER_LEN];
        let got = read_exact_at(&mut inner, &mut h).map_err(|e| Error::io(&name, &e))?;
        if got >= 8 && h[..8] != MAGIC || got < 8 && h[..got] != MAGIC[..got] {
            return Err(Error::at(
                &name,
                0,
                format!(
                    "not a tlblab trace: expected magic \"TLBTRACE\", found {:?}",
                    String::from_utf8_lossy(&h[..got.min(8)])
                ),
            ));
        }
        if got < FILE_HEADER_LEN {
            return Err(Error::at(
                &name,
                got as u64,
                format!("truncated: file ends inside the {FILE_HEADER_LEN}-byte header"),
            ));
        }
        let version = le_u16(&h[8..]);
        if !READ_VERSIONS.contains(&version) {
            return Err(Error::at(&name, 8, format!("unsupported trace format version {version} (this tlblab reads versions 1 and {VERSION})")));
        }
        let jlen = le_u32(&h[12..]);
        if jlen > MAX_JSON_BYTES || (jlen as u64 + FILE_HEADER_LEN as u64 + 4) > file_len {
            return Err(Error::at(&name, 12, format!("header metadata length {jlen} exceeds the file ({file_len} bytes): truncated or corrupt")));
        }
        let mut js = vec![0u8; jlen as usize + 4];
        let got = read_exact_at(&mut inner, &mut js).map_err(|e| Error::io(&name, &e))?;
        if got < js.len() {
            return Err(Error::at(
                &name,
                (FILE_HEADER_LEN + got) as u64,
                "truncated: file ends inside the header metadata",
            ));
        }
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&h);
        hasher.update(&js[..jlen as usize]);
        let crc = le_u32(&js[jlen as usize..]);
        if hasher.finalize() != crc {
            return Err(Error::at(
                &name,
                (FILE_HEADER_LEN + jlen as usize) as u64,
                "corrupt header: checksum mismatch",
            ));
        }
        let meta: Value = serde_json::from_slice(&js[..jlen as usize]).map_err(|e| {
            Error::at(
                &name,
                FILE_HEADER_LEN as u64,
                format!("header metadata is not valid JSON: {e}"),
            )
        })?;
        if !meta.is_object() {
            return Err(Error::at(
                &name,
                FILE_HEADER_LEN as u64,
                "header metadata is not a JSON object",
            ));
        }
        let data_start = (FILE_HEADER_LEN + js.len()) as u64;
        let mut r = TraceReader {
            name,
            inner,
            pos: data_start,
            file_len,
            version,
            meta,
            data_start,
            trailer_records: None,
            index_offset: None,
            raw: Vec::new(),
            raw_len: 0,
            dec: if version == 1 {
                Dec::V1(codec_v1::Decoder::default())
            } else {
                Dec::V2(Decoder::default())
            },
            block_no: 0,
            block_offset: data_start,
            records_done: 0,
            comp: Vec::new(),
            dctx: zstd::bulk::Decompressor::new().map_err(|e| Error::msg(format!("zstd: {e}")))?,
            at_end: false,
            footer: None,
            blocks: None,
        };
        // A complete file ends with a trailer; remember it (for len_hint and seeking) if valid.
        if file_len >= data_start + TRAILER_LEN as u64 {
            let mut t = [0u8; TRAILER_LEN];
            if r.inner.seek(SeekFrom::End(-(TRAILER_LEN as i64))).is_ok()
                && read_exact_at(&mut r.inner, &mut t).ok() == Some(TRAILER_LEN)
                && t[16..24] == TRAILER_MAGIC
            {
                let off = le_u64(&t);
                if off >= data_start && off < file_len {
                    r.index_offset = Some(off);
                    r.trailer_records = Some(le_u64(&t[8..]));
                }
            }
            r.inner
                .seek(SeekFrom::Start(data_start))
                .map_err(|e| Error::io(&r.name, &e))?;
        }
        Ok(r)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the file has a valid trailer (the writer finished).
    pub fn is_complete(&self) -> bool {
        self.index_offset.is_some()
    }

    /// Total records according to the trailer.
    pub fn total_records(&self) -> Option<u64> {
        self.trailer_records
    }

    /// Region names from the header (`regions` list of strings).
    pub fn regions(&self) -> Vec<String> {
        self.meta
            .get("regions")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .map(|x| x.as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn err(&self, off: u64, what: impl std::fmt::Display) -> Error {
        Error::at(&self.name, off, what)
    }

    fn read_bytes(&mut self, buf: &mut [u8], what: &str) -> Result<(), Error> {
        let got = read_exact_at(&mut self.inner, buf).map_err(|e| Error::io(&self.name, &e))?;
        if got < buf.len() {
            let at = self.pos + got as u64;
            return Err(self.err(at, format!(
                "truncated: file ends inside {what} ({} of {} bytes present); the writer did not finish",
                got,
                buf.len()
            )));
        }
        self.pos += got as u64;
        Ok(())
    }

    /// Loads the next block into the decoder. Returns false at the index (end of records).
    fn next_block(&mut self) -> Result<bool, Error> {
        if self.at_end {
            return Ok(false);
        }
        let start = self.pos;
        let mut magic = [0u8; 4];
        let got =
            read_exact_at(&mut self.inner, &mut magic).map_err(|e| Error::io(&self.name, &e))?;
        if got == 0 {
            return Err(self.err(start, format!(
                "truncated: file ends after {} records in {} blocks, where the next block or the index should start; the writer did not finish",
                self.records_done, self.block_no
            )));
        }
        if got < 4 {
            return Err(self.err(start, "truncated: file ends inside a block header"));
        }
        self.pos += 4;
        if magic == INDEX_MAGIC {
            self.read_index_at(start, true)?;
            self.at_end = true;
            return Ok(false);
        }
        if magic != BLOCK_MAGIC {
            return Err(self.err(start, format!(
                "corrupt: expected a block (\"TBLK\") or the index (\"TIDX\") after {} records, found bytes {:02x?}",
                self.records_done, magic
            )));
        }
        let mut h = [0u8; BLOCK_HEADER_LEN];
        h[..4].copy_from_slice(&magic);
        self.read_bytes(&mut h[4..], "a block header")?;
        if crc32fast::hash(&h[..32]) != le_u32(&h[32..]) {
            return Err(self.err(
                start,
                format!("corrupt block {} header: checksum mismatch", self.block_no),
            ));
        }
        let comp_len = le_u32(&h[4..]);
        let raw_len = le_u32(&h[8..]);
        let records = le_u32(&h[12..]);
        let first = le_u64(&h[20..]);
        if comp_len > MAX_BLOCK_BYTES || raw_len > MAX_BLOCK_BYTES {
            return Err(self.err(start, format!("corrupt block {}: sizes {comp_len}/{raw_len} exceed the {MAX_BLOCK_BYTES}-byte limit", self.block_no)));
        }
        if first != self.records_done {
            return Err(self.err(
                start + 20,
                format!(
                "corrupt block {}: says it starts at record {first}, but {} records came before it",
                self.block_no, self.records_done
            ),
            ));
        }
        let mut comp = std::mem::take(&mut self.comp);
        comp.resize(comp_len as usize, 0);
        let r = self.read_bytes(
            &mut comp,
            &format!("block {}'s {comp_len}-byte payload", self.block_no),
        );
        if let Err(e) = r {
            self.comp = comp;
            return Err(e);
        }
        if crc32fast::hash(&comp) != le_u32(&h[28..]) {
            self.comp = comp;
            return Err(self.err(
                start + BLOCK_HEADER_LEN as u64,
                format!("corrupt block {}: payload checksum mismatch", self.block_no),
            ));
        }
        self.raw.clear();
        self.raw.reserve(raw_len as usize + PAD);
        let res = self.dctx.decompress_to_buffer(&comp, &mut self.raw);
        self.comp = comp;
        match res {
            Ok(n) if n == raw_len as usize => {}
            Ok(n) => {
                return Err(self.err(
                    start + BLOCK_HEADER_LEN as u64,
                    format!(
                        "corrupt block {}: decompresses to {n} bytes, header says {raw_len}",
                        self.block_no
                    ),
                ))
            }
            Err(e) => {
                return Err(self.err(
                    start + BLOCK_HEADER_LEN as u64,
                    format!("corrupt block {}: zstd: {e}", self.block_no),
                ))
            }
        }
        self.raw_len = raw_len as usize;
        self.raw.resize(raw_len as usize + PAD, 0);
        if let Err(e) = self.dec.start(&self.raw, self.raw_len, records) {
            return Err(self.err(
                start,
                format!(
                    "corrupt block {} (record data, decompressed offset {}): {}",
                    self.block_no, e.pos, e.what
                ),
            ));
        }
        self.block_offset = start;
        self.block_no += 1;
        Ok(true)
    }

    /// Reads and checks the index at `off` (its magic already consumed if `magic_read`).
    fn read_index_at(&mut self, off: u64, magic_read: bool) -> Result<(), Error> {
        if !magic_read {
            self.inner
                .seek(SeekFrom::Start(off))
                .map_err(|e| Error::io(&self.name, &e))?;
            self.pos = off;
            let mut m = [0u8; 4];
            self.read_bytes(&mut m, "the index")?;
            if m != INDEX_MAGIC {
                return Err(self.err(
                    off,
                    "corrupt: the trailer points at something that is not the index",
                ));
            }
        }
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&INDEX_MAGIC);
        let mut c = [0u8; 4];
        self.read_bytes(&mut c, "the index")?;
        hasher.update(&c);
        let count = le_u32(&c) as u64;
        if count * INDEX_ENTRY_LEN as u64 > self.file_len {
            return Err(self.err(
                off + 4,
                format!("corrupt index: {count} entries cannot fit in the file"),
            ));
        }
        let mut ent = vec![0u8; count as usize * INDEX_ENTRY_LEN];
        self.read_bytes(&mut ent, "the index")?;
        hasher.update(&ent);
        let mut fl = [0u8; 4];
        self.read_bytes(&mut fl, "the footer")?;
        hasher.update(&fl);
        let flen = le_u32(&fl);
        if flen > MAX_JSON_BYTES || flen as u64 > self.file_len {
            return Err(self.err(self.pos - 4, format!("corrupt footer length {flen}")));
        }
        let mut fj = vec![0u8; flen as usize];
        self.read_bytes(&mut fj, "the footer")?;
        hasher.update(&fj);
        let mut crc = [0u8; 4];
        self.read_bytes(&mut crc, "the index checksum")?;
        if hasher.finalize() != le_u32(&crc) {
            return Err(self.err(off, "corrupt index: checksum mismatch"));
        }
        let mut trailer = [0u8; TRAILER_LEN];
        self.read_bytes(&mut trailer, "the trailer")?;
        if trailer[16..] != TRAILER_MAGIC || le_u64(&trailer) != off {
            return Err(self.err(self.pos - TRAILER_LEN as u64, "corrupt trailer"));
        }
        let blocks: Vec<BlockInfo> = ent
            .chunks_exact(INDEX_ENTRY_LEN)
            .map(|e| BlockInfo {
                offset: le_u64(e),
                first_record: le_u64(&e[8..]),
                records: le_u32(&e[16..]),
                accesses: le_u32(&e[20..]),
            })
            .collect();
        let total = blocks
            .last()
            .map(|b| b.first_record + b.records as u64)
            .unwrap_or(0);
        if le_u64(&trailer[8..]) != total {
            return Err(self.err(
                self.pos - 16,
                format!(
                    "corrupt trailer: {} records stated, index holds {total}",
                    le_u64(&trailer[8..])
                ),
            ));
        }
        if magic_read && total != self.records_done {
            return Err(self.err(
                off,
                format!(
                    "corrupt index: {total} records listed, {} read",
                    self.records_done
                ),
            ));
        }
        let footer: Value = serde_json::from_slice(&fj)
            .map_err(|e| self.err(off, format!("footer is not valid JSON: {e}")))?;
        self.footer = Some(footer);
        self.blocks = Some(blocks);
        Ok(())
    }

    /// Reads the index and footer of a complete file (without disturbing a sequential read).
    pub fn load_index(&mut self) -> Result<(), Error> {
        if self.blocks.is_some() {
            return Ok(());
        }
        let off = self.index_offset.ok_or_else(|| {
            Error::msg(format!("{}: the file has no index (no valid trailer in its last {TRAILER_LEN} bytes): it is truncated or the writer did not finish", self.name))
        })?;
        let (save_pos, save_end) = (self.pos, self.at_end);
        self.read_index_at(off, false)?;
        self.inner
            .seek(SeekFrom::Start(save_pos))
            .map_err(|e| Error::io(&self.name, &e))?;
        self.pos = save_pos;
        self.at_end = save_end;
        Ok(())
    }

    /// Positions the reader so the next record returned is record number `n` (0-based).
    pub fn seek_record(&mut self, n: u64) -> Result<(), Error> {
        self.load_index()?;
        let blocks = self.blocks.as_ref().unwrap();
        let total = blocks
            .last()
            .map(|b| b.first_record + b.records as u64)
            .unwrap_or(0);
        if n > total {
            return Err(Error::msg(format!(
                "{}: record {n} is past the end ({total} records)",
                self.name
            )));
        }
        let i = blocks.partition_point(|b| b.first_record + b.records as u64 <= n);
        self.dec.clear();
        if i == blocks.len() {
            // At the end: the next read finds the index.
            let off = self.index_offset.unwrap();
            self.inner
                .seek(SeekFrom::Start(off))
                .map_err(|e| Error::io(&self.name, &e))?;
            self.pos = off;
            self.records_done = total;
            self.block_no = blocks.len() as u64;
            self.at_end = false;
            return Ok(());
        }
        let b = blocks[i];
        self.inner
            .seek(SeekFrom::Start(b.offset))
            .map_err(|e| Error::io(&self.name, &e))?;
        self.pos = b.offset;
        self.records_done = b.first_record;
        self.block_no = i as u64;
        self.at_end = false;
        if !self.next_block()? {
            return Ok(());
        }
        let mut skip = n - b.first_record;
        let mut tmp = Vec::with_capacity(4096);
        while skip > 0 {
            tmp.clear();
            let k = self.decode_some(&mut tmp, skip.min(4096) as usize)?;
            skip -= k as u64;
        }
        Ok(())
    }

    fn decode_some(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, Error> {
        match self.dec.decode(&self.raw, self.raw_len, out, max) {
            Ok(k) => {
                self.records_done += k as u64;
                Ok(k)
            }
            Err(e) => Err(Error::msg(format!(
                "{}: byte {}: corrupt block {} (record data, decompressed offset {}): {}",
                self.name,
                self.block_offset,
                self.block_no - 1,
                e.pos,
                e.what
            ))),
        }
    }

    /// Appends up to `max` records; 0 at the end.
    pub fn read(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, Error> {
        let mut got = 0;
        while got < max {
            if self.dec.remaining() == 0 && !self.next_block()? {
                break;
            }
            got += self.decode_some(out, max - got)?;
        }
        Ok(got)
    }

    /// Bytes of the file consumed so far (for progress).
    pub fn position(&self) -> u64 {
        self.pos
    }
    pub fn file_len(&self) -> u64 {
        self.file_len
    }
    /// Header offset where blocks start.
    pub fn data_start(&self) -> u64 {
        self.data_start
    }
}

impl<R: Read + Seek> RecordSource for TraceReader<R> {
    fn fill(&mut self, out: &mut Vec<Record>, max: usize) -> Result<usize, String> {
        self.read(out, max).map_err(|e| e.message)
    }
    fn len_hint(&self) -> Option<u64> {
        self.trailer_records
    }
    fn region_names(&self) -> Vec<String> {
        self.regions()
    }
    /// A complete file seeks by its index (decoding only the target's block up to it); one
    /// without its index (the writer did not finish) is read up to the record.
    fn skip_records(&mut self, n: u64) -> Result<u64, String> {
        if !self.is_complete() {
            return crate::source::skip_by_parts(self, n);
        }
        let at = self.records_done;
        let target = at
            .saturating_add(n)
            .min(self.total_records().unwrap_or(u64::MAX));
        self.seek_record(target).map_err(|e| e.message)?;
        Ok(target - at)
    }
}
