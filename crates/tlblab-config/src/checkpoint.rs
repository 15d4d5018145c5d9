//! Checkpoint files: the whole engine state (`tlblab_core::SystemState`) with what it was
//! built from, so that a run restored from one continues bit for bit as the uninterrupted run.
//!
//! Format, version 5 (all integers little-endian; version 1 had no read-ahead queues, regions
//! or records count in the state, version 2 no write buffers, version 3 no TLB memo grain,
//! version 4 no DRAM writebacks or row activations):
//!
//! | offset | bytes | what |
//! |---|---|---|
//! | 0 | 8 | magic `TLBLABCK` |
//! | 8 | 4 | format version (5) |
//! | 12 | 4 | header length H |
//! | 16 | H | header, JSON: `machine` (the machine configuration), `options` (the run options), `workload` (the caller's name of the record stream), `records` (records of it consumed), `references`, `state_bytes`, `state_crc32` |
//! | 16 + H | `state_bytes` | the engine state, JSON (`SystemStateRef`; maps with tuple keys as sorted pairs) |
//!
//! A file is written whole or not at all (a temporary file beside it, renamed into place).
//! Every defect is one error naming the file and what was expected and found: not a
//! checkpoint, another format version, a truncated header or state, a checksum that does not
//! match, a machine, run options or workload other than the run's.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use tlblab_core::{MachineConfig, RunOptions, System};

pub const MAGIC: &[u8; 8] = b"TLBLABCK";
pub const VERSION: u32 = 5;
const FIXED: usize = 16;

#[derive(Serialize, Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Header {
    machine: MachineConfig,
    options: RunOptions,
    workload: String,
    records: u64,
    references: u64,
    state_bytes: u64,
    state_crc32: u32,
}

/// A checkpoint read back: the machine in its saved state, and where its record stream stood.
pub struct Restored {
    pub system: System,
    /// Records of the workload the saved run had consumed: the restored run skips as many.
    pub records: u64,
    pub workload: String,
}

/// Saves `sys` (between two runs, or paused: `System::pause_at`) to `path`, with the records
/// of `workload` its runs consumed (`System::records_read`).
pub fn save(path: &Path, sys: &System, workload: &str) -> Result<(), String> {
    let records = sys.records_read();
    let shown = path.display();
    let state = sys.state().map_err(|e| format!("{shown}: {e}"))?;
    let payload = serde_json::to_vec(&state)
        .map_err(|e| format!("{shown}: the engine state could not be encoded: {e}"))?;
    let header = Header {
        machine: sys.config.clone(),
        options: RunOptions {
            max_references: 0,
            ..sys.options
        },
        workload: workload.to_string(),
        records,
        references: sys.references(),
        state_bytes: payload.len() as u64,
        state_crc32: crc32fast::hash(&payload),
    };
    let header = serde_json::to_vec(&header).map_err(|e| format!("{shown}: {e}"))?;
    let mut bytes = Vec::with_capacity(FIXED + header.len() + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(&payload);
    write_atomically(path, &bytes)
}

/// Writes `bytes` to a temporary file beside `path` and renames it into place, so that `path`
/// is either its old self or the whole new file; the temporary file is removed on failure.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let shown = path.display();
    let tmp = tlblab_trace::fileio::temp_path(path)
        .ok_or_else(|| format!("{shown}: a checkpoint needs a file name"))?;
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{shown}: cannot write the checkpoint: {e}")
    })
}

/// Reads a checkpoint for a run on `machine` with `options` (its `max_references` is the
/// restored run's own) over `workload`, and rebuilds the machine in its saved state.
pub fn load(
    path: &Path,
    machine: &MachineConfig,
    options: &RunOptions,
    workload: &str,
) -> Result<Restored, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        let found = &bytes[..bytes.len().min(MAGIC.len())];
        return Err(format!(
            "{shown}: not a tlblab checkpoint: expected the bytes \"TLBLABCK\" at offset 0, found {:?}",
            String::from_utf8_lossy(found)
        ));
    }
    if bytes.len() < FIXED {
        return Err(format!(
            "{shown}: truncated: expected {FIXED} bytes of magic, version and header length, found {}",
            bytes.len()
        ));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(format!(
            "{shown}: checkpoint format version {version} at offset 8, expected {VERSION} (written by another tlblab)"
        ));
    }
    let header_len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
    if bytes.len() - FIXED < header_len {
        return Err(format!(
            "{shown}: truncated: expected a header of {header_len} bytes at offset {FIXED}, found {}",
            bytes.len() - FIXED
        ));
    }
    let header: Header = serde_json::from_slice(&bytes[FIXED..FIXED + header_len])
        .map_err(|e| format!("{shown}: corrupt header at offset {FIXED}: {e}"))?;
    let at = FIXED + header_len;
    let payload = &bytes[at..];
    if payload.len() as u64 != header.state_bytes {
        return Err(format!(
            "{shown}: truncated or extended: expected {} bytes of engine state at offset {at}, found {}",
            header.state_bytes,
            payload.len()
        ));
    }
    let crc = crc32fast::hash(payload);
    if crc != header.state_crc32 {
        return Err(format!(
            "{shown}: corrupt engine state: expected checksum {:08x}, found {crc:08x}",
            header.state_crc32
        ));
    }
    if let Some(field) = first_difference(&header.machine, machine) {
        return Err(format!(
            "{shown}: saved on another machine: the checkpoint's is '{}', this run's '{}' (they differ at `{field}`)",
            header.machine.name, machine.name
        ));
    }
    let run_options = RunOptions {
        max_references: 0,
        ..*options
    };
    if let Some(field) = first_difference(&header.options, &run_options) {
        return Err(format!(
            "{shown}: saved with other run options: they differ at `{field}`"
        ));
    }
    if header.workload != workload {
        return Err(format!(
            "{shown}: saved on workload '{}', this run's is '{workload}'",
            header.workload
        ));
    }
    let state = serde_json::from_slice(payload)
        .map_err(|e| format!("{shown}: corrupt engine state at offset {at}: {e}"))?;
    let mut system = System::new(header.machine, *options).map_err(|e| format!("{shown}: {e}"))?;
    system
        .restore_state(state)
        .map_err(|e| format!("{shown}: {e}"))?;
    if system.references() != header.references {
        return Err(format!(
            "{shown}: corrupt engine state: the header says {} references, the state {}",
            header.references,
            system.references()
        ));
    }
    Ok(Restored {
        system,
        records: header.records,
        workload: header.workload,
    })
}

/// The path of the first field where two values' JSON differ, or None.
fn first_difference<T: Serialize>(a: &T, b: &T) -> Option<String> {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
        use serde_json::Value::{Array, Object};
        match (a, b) {
            (Object(x), Object(y)) => {
                let keys: std::collections::BTreeSet<_> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => walk(p, q, join(&at, k)),
                    _ => Some(join(&at, k)),
                })
            }
            (Array(x), Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| walk(p, q, format!("{at}[{i}]"))),
            _ if a == b => None,
            _ => Some(if at.is_empty() { "(all)".into() } else { at }),
        }
    }
    fn join(at: &str, k: &str) -> String {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    }
    let (a, b) = (serde_json::to_value(a).ok()?, serde_json::to_value(b).ok()?);
    walk(&a, &b, String::new())
}
