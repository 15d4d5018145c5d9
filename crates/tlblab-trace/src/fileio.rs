//! Files in and out for the converters: transparent decompression of xz, gzip, bzip2 and zstd
//! inputs, decoded in this process (issue 47: on the reading thread of `threaded.rs`, where the
//! system's `xz -dc` child used to run) by the reference decoders, not code of our own: liblzma
//! (xz's own library, built from the `liblzma` crate's bundled sources), flate2's miniz_oxide,
//! libbzip2 (also bundled, built by `bzip2-sys`) and libzstd; and atomic output (temp file + rename; nothing is left
//! behind when a conversion fails), compressed through the system's `xz`/`gzip`.
//!
//! Concatenated streams decode as one (`xz -T` writes blocks, `pigz`/`pbzip2` and `cat a.xz b.xz`
//! streams, and the tools read them all), and a decoding error names the file, what the decoder
//! found and the byte of the compressed file it had reached.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

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

/// A readable, possibly decompressing, input. `finish` is kept for the sources that call it at
/// their end; with every decoder in-process, a decoding error (a truncated file included)
/// surfaces from the read that meets it.
pub struct Input {
    pub name: String,
    inner: InputInner,
}

/// The compressed file under a decoder: read through a buffer, so the position the decoder has
/// reached is the file's position less what is buffered.
type Compressed = BufReader<File>;
type ZstdReader = zstd::stream::read::Decoder<'static, Compressed>;
type XzReader = liblzma::bufread::XzDecoder<Compressed>;
type GzReader = flate2::bufread::MultiGzDecoder<Compressed>;
type BzReader = bzip2::bufread::MultiBzDecoder<Compressed>;

enum InputInner {
    Plain(BufReader<File>),
    // The decoded bytes' buffer over the decoder over the compressed file's buffer.
    Zstd(BufReader<ZstdReader>),
    Xz(BufReader<XzReader>),
    Gzip(BufReader<GzReader>),
    Bzip2(BufReader<BzReader>),
}

/// Decoded bytes are handed on in pieces of this size (the decoders' own input buffers are
/// `BufReader`'s default 8 KiB, refilled as they consume).
const DECODED_BUF: usize = 1 << 20;
const COMPRESSED_BUF: usize = 1 << 16;

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
        let f = File::open(path).map_err(|e| format!("{name}: {e}"))?;
        let inner = match c {
            Compression::None => InputInner::Plain(BufReader::with_capacity(DECODED_BUF, f)),
            Compression::Zstd => {
                let d = zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(
                    COMPRESSED_BUF,
                    f,
                ))
                .map_err(|e| format!("{name}: zstd: {e}"))?;
                InputInner::Zstd(BufReader::with_capacity(DECODED_BUF, d))
            }
            // LZMA_CONCATENATED: every stream of the file, as `xz -dc` reads it.
            Compression::Xz => InputInner::Xz(BufReader::with_capacity(
                DECODED_BUF,
                liblzma::bufread::XzDecoder::new_multi_decoder(BufReader::with_capacity(
                    COMPRESSED_BUF,
                    f,
                )),
            )),
            Compression::Gzip => InputInner::Gzip(BufReader::with_capacity(
                DECODED_BUF,
                flate2::bufread::MultiGzDecoder::new(BufReader::with_capacity(COMPRESSED_BUF, f)),
            )),
            Compression::Bzip2 => InputInner::Bzip2(BufReader::with_capacity(
                DECODED_BUF,
                bzip2::bufread::MultiBzDecoder::new(BufReader::with_capacity(COMPRESSED_BUF, f)),
            )),
        };
        Ok(Input { name, inner })
    }

    /// Kept for the sources that check their input at its end: every decoder runs in this
    /// process and reports its errors (a truncated stream included) from `read`.
    pub fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }

    /// A decoder's error, said with the format, what went wrong and where in the compressed file.
    fn decode_error(&self, e: std::io::Error) -> std::io::Error {
        let (tool, at) = match &self.inner {
            InputInner::Plain(_) => return e,
            InputInner::Zstd(r) => ("zstd", compressed_at(r.get_ref().get_ref())),
            InputInner::Xz(r) => ("xz", compressed_at(r.get_ref().get_ref())),
            InputInner::Gzip(r) => ("gzip", compressed_at(r.get_ref().get_ref())),
            InputInner::Bzip2(r) => ("bzip2", compressed_at(r.get_ref().get_ref())),
        };
        let (pos, len) = at;
        let what = if e.kind() == std::io::ErrorKind::UnexpectedEof {
            format!(
                "the {tool} data ends early, at byte {pos} of {len} of the compressed file, inside a stream: the file is truncated"
            )
        } else {
            format!(
                "the {tool} data is corrupt at byte {pos} of {len} of the compressed file ({e})"
            )
        };
        std::io::Error::new(e.kind(), what)
    }
}

/// (The byte of the compressed file the decoder has consumed up to, the file's length.)
fn compressed_at(r: &Compressed) -> (u64, u64) {
    let mut f = r.get_ref();
    let read = f.stream_position().unwrap_or(0);
    let len = f.metadata().map(|m| m.len()).unwrap_or(read);
    (read.saturating_sub(r.buffer().len() as u64), len)
}

impl Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let r = match &mut self.inner {
            InputInner::Plain(r) => r.read(buf),
            InputInner::Zstd(r) => r.read(buf),
            InputInner::Xz(r) => r.read(buf),
            InputInner::Gzip(r) => r.read(buf),
            InputInner::Bzip2(r) => r.read(buf),
        };
        r.map_err(|e| self.decode_error(e))
    }
}

impl BufRead for Input {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        // Learn whether the refill fails first (with `self` free to describe the error), then
        // borrow the buffer.
        let failed = match &mut self.inner {
            InputInner::Plain(r) => r.fill_buf().err(),
            InputInner::Zstd(r) => r.fill_buf().err(),
            InputInner::Xz(r) => r.fill_buf().err(),
            InputInner::Gzip(r) => r.fill_buf().err(),
            InputInner::Bzip2(r) => r.fill_buf().err(),
        };
        if let Some(e) = failed {
            return Err(self.decode_error(e));
        }
        Ok(match &self.inner {
            InputInner::Plain(r) => r.buffer(),
            InputInner::Zstd(r) => r.buffer(),
            InputInner::Xz(r) => r.buffer(),
            InputInner::Gzip(r) => r.buffer(),
            InputInner::Bzip2(r) => r.buffer(),
        })
    }
    fn consume(&mut self, n: usize) {
        match &mut self.inner {
            InputInner::Plain(r) => r.consume(n),
            InputInner::Zstd(r) => r.consume(n),
            InputInner::Xz(r) => r.consume(n),
            InputInner::Gzip(r) => r.consume(n),
            InputInner::Bzip2(r) => r.consume(n),
        }
    }
}

/// The temporary name a file is written under before it is renamed to `path`: hidden, in the
/// same directory (so the rename is atomic), and this process's own. None when `path` names no
/// file.
pub fn temp_path(path: &Path) -> Option<PathBuf> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let fname = path.file_name()?;
    Some(dir.join(format!(
        ".{}.tmp-{}",
        fname.to_string_lossy(),
        std::process::id()
    )))
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
        let tmp = temp_path(path).ok_or_else(|| format!("{name}: not a file name"))?;
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

    fn data() -> Vec<u8> {
        (0..200_000u32)
            .flat_map(|i| (i.wrapping_mul(7919) % 100_003).to_le_bytes())
            .collect()
    }

    /// Each format's encoder (the same libraries' own), as two concatenated streams: the first
    /// `cut` bytes, then the rest.
    fn compressed(c: Compression, d: &[u8], cut: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for part in [&d[..cut], &d[cut..]] {
            match c {
                Compression::None => out.extend_from_slice(part),
                Compression::Zstd => {
                    // With its checksum, as the `zstd` tool writes by default (without one, a
                    // flipped byte may decode to other bytes, undetected).
                    let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
                    e.include_checksum(true).unwrap();
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
                Compression::Xz => {
                    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
                Compression::Gzip => {
                    let mut e = flate2::write::GzEncoder::new(Vec::new(), Default::default());
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
                Compression::Bzip2 => {
                    let mut e = bzip2::write::BzEncoder::new(Vec::new(), Default::default());
                    e.write_all(part).unwrap();
                    out.extend(e.finish().unwrap());
                }
            }
        }
        out
    }

    const ALL: [(Compression, &str); 5] = [
        (Compression::None, "bin"),
        (Compression::Zstd, "zst"),
        (Compression::Xz, "xz"),
        (Compression::Gzip, "gz"),
        (Compression::Bzip2, "bz2"),
    ];

    fn tmpdir(what: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tlblab-fileio-{what}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Given the same bytes plain and compressed in each format as two concatenated streams
    /// (what `cat a.xz b.xz`, `pigz` and `pbzip2` give), when opened as inputs, then each is
    /// recognised and reads back all the bytes, through `read` and through `fill_buf`.
    #[test]
    fn every_compression_reads_back_every_stream() {
        let dir = tmpdir("ok");
        let d = data();
        for (c, ext) in ALL {
            let path = dir.join(format!("d.{ext}"));
            std::fs::write(&path, compressed(c, &d, 300_001)).unwrap();
            assert_eq!(sniff(&path).unwrap().0, c, "{ext}");
            let mut got = Vec::new();
            Input::open(&path).unwrap().read_to_end(&mut got).unwrap();
            assert!(
                got == d,
                "{ext}: different bytes ({} of {})",
                got.len(),
                d.len()
            );
            let mut inp = Input::open(&path).unwrap();
            let mut lines = 0;
            let mut buf = Vec::new();
            while inp.read_until(0xff, &mut buf).unwrap() > 0 {
                lines += 1;
            }
            assert!(buf == d && lines > 1, "{ext}: fill_buf");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Given a file compressed by the system's `xz -T2` (several blocks in one stream), then it
    /// decodes whole. Skipped where `xz` is missing (scripts/debian-packages.txt installs it).
    #[test]
    fn xz_with_several_blocks_decodes_whole() {
        let dir = tmpdir("mt");
        let d: Vec<u8> = data().repeat(4); // 3.2 MB: `--block-size` 1 MiB gives 4 blocks
        let plain = dir.join("d.bin");
        std::fs::write(&plain, &d).unwrap();
        let xz = dir.join("d.bin.xz");
        let st = Command::new("xz")
            .args(["-T2", "--block-size=1MiB", "-1", "-c"])
            .arg(&plain)
            .stdout(File::create(&xz).unwrap())
            .status();
        if st.is_ok_and(|s| s.success()) {
            let mut got = Vec::new();
            Input::open(&xz).unwrap().read_to_end(&mut got).unwrap();
            assert!(got == d, "{} of {} bytes", got.len(), d.len());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Given each compressed file cut short inside its second stream, and each with a byte of
    /// its compressed data flipped, then reading fails (no panic) with a message naming the
    /// format, truncation or corruption, and the byte of the compressed file reached.
    #[test]
    fn truncated_and_corrupt_files_are_errors_with_the_compressed_byte() {
        let dir = tmpdir("bad");
        let d = data();
        // Writes `bytes` to the file `name` and reads it back: the error reading it gave.
        let read_error = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            let mut got = Vec::new();
            Input::open(&path)
                .unwrap()
                .read_to_end(&mut got)
                .unwrap_err()
                .to_string()
        };
        for (c, ext) in ALL.into_iter().skip(1) {
            let whole = compressed(c, &d, 300_001);
            let len = whole.len();
            let cut = &whole[..len - len / 4];
            let e = read_error(&format!("cut.{ext}"), cut);
            assert!(
                e.contains("ends early")
                    && e.contains(&format!("of {} of the compressed file", cut.len())),
                "{ext}: {e}"
            );
            let mut bad = whole.clone();
            bad[len / 2] ^= 0x55;
            let e = read_error(&format!("bad.{ext}"), &bad);
            let name = match c {
                Compression::Xz => "xz",
                Compression::Gzip => "gzip",
                Compression::Bzip2 => "bzip2",
                _ => "zstd",
            };
            assert!(
                e.contains(&format!("the {name} data is corrupt at byte "))
                    && e.contains(&format!("of {len} of the compressed file")),
                "{ext}: {e}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
