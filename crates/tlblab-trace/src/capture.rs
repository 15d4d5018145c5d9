//! `tlblab trace record`: run a real program under Valgrind Lackey and convert its output while
//! it streams, through a pipe — no text file ever touches the disk.
//!
//! Valgrind is told to write its log (the Lackey lines) to the write end of a pipe we create
//! (`--log-fd=N`), so the program's own stdout/stderr stay untouched. The reader thread parses
//! Lackey lines (`lackey.rs`) into the native writer. Meanwhile a poller snapshots
//! `/proc/PID/maps` of the traced process (Valgrind runs the guest in its own process, so the
//! addresses in the maps are exactly the ones Lackey prints) and keeps the last snapshot, which
//! goes into the footer. `skip`/`limit` select a window of the run; once `limit` references are
//! recorded the program is killed and the file is completed.

use crate::format::writer::Summary;
use crate::format::{TraceWriter, WriterOptions};
use crate::lackey::LackeySource;
use crate::source::RecordSource;
use serde_json::{json, Value};
use std::fs::File;
use std::io::BufReader;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Debug)]
pub struct CaptureOptions {
    pub valgrind: String,
    /// References to drop at the start of the run (a window's start).
    pub skip: u64,
    /// References to keep (the window's length); the program is killed after that.
    pub limit: Option<u64>,
    /// Print a progress line to stderr about once a second.
    pub progress: bool,
    /// Files for the program's stdin / stdout (default: /dev/null / inherited), so programs
    /// that filter can be traced without a shell in between (Lackey would trace the shell).
    pub stdin: Option<std::path::PathBuf>,
    pub stdout: Option<std::path::PathBuf>,
    /// Asked between batches of the program's references: `true` stops the program and fails
    /// the capture with "interrupted", leaving no file (the Python binding passes its Ctrl-C
    /// check here).
    pub stop: Option<fn() -> bool>,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            valgrind: "valgrind".into(),
            skip: 0,
            limit: None,
            progress: false,
            stdin: None,
            stdout: None,
            stop: None,
        }
    }
}

#[derive(Debug)]
pub struct CaptureReport {
    pub summary: Summary,
    pub lackey_lines: u64,
    pub references_seen: u64,
    pub seconds: f64,
    pub exit_status: Option<i32>,
    pub killed_at_limit: bool,
}

fn valgrind_version(vg: &str) -> Option<String> {
    let o = Command::new(vg).arg("--version").output().ok()?;
    Some(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

pub fn record(
    argv: &[String],
    output: &Path,
    opts: &CaptureOptions,
) -> Result<CaptureReport, String> {
    if argv.is_empty() {
        return Err("nothing to record: give a program and its arguments after --".into());
    }
    let version = valgrind_version(&opts.valgrind).ok_or_else(|| {
        format!(
            "cannot run `{}`: is valgrind installed? (Debian package `valgrind`)",
            opts.valgrind
        )
    })?;
    // The pipe: read end stays here (close-on-exec), write end is inherited by valgrind.
    let mut fds = [0i32; 2];
    // SAFETY: plain pipe2 on a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    let (rfd, wfd) = (fds[0], fds[1]);
    // A 1 MiB pipe instead of 64 KiB: valgrind (the writer) stalls less on the reader's
    // scheduling, which is most of the cost of streaming instead of writing a file.
    // SAFETY: fcntl on our own descriptor; failure only leaves the default size.
    unsafe { libc::fcntl(rfd, libc::F_SETPIPE_SZ, 1 << 20) };
    // SAFETY: clearing FD_CLOEXEC on a descriptor we own.
    unsafe { libc::fcntl(wfd, libc::F_SETFD, 0) };
    // SAFETY: we own rfd; File takes ownership and closes it.
    let read_end = unsafe { File::from_raw_fd(rfd) };
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let meta = json!({
        "program": argv[0],
        "argv": argv,
        "cwd": std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default(),
        "page_size": page_size,
        "capture": {
            "tool": "valgrind-lackey",
            "valgrind_version": version,
            "options": ["-q", "--tool=lackey", "--trace-mem=yes", "--basic-counts=no"],
            "skip": opts.skip,
            "limit": opts.limit,
            "threads": "Lackey does not print thread ids: every access is attributed to thread 0",
        },
        "regions": [],
    });
    let mut writer = TraceWriter::create(output, &meta, WriterOptions::default()).map_err(|e| {
        unsafe { libc::close(wfd) };
        e.message
    })?;
    let stdin = match &opts.stdin {
        Some(p) => Stdio::from(File::open(p).map_err(|e| {
            unsafe { libc::close(wfd) };
            format!("{}: {e}", p.display())
        })?),
        None => Stdio::null(),
    };
    let stdout = match &opts.stdout {
        Some(p) => Stdio::from(File::create(p).map_err(|e| {
            unsafe { libc::close(wfd) };
            format!("{}: {e}", p.display())
        })?),
        None => Stdio::inherit(),
    };
    let spawned = Command::new(&opts.valgrind)
        .arg("-q")
        .arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg("--basic-counts=no")
        .arg(format!("--log-fd={wfd}"))
        .args(argv)
        .stdin(stdin)
        .stdout(stdout)
        .spawn();
    // SAFETY: the child has its copy; ours must close so EOF arrives when the child exits.
    unsafe { libc::close(wfd) };
    let mut child = spawned.map_err(|e| format!("cannot run `{}`: {e}", opts.valgrind))?;
    let pid = child.id();

    // Poll /proc/PID/maps, keeping the last readable snapshot.
    let maps = Arc::new(Mutex::new(String::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (maps, stop) = (maps.clone(), stop.clone());
        std::thread::spawn(move || {
            let path = format!("/proc/{pid}/maps");
            while !stop.load(Ordering::Relaxed) {
                if let Ok(t) = std::fs::read_to_string(&path) {
                    if !t.is_empty() {
                        *maps.lock().unwrap() = t;
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let t0 = Instant::now();
    let mut src = LackeySource::new(
        BufReader::with_capacity(1 << 20, read_end),
        &format!("valgrind output of {}", argv[0]),
    );
    let mut buf = Vec::with_capacity(8192);
    let mut seen = 0u64;
    let mut kept = 0u64;
    let mut killed = false;
    let mut last_report = Instant::now();
    let result: Result<(), String> = (|| {
        loop {
            if opts.stop.is_some_and(|stop| stop()) {
                return Err("interrupted".to_string());
            }
            buf.clear();
            let n = src.fill(&mut buf, 8192)?;
            if n == 0 {
                break;
            }
            for r in &buf {
                seen += 1;
                if seen <= opts.skip {
                    continue;
                }
                if opts.limit.is_some_and(|l| kept >= l) {
                    break;
                }
                writer.write(r).map_err(|e| e.message)?;
                kept += 1;
            }
            if opts.limit.is_some_and(|l| kept >= l) {
                // The window is complete: stop the program.
                // SAFETY: signalling our own child by pid.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                killed = true;
                break;
            }
            if opts.progress && last_report.elapsed() >= Duration::from_secs(1) {
                last_report = Instant::now();
                let s = t0.elapsed().as_secs_f64();
                eprint!(
                    "\rrecord: {:.1} M references captured, {:.2} M refs/s, {:.1} MB written   ",
                    kept as f64 / 1e6,
                    seen as f64 / 1e6 / s,
                    writer.bytes_written() as f64 / 1e6
                );
            }
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = child.kill();
    }
    let lines = src.line_no();
    drop(src);
    let status = child
        .wait()
        .map_err(|e| format!("waiting for valgrind: {e}"))?;
    stop.store(true, Ordering::Relaxed);
    let _ = poller.join();
    if opts.progress {
        eprintln!();
    }
    result?;
    let seconds = t0.elapsed().as_secs_f64();
    // Valgrind (and the program under it) stopped by a signal meant to stop a command (Ctrl-C
    // reaches the whole process group, so the program may die before our own check sees it):
    // the trace is cut short at a point nobody chose, so it is not kept. A program that dies
    // of its own fault (SIGSEGV, SIGABRT) keeps its trace, with the signal in the footer.
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    if !killed
        && signal.is_some_and(|s| {
            [
                libc::SIGINT,
                libc::SIGTERM,
                libc::SIGHUP,
                libc::SIGKILL,
                libc::SIGQUIT,
            ]
            .contains(&s)
        })
    {
        return Err(format!(
            "interrupted: valgrind was stopped by signal {} after {seen} references; no trace written",
            signal.unwrap_or(0)
        ));
    }
    if seen == 0 && !status.success() {
        return Err(format!(
            "valgrind produced no trace and exited with {status}: is `{}` a program valgrind can run?",
            argv[0]
        ));
    }
    let maps_text = maps.lock().unwrap().clone();
    writer.set_footer("maps", Value::String(maps_text));
    writer.set_footer("exit_status", json!(status.code()));
    writer.set_footer("signal", json!(signal));
    writer.set_footer("killed_at_limit", json!(killed));
    writer.set_footer("capture_seconds", json!(seconds));
    writer.set_footer("lackey_lines", json!(lines));
    let summary = writer.finish().map_err(|e| e.message)?;
    Ok(CaptureReport {
        summary,
        lackey_lines: lines,
        references_seen: seen,
        seconds,
        exit_status: status.code(),
        killed_at_limit: killed,
    })
}
