//! An on-disk cache of the graphs the graph workloads build before their first record: the
//! R-MAT CSR of `graph500_bfs` and `gapbs_bc` (`rmat::shared`) and `graph500_list`'s edge list
//! and chains (`graph500_list::shared`). Off unless a directory is set (`set_directory`):
//! `tlblab.intervals` sets one under its `out` folder, so the pass writes the graph once and
//! every interval's worker process reads it instead of drawing it again (scale 20: 3.4 s to
//! build, a fraction of a second to read; seed 001's scale 24: over a minute).
//!
//! A file is named by its kind, the generator's parameters, the generator's version
//! (`Cached::GENERATOR`, raised when the code that draws the graph changes) and the caller's
//! tag (`tlblab.intervals` gives a digest of the engine extension's bytes, so a rebuilt engine
//! never reads a graph an older one wrote). Format, all integers little-endian:
//!
//! | offset | bytes | what |
//! |---|---|---|
//! | 0 | 8 | magic `TLBLABGR` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | header length H |
//! | 16 | H | header, JSON: `kind`, `params`, `generator`, `tag`, `arrays` (each `[type, length]`, type `u32`, `u64` or `u32x2`), `payload_bytes` |
//! | 16 + H | `payload_bytes` | the arrays, one after the other |
//! | end - 4 | 4 | CRC-32 of the payload |
//!
//! Written to a temporary file beside it and renamed into place (whole or not at all). A file
//! that is not what its name promises (another magic or version, a header for other
//! parameters, a length or checksum that does not match, arrays that are not a graph) is a
//! cache defect, not a user error: the graph is a function of its parameters, so it is built
//! again (the same bytes), the file replaced, and the defect said once on stderr and kept in
//! `stats().defects`. The per-access path never sees any of this: it reads the same `Vec`s.

use super::rmat::KeepLast;
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub const MAGIC: &[u8; 8] = b"TLBLABGR";
pub const VERSION: u32 = 1;
const FIXED: usize = 16;
/// Bytes read or written at a time.
const CHUNK: usize = 1 << 22;

/// One array of a graph, borrowed to be written.
pub enum ArrayRef<'a> {
    U32(&'a [u32]),
    U64(&'a [u64]),
    Pairs(&'a [(u32, u32)]),
}

/// One array of a graph, read back.
pub enum Array {
    U32(Vec<u32>),
    U64(Vec<u64>),
    Pairs(Vec<(u32, u32)>),
}

/// A graph the cache can hold: a few arrays of integers.
pub trait Cached: Sized {
    /// The file's kind (its name's first part).
    const KIND: &'static str;
    /// The version of the code that builds it: raise it when that code changes what it builds.
    const GENERATOR: u32;
    fn arrays(&self) -> Vec<ArrayRef<'_>>;
    /// The graph from its arrays, or what is wrong with them.
    fn from_arrays(arrays: Vec<Array>) -> Result<Self, String>;
}

/// What this process's cache did (`stats`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CacheStats {
    /// Graphs read from a file.
    pub loaded: u64,
    pub load_seconds: f64,
    /// Graphs built (no file, a defective one, or no directory set).
    pub built: u64,
    pub build_seconds: f64,
    /// Files written.
    pub written: u64,
    pub write_seconds: f64,
    pub written_bytes: u64,
    /// Graphs this process already held (`KeepLast`), neither read nor built.
    pub kept: u64,
    /// Each defective file met, and what was wrong (it was then built again and replaced).
    pub defects: Vec<String>,
}

static DIRECTORY: Mutex<Option<(PathBuf, String)>> = Mutex::new(None);
static STATS: Mutex<Option<CacheStats>> = Mutex::new(None);
static WRITING: Mutex<()> = Mutex::new(());

/// Where graphs are cached from now on in this process, and the tag their files carry; None
/// turns the cache off (the default).
pub fn set_directory(dir: Option<(PathBuf, String)>) {
    *DIRECTORY.lock().unwrap_or_else(|e| e.into_inner()) = dir;
}

/// What the cache did in this process so far.
pub fn stats() -> CacheStats {
    STATS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

fn count(f: impl FnOnce(&mut CacheStats)) {
    f(STATS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(Default::default))
}

/// The file that holds the graph of `params` in `dir` for `tag`.
pub fn file_for<T: Cached>(dir: &Path, tag: &str, params: &[(&str, u64)]) -> PathBuf {
    let p: String = params.iter().map(|(k, v)| format!(".{k}{v}")).collect();
    dir.join(format!("{}{p}.g{}.{tag}.graph", T::KIND, T::GENERATOR))
}

/// The R-MAT parameters a graph is built from: (scale, edge factor, seed).
pub type RmatKey = (u32, u64, u64);

/// `build(key)`'s graph kept in `last` (`KeepLast`), read from the cache directory when it
/// holds it, else built (and written there). A graph already kept is written there when the
/// file is missing, so a pass that found the graph in its process still leaves it for the
/// workers.
pub fn kept<T: Cached>(
    last: &KeepLast<RmatKey, T>,
    key: RmatKey,
    build: fn(u32, u64, u64) -> T,
) -> Arc<T> {
    let (scale, edge_factor, seed) = key;
    let params = [
        ("scale", scale as u64),
        ("edge_factor", edge_factor),
        ("seed", seed),
    ];
    let params = &params[..];
    let dir = DIRECTORY.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut fresh = false;
    let g = last.get(key, || {
        fresh = true;
        load_or_build(dir.as_ref(), params, || build(scale, edge_factor, seed))
    });
    if !fresh {
        count(|s| s.kept += 1);
        if let Some((d, tag)) = &dir {
            let path = file_for::<T>(d, tag, params);
            if !path.is_file() {
                save_reporting(&path, tag, params, g.as_ref());
            }
        }
    }
    g
}

fn load_or_build<T: Cached>(
    dir: Option<&(PathBuf, String)>,
    params: &[(&str, u64)],
    build: impl FnOnce() -> T,
) -> T {
    let Some((d, tag)) = dir else {
        return built(build);
    };
    let path = file_for::<T>(d, tag, params);
    let t0 = Instant::now();
    match load::<T>(&path, tag, params) {
        Ok(Some(g)) => {
            let s = t0.elapsed().as_secs_f64();
            count(|c| {
                c.loaded += 1;
                c.load_seconds += s
            });
            return g;
        }
        Ok(None) => {}
        Err(defect) => {
            let said = format!("{}: {defect}", path.display());
            eprintln!(
                "tlblab: graph cache {said}: building the graph again and replacing the file"
            );
            count(|c| c.defects.push(said));
        }
    }
    let g = built(build);
    save_reporting(&path, tag, params, &g);
    g
}

fn built<T>(build: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let g = build();
    let s = t0.elapsed().as_secs_f64();
    count(|c| {
        c.built += 1;
        c.build_seconds += s
    });
    g
}

/// Writes the cache file; a failure is said on stderr and the run goes on (a cache that
/// cannot be written costs time, not results).
fn save_reporting<T: Cached>(path: &Path, tag: &str, params: &[(&str, u64)], g: &T) {
    let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let t0 = Instant::now();
    match save(path, tag, params, g) {
        Ok(bytes) => {
            let s = t0.elapsed().as_secs_f64();
            count(|c| {
                c.written += 1;
                c.write_seconds += s;
                c.written_bytes += bytes
            })
        }
        Err(e) => eprintln!("tlblab: graph cache: {e} (the graph is built again in each process)"),
    }
}

fn header<T: Cached>(tag: &str, params: &[(&str, u64)], arrays: &[(&str, u64)]) -> Value {
    let p: serde_json::Map<String, Value> = params
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let payload: u64 = arrays.iter().map(|(t, n)| width(t) * n).sum();
    json!({"kind": T::KIND, "params": p, "generator": T::GENERATOR, "tag": tag,
           "arrays": arrays.iter().map(|(t, n)| json!([t, n])).collect::<Vec<_>>(),
           "payload_bytes": payload})
}

fn width(t: &str) -> u64 {
    if t == "u32" {
        4
    } else {
        8
    }
}

/// Writes `g` to `path` (atomically); returns the file's size.
pub fn save<T: Cached>(
    path: &Path,
    tag: &str,
    params: &[(&str, u64)],
    g: &T,
) -> Result<u64, String> {
    let arrays = g.arrays();
    let shapes: Vec<(&str, u64)> = arrays
        .iter()
        .map(|a| match a {
            ArrayRef::U32(v) => ("u32", v.len() as u64),
            ArrayRef::U64(v) => ("u64", v.len() as u64),
            ArrayRef::Pairs(v) => ("u32x2", v.len() as u64),
        })
        .collect();
    let h = serde_json::to_vec(&header::<T>(tag, params, &shapes)).map_err(|e| e.to_string())?;
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let mut out = crate::fileio::AtomicOutput::create(path)?;
    let shown = path.display().to_string();
    let io = |e: std::io::Error| format!("{shown}: {e}");
    let w = out.writer();
    w.write_all(MAGIC).map_err(io)?;
    w.write_all(&VERSION.to_le_bytes()).map_err(io)?;
    w.write_all(&(h.len() as u32).to_le_bytes()).map_err(io)?;
    w.write_all(&h).map_err(io)?;
    let mut crc = crc32fast::Hasher::new();
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    let mut size = (FIXED + h.len() + 4) as u64;
    for a in &arrays {
        macro_rules! put {
            ($v:expr, $per:expr, $each:expr) => {
                for part in $v.chunks(CHUNK / $per) {
                    buf.clear();
                    for x in part {
                        $each(&mut buf, x);
                    }
                    crc.update(&buf);
                    w.write_all(&buf).map_err(io)?;
                    size += buf.len() as u64;
                }
            };
        }
        match a {
            ArrayRef::U32(v) => put!(v, 4, |b: &mut Vec<u8>, x: &u32| b
                .extend_from_slice(&x.to_le_bytes())),
            ArrayRef::U64(v) => put!(v, 8, |b: &mut Vec<u8>, x: &u64| b
                .extend_from_slice(&x.to_le_bytes())),
            ArrayRef::Pairs(v) => put!(v, 8, |b: &mut Vec<u8>, x: &(u32, u32)| {
                b.extend_from_slice(&x.0.to_le_bytes());
                b.extend_from_slice(&x.1.to_le_bytes())
            }),
        }
    }
    w.write_all(&crc.finalize().to_le_bytes()).map_err(io)?;
    out.commit()?;
    Ok(size)
}

/// The graph in `path`: None when there is no such file, an error naming the defect when the
/// file is not the graph of `params` for `tag` whole.
pub fn load<T: Cached>(
    path: &Path,
    tag: &str,
    params: &[(&str, u64)],
) -> Result<Option<T>, String> {
    let f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read: {e}")),
    };
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    let mut r = std::io::BufReader::with_capacity(CHUNK, f);
    let mut fixed = [0u8; FIXED];
    r.read_exact(&mut fixed).map_err(|_| {
        format!(
            "truncated: {size} bytes, fewer than the {FIXED} of magic, version and header length"
        )
    })?;
    if &fixed[..8] != MAGIC {
        return Err(format!(
            "not a tlblab graph: expected the bytes \"TLBLABGR\" at offset 0, found {:?}",
            String::from_utf8_lossy(&fixed[..8])
        ));
    }
    let version = u32::from_le_bytes(fixed[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(format!("format version {version}, expected {VERSION}"));
    }
    let hlen = u32::from_le_bytes(fixed[12..16].try_into().expect("4 bytes")) as u64;
    if FIXED as u64 + hlen + 4 > size {
        return Err(format!(
            "truncated: a header of {hlen} bytes in a file of {size}"
        ));
    }
    let mut h = vec![0u8; hlen as usize];
    r.read_exact(&mut h)
        .map_err(|e| format!("the header: {e}"))?;
    let found: Value =
        serde_json::from_slice(&h).map_err(|e| format!("the header is not JSON: {e}"))?;
    let shapes: Vec<(String, u64)> = found
        .get("arrays")
        .and_then(|a| serde_json::from_value(a.clone()).ok())
        .ok_or("the header lists no arrays")?;
    if shapes
        .iter()
        .any(|(t, _)| !matches!(t.as_str(), "u32" | "u64" | "u32x2"))
    {
        return Err("the header names an array type other than u32, u64, u32x2".into());
    }
    let borrowed: Vec<(&str, u64)> = shapes.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    let expected = header::<T>(tag, params, &borrowed);
    for field in ["kind", "params", "generator", "tag", "payload_bytes"] {
        if found.get(field) != expected.get(field) {
            return Err(format!(
                "the header's {field} is {}, expected {}",
                found.get(field).unwrap_or(&Value::Null),
                expected[field]
            ));
        }
    }
    let payload = expected["payload_bytes"].as_u64().unwrap_or(0);
    if FIXED as u64 + hlen + payload + 4 != size {
        return Err(format!(
            "{size} bytes, expected {} (header {hlen}, arrays {payload}, checksum 4): truncated or extended",
            FIXED as u64 + hlen + payload + 4
        ));
    }
    let mut crc = crc32fast::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut arrays = Vec::with_capacity(shapes.len());
    for (t, n) in &shapes {
        let mut left = (width(t) * n) as usize;
        macro_rules! get {
            ($v:ident, $per:expr, $each:expr) => {{
                let mut $v = Vec::with_capacity(*n as usize);
                while left > 0 {
                    let k = left.min(CHUNK);
                    r.read_exact(&mut buf[..k])
                        .map_err(|e| format!("the arrays: {e}"))?;
                    crc.update(&buf[..k]);
                    $v.extend(buf[..k].chunks_exact($per).map($each));
                    left -= k;
                }
                $v
            }};
        }
        arrays.push(match t.as_str() {
            "u32" => Array::U32(get!(v, 4, |b: &[u8]| u32::from_le_bytes(
                b.try_into().expect("4")
            ))),
            "u64" => Array::U64(get!(v, 8, |b: &[u8]| u64::from_le_bytes(
                b.try_into().expect("8")
            ))),
            _ => Array::Pairs(get!(v, 8, |b: &[u8]| (
                u32::from_le_bytes(b[..4].try_into().expect("4")),
                u32::from_le_bytes(b[4..].try_into().expect("4"))
            ))),
        });
    }
    let mut sum = [0u8; 4];
    r.read_exact(&mut sum)
        .map_err(|e| format!("the checksum: {e}"))?;
    let (stored, computed) = (u32::from_le_bytes(sum), crc.finalize());
    if stored != computed {
        return Err(format!(
            "the arrays' checksum is {computed:#010x}, the file says {stored:#010x}: the file is damaged"
        ));
    }
    T::from_arrays(arrays).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::graph500_list::{list_graph, ListGraph};
    use crate::workloads::rmat::{rmat, Csr};

    const P: [(&str, u64); 3] = [("scale", 8), ("edge_factor", 4), ("seed", 3)];

    #[test]
    fn a_graph_saved_loads_back_the_same_and_only_under_its_own_key() {
        let dir = std::env::temp_dir().join(format!("tlblab-graph-cache-{}", std::process::id()));
        let g = rmat(8, 4, 3);
        let f = file_for::<Csr>(&dir, "t", &P);
        assert!(load::<Csr>(&f, "t", &P).unwrap().is_none()); // no file: a miss
        save(&f, "t", &P, &g).unwrap();
        let back = load::<Csr>(&f, "t", &P).unwrap().unwrap();
        assert_eq!(
            (back.n, &back.offsets, &back.adj),
            (g.n, &g.offsets, &g.adj)
        );
        let e = load::<Csr>(&f, "u", &P).err().unwrap();
        assert!(e.contains("tag"), "{e}");
        let other = [("scale", 9), ("edge_factor", 4), ("seed", 3)];
        let e = load::<Csr>(&f, "t", &other).err().unwrap();
        assert!(e.contains("params"), "{e}");
        // The other kind under this file's name: its kind differs.
        let e = load::<ListGraph>(&f, "t", &P).err().unwrap();
        assert!(e.contains("kind"), "{e}");
        let l = list_graph(8, 4, 3);
        let lf = file_for::<ListGraph>(&dir, "t", &P);
        save(&lf, "t", &P, &l).unwrap();
        let back = load::<ListGraph>(&lf, "t", &P).unwrap().unwrap();
        assert_eq!(
            (back.nv, &back.ij, &back.off, &back.chain),
            (l.nv, &l.ij, &l.off, &l.chain)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
