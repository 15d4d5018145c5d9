//! Capturing a guest program of another ISA under QEMU's user mode (`qemu-arm`), with tlblab's
//! TCG plugin (`runtime/qemu-plugin/tlblab_qemu.c`), which writes the same word stream as
//! tlblab's Valgrind tool; `vgtool.rs` reads it and the references are encoded as they stream
//! (no intermediate file), as `capture::record` does for Valgrind.
//!
//! Seed 004 ran ARMv7 binaries on a Cortex-A9 (Song, Park, Kim 2022, §III, §V.1). Under
//! `qemu-arm -cpu cortex-a9` the guest sees that CPU on every host (its C library picks its
//! routines by the emulated CPU's features, not the host's), and QEMU's user mode places the
//! guest's memory the same way on every run. What else reaches the guest's addresses is made
//! fixed here, so that the trace is the same bytes on every host and in every folder:
//! - the environment is empty (it lies on the guest's stack);
//! - argv[0] is the program's file name without its folder (QEMU's `-0`), and the program runs
//!   from a copy at a path of one fixed length (`/tmp/tlblab-qemu-XXXXXX/prog`), because the
//!   kernel-style loader puts the path on the stack (AT_EXECFN): its length moves the stack;
//! - the metadata names no folder and the footer holds no time.
//!
//! The guest's mappings are QEMU's, not the host process's: `/proc/PID/maps` of QEMU shows
//! host addresses, so the footer's `maps` is empty (the pages touched are in the trace).

use crate::capture::{child_pipe, child_stdio};
use crate::format::writer::Summary;
use crate::format::{TraceWriter, WriterOptions};
use crate::source::RecordSource;
use crate::vgtool::{StreamEnd, VgToolSource};
use serde_json::{json, Value};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Clone, Debug)]
pub struct QemuOptions {
    /// The QEMU user-mode emulator (`qemu-arm`).
    pub qemu: String,
    /// tlblab's plugin, `libtlblab_qemu.so` (built with the C runtime).
    pub plugin: PathBuf,
    /// The CPU QEMU emulates (`-cpu`): seed 004's is `cortex-a9`.
    pub cpu: String,
    /// The guest's library root (`-L`, where the dynamic loader and libc are found), e.g.
    /// Debian's `/usr/arm-linux-gnueabihf`; None for a static program.
    pub sysroot: Option<PathBuf>,
    /// References to keep; the program is killed after that.
    pub limit: Option<u64>,
    /// The program's stdout (default: discarded).
    pub stdout: Option<PathBuf>,
    /// Asked between batches: `true` stops the program and fails the capture.
    pub stop: Option<fn() -> bool>,
}

#[derive(Debug)]
pub struct QemuReport {
    pub summary: Summary,
    pub references_seen: u64,
    pub exit_status: Option<i32>,
    pub killed_at_limit: bool,
}

fn qemu_version(qemu: &str) -> Option<String> {
    let o = Command::new(qemu).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    text.lines().next().map(|l| l.trim().to_string())
}

/// A fresh folder `/tmp/tlblab-qemu-XXXXXX` (mkdtemp: always the same length), removed on drop.
struct FixedLengthDir(PathBuf);

impl FixedLengthDir {
    fn new() -> Result<Self, String> {
        let mut template = *b"/tmp/tlblab-qemu-XXXXXX\0";
        // SAFETY: a writable, NUL-terminated template of our own.
        let p = unsafe { libc::mkdtemp(template.as_mut_ptr() as *mut libc::c_char) };
        if p.is_null() {
            return Err(format!(
                "cannot make a folder in /tmp for the guest program: {}",
                std::io::Error::last_os_error()
            ));
        }
        let s = std::str::from_utf8(&template[..template.len() - 1]).unwrap();
        Ok(FixedLengthDir(PathBuf::from(s)))
    }
}

impl Drop for FixedLengthDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `argv` (a guest binary and its arguments) under QEMU with tlblab's plugin and writes its
/// references to `output` as they stream.
pub fn record_qemu(
    argv: &[String],
    output: &Path,
    opts: &QemuOptions,
) -> Result<QemuReport, String> {
    if argv.is_empty() {
        return Err("nothing to record: give a program and its arguments".into());
    }
    if !opts.plugin.is_file() {
        return Err(format!(
            "tlblab's QEMU plugin is not built: no {} (`make setup` builds it with the C runtime)",
            opts.plugin.display()
        ));
    }
    let version = qemu_version(&opts.qemu).ok_or_else(|| {
        format!(
            "cannot run `{}`: is QEMU's user mode installed? (Debian package `qemu-user`)",
            opts.qemu
        )
    })?;
    let bytes = std::fs::read(&argv[0]).map_err(|e| format!("{}: {e}", argv[0]))?;
    let dir = FixedLengthDir::new()?;
    let guest = dir.0.join("prog");
    std::fs::write(&guest, &bytes).map_err(|e| format!("{}: {e}", guest.display()))?;
    std::fs::set_permissions(&guest, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", guest.display()))?;
    let name = Path::new(&argv[0])
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| argv[0].clone());

    let (read_end, write_end) = child_pipe()?;
    let wfd = write_end.as_raw_fd();
    let mut qemu_args: Vec<String> =
        vec!["-cpu".into(), opts.cpu.clone(), "-0".into(), name.clone()];
    if let Some(root) = &opts.sysroot {
        qemu_args.push("-L".into());
        qemu_args.push(root.display().to_string());
    }
    qemu_args.push("-plugin".into());
    qemu_args.push(format!("{},outfd={wfd}", opts.plugin.display()));
    let mut shown_argv = vec![name.clone()];
    shown_argv.extend(argv[1..].iter().cloned());
    let meta = json!({
        "program": name,
        "argv": shown_argv,
        "page_size": 4096,
        "capture": {
            "tool": "qemu-user-tlblab",
            "qemu_version": version,
            "cpu": opts.cpu,
            "sysroot": opts.sysroot.as_ref().map(|p| p.display().to_string()),
            "limit": opts.limit,
            "environment": "empty",
            "threads": "one thread per guest thread (QEMU's vCPU index); QEMU runs them in parallel, the plugin orders their references under one lock",
        },
        "regions": Vec::<String>::new(),
    });
    let mut writer =
        TraceWriter::create(output, &meta, WriterOptions::default()).map_err(|e| e.message)?;
    let stdout = child_stdio(opts.stdout.as_deref(), |p| File::create(p), Stdio::null())?;
    let spawned = Command::new(&opts.qemu)
        .env_clear()
        .current_dir(&dir.0)
        .args(&qemu_args)
        .arg(&guest)
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(stdout)
        .spawn();
    // The child has its copy; ours must close so EOF arrives when the child exits.
    drop(write_end);
    let mut child = spawned.map_err(|e| format!("cannot run `{}`: {e}", opts.qemu))?;
    let pid = child.id();
    let mut src = VgToolSource::new(
        read_end,
        &format!("tlblab's QEMU plugin's output of {name}"),
    );
    let mut buf = Vec::with_capacity(8192);
    let (mut seen, mut killed) = (0u64, false);
    let result: Result<(), String> = (|| {
        loop {
            if opts.stop.is_some_and(|stop| stop()) {
                return Err("interrupted".to_string());
            }
            buf.clear();
            if src.fill(&mut buf, 8192)? == 0 {
                break;
            }
            for r in &buf {
                if opts.limit.is_some_and(|l| seen >= l) {
                    break;
                }
                if let crate::record::Record::Access(_) = r {
                    seen += 1;
                }
                writer.write(r).map_err(|e| e.message)?;
            }
            if opts.limit.is_some_and(|l| seen >= l) {
                // SAFETY: signalling our own child by pid.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                killed = true;
                break;
            }
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = child.kill();
    }
    let end = src.end;
    drop(src);
    let status = child.wait().map_err(|e| format!("waiting for qemu: {e}"))?;
    result?;
    if seen == 0 && !status.success() {
        return Err(format!(
            "qemu produced no trace and exited with {status}: is `{}` a program `{}` runs?",
            argv[0], opts.qemu
        ));
    }
    if end.is_none() && !killed {
        return Err(format!(
            "the trace of {} is incomplete: qemu exited with {status} before the plugin ended its stream; no trace written",
            argv[0]
        ));
    }
    debug_assert!(end != Some(StreamEnd::MaxInstructions));
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    writer.set_footer("maps", Value::String(String::new()));
    writer.set_footer("exit_status", json!(status.code()));
    writer.set_footer("signal", json!(if killed { None } else { signal }));
    writer.set_footer("killed_at_limit", json!(killed));
    let summary = writer.finish().map_err(|e| e.message)?;
    Ok(QemuReport {
        summary,
        references_seen: seen,
        exit_status: status.code(),
        killed_at_limit: killed,
    })
}
