//! Files in and out for the converters: transparent xz/gzip (through the system's `xz`/`gzip`,
//! so no compression code of our own to trust) and atomic output (temp file + rename; nothing is
//! left behind when a conversion fails).

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

enum InputInner {
    Plain(BufReader<File>),
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
            Compression::Xz => "xz",
            Compression::Gzip => "gzip",
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
