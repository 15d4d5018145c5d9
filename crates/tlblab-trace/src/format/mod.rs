//! The native trace format (`.tlbt`): a versioned header with JSON metadata, then independently
//! zstd-compressed blocks of delta-encoded records, then an index and a fixed trailer.
//!
//! The byte-level specification is `docs/formats/trace.md`; this module is its reference
//! implementation. `codec` turns records into block payloads and back (`codec_v1` decodes the
//! payloads of version 1 files), `writer` streams records
//! into a file (atomically: temp file + rename), `reader` streams them back (bounded memory,
//! block at a time) and seeks by record number through the index.
//!
//! Every malformed input is reported as an `Error` naming the file and the byte offset.

pub mod codec;
pub mod codec_v1;
pub mod reader;
pub mod writer;

pub use reader::TraceReader;
pub use writer::{TraceWriter, WriterOptions};

use std::fmt;

/// First 8 bytes of every file.
pub const MAGIC: [u8; 8] = *b"TLBTRACE";
/// Format version this code writes; readers accept exactly the versions they know
/// (`READ_VERSIONS`).
pub const VERSION: u16 = 2;
/// Versions the reader decodes: 1 (the first payload encoding, `codec_v1`) and 2 (`codec`).
pub const READ_VERSIONS: [u16; 2] = [1, 2];
/// Fixed part of the file header: magic, version u16, flags u16, JSON length u32.
pub const FILE_HEADER_LEN: usize = 16;
/// Marks the start of a block.
pub const BLOCK_MAGIC: [u8; 4] = *b"TBLK";
/// Fixed block header: magic, comp_len u32, raw_len u32, records u32, accesses u32,
/// first_record u64, payload crc32 u32, header crc32 u32.
pub const BLOCK_HEADER_LEN: usize = 36;
/// Marks the start of the index (written once, after the last block).
pub const INDEX_MAGIC: [u8; 4] = *b"TIDX";
/// One index entry: offset u64, first_record u64, records u32, accesses u32.
pub const INDEX_ENTRY_LEN: usize = 24;
/// Last 24 bytes of a complete file: index offset u64, total records u64, this magic.
pub const TRAILER_MAGIC: [u8; 8] = *b"TLBTEND\0";
pub const TRAILER_LEN: usize = 24;
/// Largest block payload a reader accepts (raw or compressed), so a corrupt length cannot make
/// it allocate without bound.
pub const MAX_BLOCK_BYTES: u32 = 64 << 20;
/// Largest header or footer JSON a reader accepts.
pub const MAX_JSON_BYTES: u32 = 256 << 20;

/// A problem with a trace file, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub message: String,
}

impl Error {
    /// "`file`: byte `offset`: `what`".
    pub fn at(file: &str, offset: u64, what: impl fmt::Display) -> Error {
        Error {
            message: format!("{file}: byte {offset}: {what}"),
        }
    }
    pub fn io(file: &str, e: &std::io::Error) -> Error {
        Error {
            message: format!("{file}: {e}"),
        }
    }
    pub fn msg(m: impl Into<String>) -> Error {
        Error { message: m.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}

/// Per-block summary kept in the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    pub offset: u64,
    pub first_record: u64,
    pub records: u32,
    pub accesses: u32,
}

#[inline]
pub(crate) fn le_u16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}
#[inline]
pub(crate) fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}
#[inline]
pub(crate) fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// True if `bytes` start with the native magic (used to detect input formats).
pub fn is_native(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..8] == MAGIC
}
