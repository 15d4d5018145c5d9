//! Files in and out for the converters: transparent xz/gzip/bzip2 (through the system's
//! `xz`/`gzip`/`bzip2`, so no compression code of our own to trust), zstd in-process (the
//! `zstd` crate the native format already uses), and atomic output (temp file + rename; nothing
//! is left behind when a conversion fails).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

/// How a file is compressed, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Xz,
    Gzip,
    Bzip2,
    Zstd,
}

pub fn sniff(path: &Path) -> Result<(Compression, Vec<u8>), String> {
    let name = path.display();
    let mut f = File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut head = vec![0u8; 16];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(format!("{name}: {e}")),
        }
    }
    head.truncate(got);
    let c = if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Compression::Xz
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(b"BZh") && head.get(3).is_some_and(|b| (b'1'..=b'9').contains(b)) {
        Compression::Bzip2
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    };
    Ok((c, head))
}

/// A readable, possibly decompressing, input. Call `finish` at the end to learn whether the
/// decompressor succeeded (a truncated .xz is reported there).
pub struct Input {
    pub name: String,
    inner: InputInner,
    empty: std::io::Empty,
}

type ZstdReader = zstd::stream::read::Decoder<'static, BufReader<File>>;

enum InputInner {
    Plain(BufReader<File>),
    /// zstd, decoded in this process (on the reading thread: `threaded.rs`).
    Zstd(BufReader<ZstdReader>),
    Piped(BufReader<ChildStdout>, Child, &'static str),
    Done,
}

impl Input {
    pub fn open(path: &Path) -> Result<Input, String> {
        let name = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| format!("{name}: {e}"))?;
        // A pipe or terminal cannot be sniffed without losing what was read: read it as it is.
        let c = if meta.is_file() {
            sniff(path)?.0
        } else {
            Compression::None
        };
        let tool = match c {
            Compression::None => {
                let f = File::open(path).map_err(|e| format!("{name}: {e}"))?;
                return Ok(Input {
                    name,
                    inner: InputInner::Plain(BufReader::with_capacity(1 << 20, f)),
                    empty: std::io::empty(),
                });
            }
            Compression::Zstd => {
                let f = File::open(path).map_err(|e| format!("{name}: {e}"))?;
                let d = zstd::stream::read::Decoder::new(f)
                    .map_err(|e| format!("{name}: zstd: {e}"))?;
                return Ok(Input {
                    name,
                    inner: InputInner::Zstd(BufReader::with_capacity(1 << 20, d)),
                    empty: std::io::empty(),
                });
            }
            Compression::Xz => "xz",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
        };
        let mut child = Command::new(tool)
            .arg("-dc")
            .arg("--")
            .arg(path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{name}: cannot run `{tool}` to decompress it: {e}"))?;
        let out = child.stdout.take().unwrap();
        Ok(Input {
            name,
            inner: InputInner::Piped(BufReader::with_capacity(1 << 20, out), child, tool),
            empty: std::io::empty(),
        })
    }

    pub fn reader(&mut self) -> &mut dyn std::io::BufRead {
        match &mut self.inner {
            InputInner::Plain(r) => r,
            InputInner::Zstd(r) => r,
            InputInner::Piped(r, _, _) => r,
            InputInner::Done => &mut self.empty,
        }
    }

    /// Waits for the decompressor (after the stream ended); an error if it failed. Idempotent.
    pub fn finish(&mut self) -> Result<(), String> {
        let inner = std::mem::replace(&mut self.inner, InputInner::Done);
        if let InputInner::Piped(r, mut child, tool) = inner {
            drop(r);
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            let st = child
                .wait()
                .map_err(|e| format!("{}: {tool}: {e}", self.name))?;
            if !st.success() {
                return Err(format!(
                    "{}: {tool} failed to decompress it ({st}): {}",
                    self.name,
                    err.trim()
                ));
            }
        }
        Ok(())
    }
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.reader().read(buf)
    }
}

impl std::io::BufRead for Input {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        match &mut self.inner {
            InputInner::Plain(r) => r.fill_buf(),
            InputInner::Zstd(r) => r.fill_buf(),
            InputInner::Piped(r, _, _) => r.fill_buf(),
            InputInner::Done => Ok(&[]),
        }
    }
    fn consume(&mut self, n: usize) {
        self.reader().consume(n)
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        if let InputInner::Piped(_, child, _) = &mut self.inner {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An output file written under a temporary name and renamed into place by `commit`; compressed
/// through `xz`/`gzip` when the name ends in `.xz`/`.gz`. Dropped without `commit`, it removes
/// the temporary file.
pub struct AtomicOutput {
    path: PathBuf,
    tmp: PathBuf,
    w: Option<Box<dyn Write>>,
    child: Option<Child>,
}

impl AtomicOutput {
    pub fn create(path: &Path) -> Result<AtomicOutput, String> {
        let name = path.display().to_string();
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let fname = path
            .file_name()
            .ok_or_else(|| format!("{name}: not a file name"))?;
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            fname.to_string_lossy(),
            std::process::id()
        ));
        let f = File::create(&tmp).map_err(|e| format!("{name}: {e}"))?;
        let s = name.to_ascii_lowercase();
        let tool = if s.ends_with(".xz") {
            Some(("xz", vec!["-T1", "-c"]))
        } else if s.ends_with(".gz") {
            Some(("gzip", vec!["-c"]))
        } else {
            None
        };
        let mut out = AtomicOutput {
            path: path.to_path_buf(),
            tmp,
            w: None,
            child: None,
        };
        match tool {
            None => out.w = Some(Box::new(std::io::BufWriter::with_capacity(1 << 20, f))),
            Some((t, args)) => {
                let mut child = Command::new(t)
                    .args(args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::from(f))
                    .spawn()
                    .map_err(|e| format!("{name}: cannot run `{t}` to compress it: {e}"))?;
                let stdin = child.stdin.take().unwrap();
                out.w = Some(Box::new(std::io::BufWriter::with_capacity(1 << 20, stdin)));
                out.child = Some(child);
            }
        }
        Ok(out)
    }

    pub fn writer(&mut self) -> &mut dyn Write {
        self.w.as_mut().expect("output used after commit").as_mut()
    }

    pub fn commit(mut self) -> Result<(), String> {
        let name = self.path.display().to_string();
        let mut w = self.w.take().unwrap();
        w.flush().map_err(|e| format!("{name}: {e}"))?;
        drop(w);
        if let Some(mut c) = self.child.take() {
            let st = c.wait().map_err(|e| format!("{name}: {e}"))?;
            if !st.success() {
                return Err(format!("{name}: the compressor failed ({st})"));
            }
        }
        std::fs::rename(&self.tmp, &self.path).map_err(|e| format!("{name}: {e}"))?;
        self.tmp = PathBuf::new();
        Ok(())
    }
}

impl Write for AtomicOutput {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.writer().write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

impl Drop for AtomicOutput {
    fn drop(&mut self) {
        self.w.take();
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if !self.tmp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Given the same bytes plain, zstd- (in-process), bzip2-, xz- and gzip-compressed (the
    /// system's tools), when opened as inputs, then each reads back the same bytes and
    /// finishes without error.
    #[test]
    fn every_compression_reads_back_the_same_bytes() {
        let dir = std::env::temp_dir().join(format!("tlblab-fileio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i * 7919).to_le_bytes())
            .collect();
        let plain = dir.join("d.bin");
        std::fs::write(&plain, &data).unwrap();
        let zst = dir.join("d.bin.zst");
        std::fs::write(&zst, zstd::encode_all(&data[..], 3).unwrap()).unwrap();
        let mut files = vec![(plain.clone(), Compression::None), (zst, Compression::Zstd)];
        for (tool, ext, c) in [
            ("bzip2", "bz2", Compression::Bzip2),
            ("xz", "xz", Compression::Xz),
            ("gzip", "gz", Compression::Gzip),
        ] {
            let out = dir.join(format!("d.bin.{ext}"));
            let st = Command::new(tool)
                .arg("-c")
                .arg(&plain)
                .stdout(File::create(&out).unwrap())
                .status();
            if st.is_ok_and(|s| s.success()) {
                files.push((out, c));
            }
        }
        for (path, c) in files {
            assert_eq!(sniff(&path).unwrap().0, c, "{}", path.display());
            let mut inp = Input::open(&path).unwrap();
            let mut got = Vec::new();
            inp.read_to_end(&mut got).unwrap();
            assert!(got == data, "{}: different bytes", path.display());
            inp.finish().unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
