//! `tlblab trace record`: run a real program under Valgrind and convert its references while
//! they stream, through a pipe — no intermediate file ever touches the disk.
//!
//! Two Valgrind tools can produce the references, the same ones in the same order:
//! - tlblab's own tool (`runtime/valgrind/`, the default): binary words written to the pipe
//!   (`--out-fd=N`), read by `vgtool.rs`; it also gives thread ids, region-of-interest marks,
//!   and instruction-count windows (`--skip-instructions`, `--max-instructions`, `--roi-only`)
//!   during which the code outside is not instrumented at all;
//! - Lackey (`--tool lackey`): text lines on Valgrind's log descriptor (`--log-fd=N`), parsed by
//!   `lackey.rs`.
//!
//! Both run with `VALGRIND_LIB` set to the directory the runtime's CMake build fills (tlblab's
//! tool beside links to the core files and to Lackey), when it is given: the program's
//! environment, and so its stack addresses, are then the same under both tools. A caller that
//! needs the same bytes on every run (seed 004's x86 captures) fixes the program's working folder,
//! its whole environment (Lackey then without `VALGRIND_LIB`) and turns ASLR off
//! (`CaptureOptions::{cwd, env, no_aslr}`; docs/traces.md says what each moved).
//!
//! The program's own stdout/stderr stay untouched. Meanwhile a poller snapshots
//! `/proc/PID/maps` of the traced process (Valgrind runs the guest in its own process, so the
//! addresses in the maps are exactly the ones the tool reports) and keeps the last snapshot,
//! which goes into the footer. `skip`/`limit` select a window of references; once `limit`
//! references are recorded (or the tool says `--max-instructions` were traced) the program is
//! killed and the file is completed.

use crate::format::writer::Summary;
use crate::format::{TraceWriter, WriterOptions};
use crate::lackey::LackeySource;
use crate::source::RecordSource;
use crate::vgtool::{StreamEnd, VgToolSource};
use serde_json::{json, Value};
use std::fs::File;
use std::io::BufReader;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The Valgrind tool that produces the references.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureTool {
    /// tlblab's own tool (`runtime/valgrind/tlblab_main.c`); needs `tool_dir`.
    Tlblab,
    /// Valgrind's Lackey (`--trace-mem=yes`), text through the log descriptor.
    Lackey,
}

impl CaptureTool {
    pub fn name(self) -> &'static str {
        match self {
            CaptureTool::Tlblab => "tlblab",
            CaptureTool::Lackey => "lackey",
        }
    }
}

#[derive(Clone, Debug)]
pub struct CaptureOptions {
    pub valgrind: String,
    pub tool: CaptureTool,
    /// `VALGRIND_LIB` for the run: the directory holding `tlblab-amd64-linux` and links to the
    /// core's files and to Lackey (`build/runtime/valgrind`). Required for `CaptureTool::Tlblab`;
    /// used for Lackey too when given, so both tools run the program in the same environment.
    pub tool_dir: Option<std::path::PathBuf>,
    /// tlblab's tool only: trace only between the program's `TLBLAB_ROI_BEGIN()`/`END()`.
    pub roi_only: bool,
    /// tlblab's tool only: guest instructions run untraced (only counted) before tracing starts.
    pub skip_instructions: u64,
    /// tlblab's tool only: traced instructions after which the program is stopped.
    pub max_instructions: Option<u64>,
    /// tlblab's tool only: before each load whose address came from an earlier load, a
    /// `Depends` event naming it (`--dependence=yes`; not with `skip_instructions`).
    pub dependence: bool,
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
    /// Lackey only: also trace the program's system calls (`--trace-syscalls=yes`) and hand
    /// back Valgrind's `SYSCALL` lines, each with the memory lines before it
    /// (`CaptureReport::syscalls`), so a caller that needs both makes one run, not two.
    pub trace_syscalls: bool,
    /// The program's working folder (default: ours).
    pub cwd: Option<std::path::PathBuf>,
    /// Exactly this environment for Valgrind and the program (default: ours, inherited). Lackey
    /// then runs from the installed Valgrind, without `VALGRIND_LIB`: the client's `LD_PRELOAD`
    /// names Valgrind's library folder, so the checkout's path would size the client's stack.
    pub env: Option<Vec<(String, String)>>,
    /// Run Valgrind with address-space randomization off (the `ADDR_NO_RANDOMIZE` personality,
    /// as `setarch -R`): Valgrind places the client's stack below its own initial stack pointer
    /// (aspacemgr-linux.c, `VG_(am_startup)`), so with ASLR every run's stack addresses differ.
    pub no_aslr: bool,
    /// Run Valgrind as pid 1 of a PID namespace of its own (`pidns`), so that a program that
    /// formats its pid into memory (troff) is captured with the same bytes on every machine.
    /// Where no namespace can be made here, the capture runs as without it and says why on
    /// stderr.
    pub own_pid_namespace: bool,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            valgrind: "valgrind".into(),
            tool: CaptureTool::Lackey,
            tool_dir: None,
            roi_only: false,
            skip_instructions: 0,
            max_instructions: None,
            dependence: false,
            skip: 0,
            limit: None,
            progress: false,
            stdin: None,
            stdout: None,
            stop: None,
            trace_syscalls: false,
            cwd: None,
            env: None,
            no_aslr: false,
            own_pid_namespace: false,
        }
    }
}

#[derive(Debug)]
pub struct CaptureReport {
    pub summary: Summary,
    /// Lackey lines read (0 with tlblab's tool).
    pub lackey_lines: u64,
    /// Bytes the tool wrote to the pipe (words or text).
    pub stream_bytes: u64,
    /// tlblab's tool only: `--max-instructions` traced instructions were reached.
    pub stopped_at_max_instructions: bool,
    pub references_seen: u64,
    pub seconds: f64,
    pub exit_status: Option<i32>,
    pub killed_at_limit: bool,
    /// With `trace_syscalls`: Valgrind's `SYSCALL` lines and, before each, the Lackey memory
    /// lines (`I`, `L`, `S`, `M`: an `M` once) of the run; and the memory lines in all.
    pub syscalls: Option<Vec<(u64, String)>>,
    pub memory_lines: u64,
}

fn valgrind_version(vg: &str) -> Option<String> {
    let o = Command::new(vg).arg("--version").output().ok()?;
    Some(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// Counts the bytes read through it (the size of the tool's stream, for the report).
struct Counted<R> {
    inner: R,
    bytes: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.set(self.bytes.get() + n as u64);
        Ok(n)
    }
}

/// Reads a pipe in large pieces, never waiting inside read(2) while the pipe is still filling.
///
/// Lackey prints one line per reference, and Valgrind's `VG_(printf)` ends each call with a
/// write(2) of what it formatted (coregrind/m_libcprint.c, `vprintf_WRK`): one system call per
/// line. A reader blocked in read(2) is woken by every one of them (pipe_write wakes the
/// readers waiting on an empty pipe), and each wake-up is a context switch on both sides and,
/// across the cores of a virtual machine, an interrupt between them: a whole capture of
/// basicmath took 57 s of system time to 7 s of user time that way (8.6 M lines, 3.2 M
/// voluntary context switches; docs/lab/2026-11-30-issue89-fresh-captures.md). This reader asks
/// how much the pipe holds (FIONREAD) and sleeps while that is less than half its capacity, so
/// no reader waits on the pipe and the writer's write(2) wakes no one; it reads at once when
/// the pipe is half full, when the writer has closed its end (POLLHUP), or after `MAX_WAIT`,
/// so a slow writer's lines still arrive. The bytes read are the same, in the same order.
struct Patient {
    pipe: File,
    /// Bytes worth waiting for: half the pipe's capacity.
    want: usize,
}

impl Patient {
    /// Sleep between two looks at the pipe.
    const NAP: Duration = Duration::from_millis(2);
    /// The longest wait for `want` bytes before reading what there is.
    const MAX_WAIT: Duration = Duration::from_millis(100);

    fn new(pipe: File) -> Self {
        // SAFETY: fcntl on our own descriptor.
        let capacity = unsafe { libc::fcntl(pipe.as_raw_fd(), libc::F_GETPIPE_SZ) };
        Patient {
            pipe,
            want: (capacity.max(4096) as usize) / 2,
        }
    }

    /// True when reading now will not wait: `want` bytes are there, or the writer is gone.
    fn ready(&self, want: usize) -> bool {
        let fd = self.pipe.as_raw_fd();
        let mut held: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int through the pointer we give.
        if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut held) } != 0 || held as usize >= want {
            return true;
        }
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd of ours, timeout 0: it never waits.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        r < 0 || p.revents & (libc::POLLHUP | libc::POLLERR) != 0
    }
}

impl std::io::Read for Patient {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = self.want.min(buf.len()).max(1);
        let start = Instant::now();
        while !self.ready(want) && start.elapsed() < Self::MAX_WAIT {
            std::thread::sleep(Self::NAP);
        }
        self.pipe.read(buf)
    }
}

/// The pipe as the tool's source reads it.
enum PipeReader {
    Eager(File),
    Patient(Patient),
}

impl std::io::Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            PipeReader::Eager(f) => f.read(buf),
            PipeReader::Patient(p) => p.read(buf),
        }
    }
}

/// The tool's reader, whichever tool runs.
enum ToolSource<R: std::io::Read> {
    Tlblab(VgToolSource<R>),
    Lackey(LackeySource<BufReader<R>>),
}

impl<R: std::io::Read> ToolSource<R> {
    fn fill(&mut self, out: &mut Vec<crate::record::Record>, max: usize) -> Result<usize, String> {
        match self {
            ToolSource::Tlblab(s) => s.fill(out, max),
            ToolSource::Lackey(s) => s.fill(out, max),
        }
    }
    /// The stream's end mark, if this tool writes one: Some(None) while it has not come.
    fn end(&self) -> Option<Option<StreamEnd>> {
        match self {
            ToolSource::Tlblab(s) => Some(s.end),
            ToolSource::Lackey(_) => None,
        }
    }
}

/// A pipe for a child's records: the read end ours (close-on-exec, 1 MiB instead of 64 KiB, so
/// that the writing child stalls less on our scheduling, which is most of the cost of streaming
/// instead of writing a file), the write end for the child to inherit. Dropping the write end
/// closes it: after the spawn (so that EOF arrives when the child exits), or on an error before.
pub(crate) fn child_pipe() -> Result<(File, OwnedFd), String> {
    let mut fds = [0i32; 2];
    // SAFETY: plain pipe2 on a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: pipe2 made both descriptors and nothing else owns them; the File and the OwnedFd
    // close them.
    let (read_end, write_end) =
        unsafe { (File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on our own descriptors; a failure to grow only leaves the default size.
    unsafe {
        libc::fcntl(read_end.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
        libc::fcntl(write_end.as_raw_fd(), libc::F_SETFD, 0);
    }
    Ok((read_end, write_end))
}

/// The file at `path` opened by `open` for a child's stdin or stdout (`none` without a path),
/// an error naming the file.
pub(crate) fn child_stdio(
    path: Option<&Path>,
    open: fn(&Path) -> std::io::Result<File>,
    none: Stdio,
) -> Result<Stdio, String> {
    match path {
        Some(p) => Ok(Stdio::from(
            open(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => Ok(none),
    }
}

/// The valgrind command line for `argv` under the chosen tool, writing to descriptor `wfd`.
fn valgrind_args(opts: &CaptureOptions, wfd: i32) -> Vec<String> {
    // --vgdb=no: Valgrind's gdbserver is of no use to a capture, and its FIFOs
    // (/tmp/vgdb-pipe-*) outlived a capture that was interrupted (issue 88).
    let mut a: Vec<String> = vec!["-q".into(), "--vgdb=no".into()];
    match opts.tool {
        CaptureTool::Tlblab => {
            a.push("--tool=tlblab".into());
            a.push(format!("--out-fd={wfd}"));
            if opts.roi_only {
                a.push("--roi-only=yes".into());
            }
            if opts.skip_instructions > 0 {
                a.push(format!("--skip-instructions={}", opts.skip_instructions));
            }
            if let Some(m) = opts.max_instructions {
                a.push(format!("--max-instructions={m}"));
            }
            if opts.dependence {
                a.push("--dependence=yes".into());
            }
        }
        CaptureTool::Lackey => {
            a.extend(["--tool=lackey", "--trace-mem=yes", "--basic-counts=no"].map(String::from));
            if opts.trace_syscalls {
                a.push("--trace-syscalls=yes".into());
            }
            a.push(format!("--log-fd={wfd}"));
        }
    }
    a
}

pub fn record(
    argv: &[String],
    output: &Path,
    opts: &CaptureOptions,
) -> Result<CaptureReport, String> {
    if argv.is_empty() {
        return Err("nothing to record: give a program and its arguments after --".into());
    }
    if opts.tool == CaptureTool::Lackey
        && (opts.roi_only
            || opts.skip_instructions > 0
            || opts.max_instructions.is_some()
            || opts.dependence)
    {
        return Err(
            "--roi-only, --skip-instructions, --max-instructions and --dependence need tlblab's Valgrind tool, not Lackey"
                .into(),
        );
    }
    if opts.dependence && opts.skip_instructions > 0 {
        return Err(
            "--dependence cannot be combined with --skip-instructions (the tool's translations made while skipping carry no dependences); use --roi-only to start tracing at a region of interest"
                .into(),
        );
    }
    if opts.trace_syscalls && opts.tool != CaptureTool::Lackey {
        return Err("tracing the system calls needs Lackey (--tool lackey)".into());
    }
    if opts.max_instructions == Some(0) {
        return Err("--max-instructions must be at least 1".into());
    }
    if opts.tool == CaptureTool::Tlblab {
        let dir = opts.tool_dir.as_ref().ok_or(
            "tlblab's Valgrind tool needs its directory (build/runtime/valgrind: `make setup` builds it)",
        )?;
        let exe = dir.join("tlblab-amd64-linux");
        if !exe.exists() {
            return Err(format!(
                "tlblab's Valgrind tool is not built: no {} (`make setup` builds it; `--tool lackey` runs without it)",
                exe.display()
            ));
        }
    }
    let version = valgrind_version(&opts.valgrind).ok_or_else(|| {
        format!(
            "cannot run `{}`: is valgrind installed? (Debian package `valgrind`)",
            opts.valgrind
        )
    })?;
    let (read_end, write_end) = child_pipe()?;
    let wfd = write_end.as_raw_fd();
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let vg_args = valgrind_args(opts, wfd);
    let shown_options: Vec<&String> = vg_args
        .iter()
        .filter(|a| !a.starts_with("--log-fd=") && !a.starts_with("--out-fd="))
        .collect();
    let threads_note = match opts.tool {
        CaptureTool::Tlblab => "one thread per program thread, in Valgrind's order: Valgrind runs one thread at a time (its big lock) and switches threads at syscalls and every 100,000 superblocks",
        CaptureTool::Lackey => "Lackey does not print thread ids: every access is attributed to thread 0",
    };
    let meta = json!({
        "program": argv[0],
        "argv": argv,
        "cwd": match &opts.cwd {
            Some(dir) => dir.display().to_string(),
            None => std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default(),
        },
        "page_size": page_size,
        "capture": {
            "tool": format!("valgrind-{}", opts.tool.name()),
            "valgrind_version": version,
            "options": shown_options,
            "skip": opts.skip,
            "limit": opts.limit,
            "roi_only": opts.roi_only,
            "skip_instructions": opts.skip_instructions,
            "max_instructions": opts.max_instructions,
            "dependence": opts.dependence,
            "threads": threads_note,
        },
        // Region 0 is the program's TLBLAB_ROI_BEGIN/END (tlblab's tool writes its marks as
        // PhaseBegin/PhaseEnd of region 0); Lackey sees no marks.
        "regions": match opts.tool {
            CaptureTool::Tlblab => vec![crate::vgtool::ROI_REGION_NAME],
            CaptureTool::Lackey => vec![],
        },
    });
    let mut writer =
        TraceWriter::create(output, &meta, WriterOptions::default()).map_err(|e| e.message)?;
    let stdin = child_stdio(opts.stdin.as_deref(), |p| File::open(p), Stdio::null())?;
    let stdout = child_stdio(
        opts.stdout.as_deref(),
        |p| File::create(p),
        Stdio::inherit(),
    )?;
    let (mut cmd, wrapped) =
        crate::pidns::command(&opts.valgrind, opts.own_pid_namespace, &argv[0]);
    if let Some(env) = &opts.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    if let Some(dir) = &opts.tool_dir {
        if opts.env.is_none() || opts.tool == CaptureTool::Tlblab {
            cmd.env("VALGRIND_LIB", dir);
        }
    }
    if let Some(dir) = &opts.cwd {
        cmd.current_dir(dir);
    }
    if opts.no_aslr {
        use std::os::unix::process::CommandExt;
        // SAFETY: personality(2) is a plain system call, safe between fork and exec; the flag
        // is kept across exec. 0xffffffff asks for the current persona without changing it.
        unsafe {
            cmd.pre_exec(|| {
                let now = libc::personality(0xffff_ffff);
                if now == -1
                    || libc::personality((now | libc::ADDR_NO_RANDOMIZE) as libc::c_ulong) == -1
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let spawned = cmd
        .args(&vg_args)
        .args(argv)
        .stdin(stdin)
        .stdout(stdout)
        .spawn();
    // The child has its copy; ours must close so EOF arrives when the child exits.
    drop(write_end);
    let mut child = spawned.map_err(|e| format!("cannot run `{}`: {e}", opts.valgrind))?;
    let pid = child.id();

    // Poll /proc/PID/maps, keeping the last readable snapshot taken while the process was not
    // exiting: once it exits, the kernel tears its mappings down (exit_mmap) and a snapshot
    // read then can hold only some of them (a fresh clone's CI once kept one that ended before
    // libc). The kernel sets PF_EXITING in /proc/PID/stat's flags before that, so a snapshot
    // is kept only when the flag is clear both before and after it was read.
    let maps = Arc::new(Mutex::new(String::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (maps, stop) = (maps.clone(), stop.clone());
        // Under `unshare --fork` (own_pid_namespace) Valgrind is the wrapper's child: its pid
        // is read once the wrapper has forked.
        let mut traced = if wrapped { None } else { Some(pid) };
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if traced.is_none() {
                    traced = crate::pidns::first_child(pid);
                }
                if let Some(traced) = traced {
                    let live = || process_not_exiting(traced);
                    if live() {
                        if let Ok(t) = std::fs::read_to_string(format!("/proc/{traced}/maps")) {
                            if !t.is_empty() && live() {
                                *maps.lock().unwrap() = t;
                            }
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };

    let t0 = Instant::now();
    let stream_bytes = std::rc::Rc::new(std::cell::Cell::new(0u64));
    // Lackey's lines come one write(2) each (`Patient`) over a whole run. A capture with a
    // `limit` is read as the lines come, so that the program is killed at its limit at once:
    // read late, it runs on meanwhile, and the footer's last snapshot of its mappings (the
    // poller's) can be a later one (two bounded captures of qsort then differed in their
    // mappings). tlblab's tool writes its words in large buffers and is read as they come.
    let counted = Counted {
        inner: match opts.tool {
            CaptureTool::Lackey if opts.limit.is_none() => {
                PipeReader::Patient(Patient::new(read_end))
            }
            _ => PipeReader::Eager(read_end),
        },
        bytes: stream_bytes.clone(),
    };
    let source_name = format!("valgrind --tool={} output of {}", opts.tool.name(), argv[0]);
    let mut src = match opts.tool {
        CaptureTool::Tlblab => ToolSource::Tlblab(VgToolSource::new(counted, &source_name)),
        CaptureTool::Lackey => {
            let s = LackeySource::new(BufReader::with_capacity(1 << 20, counted), &source_name);
            ToolSource::Lackey(if opts.trace_syscalls {
                s.keep_syscalls()
            } else {
                s
            })
        }
    };
    let mut buf = Vec::with_capacity(8192);
    let mut seen = 0u64;
    let mut kept = 0u64;
    let mut killed = false;
    let mut at_max = false;
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
                if let crate::record::Record::Access(_) = r {
                    seen += 1;
                    if seen <= opts.skip {
                        continue;
                    }
                    if opts.limit.is_some_and(|l| kept >= l) {
                        break;
                    }
                    kept += 1;
                } else if seen < opts.skip || opts.limit.is_some_and(|l| kept >= l) {
                    // Events outside the reference window are dropped with it.
                    continue;
                }
                writer.write(r).map_err(|e| e.message)?;
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
        if src.end() == Some(Some(StreamEnd::MaxInstructions)) {
            // The tool traced --max-instructions instructions and ended its stream: stop the
            // program, as at --limit.
            // SAFETY: signalling our own child by pid.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            at_max = true;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = child.kill();
    }
    let (lines, memory_lines, syscalls) = match &mut src {
        ToolSource::Lackey(s) => (s.line_no(), s.memory_lines, s.syscalls.take()),
        ToolSource::Tlblab(_) => (0, 0, None),
    };
    let tool_end = src.end();
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
        && !at_max
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
    let stream_cut = tool_end == Some(None) && !killed;
    if seen == 0 && (stream_cut || (tool_end.is_none() && !status.success())) {
        // Valgrind could not start the program (its own message is on stderr).
        return Err(format!(
            "valgrind produced no trace and exited with {status}: is `{}` a program valgrind can run?",
            argv[0]
        ));
    }
    if stream_cut {
        // tlblab's tool writes its END word on every exit it sees, a fatal signal included:
        // a stream without it was cut short.
        return Err(format!(
            "the trace of {} is incomplete: valgrind exited with {status} before tlblab's tool ended its stream; no trace written",
            argv[0]
        ));
    }
    let maps_text = maps.lock().unwrap().clone();
    writer.set_footer("maps", Value::String(maps_text));
    writer.set_footer("exit_status", json!(status.code()));
    writer.set_footer("signal", json!(signal));
    writer.set_footer("killed_at_limit", json!(killed));
    writer.set_footer("stopped_at_max_instructions", json!(at_max));
    writer.set_footer("capture_seconds", json!(seconds));
    writer.set_footer("stream_bytes", json!(stream_bytes.get()));
    if opts.tool == CaptureTool::Lackey {
        writer.set_footer("lackey_lines", json!(lines));
    }
    let summary = writer.finish().map_err(|e| e.message)?;
    Ok(CaptureReport {
        summary,
        lackey_lines: lines,
        stream_bytes: stream_bytes.get(),
        stopped_at_max_instructions: at_max,
        references_seen: seen,
        seconds,
        exit_status: status.code(),
        killed_at_limit: killed,
        syscalls,
        memory_lines,
    })
}

/// Whether process `pid` is alive and not exiting: /proc/PID/stat readable and its flags (the
/// ninth field, after the parenthesised command name) without PF_EXITING (0x4, Linux's
/// include/linux/sched.h).
fn process_not_exiting(pid: u32) -> bool {
    const PF_EXITING: u64 = 0x4;
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return false;
    };
    // After the name: state, ppid, pgrp, session, tty_nr, tpgid, flags.
    match rest
        .split_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
    {
        Some(flags) => flags & PF_EXITING == 0,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A writer that makes one write(2) per line, as Valgrind's printf does for Lackey.
    fn write_lines(w: OwnedFd, lines: usize) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            let mut f = File::from(w);
            for i in 0..lines {
                f.write_all(format!(" L {i:08x},8\n").as_bytes()).unwrap();
            }
        })
    }

    #[test]
    fn given_a_writer_of_one_line_per_write_then_the_patient_reader_reads_every_byte_in_order_in_few_reads(
    ) {
        let (r, w) = child_pipe().unwrap();
        let lines = 200_000;
        let writer = write_lines(w, lines);
        let mut p = Patient::new(r);
        let (mut got, mut reads) = (Vec::new(), 0usize);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = p.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            reads += 1;
            got.extend_from_slice(&buf[..n]);
        }
        writer.join().unwrap();
        let want: Vec<u8> = (0..lines)
            .flat_map(|i| format!(" L {i:08x},8\n").into_bytes())
            .collect();
        assert!(got == want, "the bytes differ");
        // 2.8 MB in pieces of at least half the pipe (or what came within MAX_WAIT): far fewer
        // reads than the 200,000 writes.
        assert!(reads < 2_000, "{reads} reads");
    }

    #[test]
    fn given_a_writer_that_closes_then_the_patient_reader_sees_the_end_without_waiting_out_max_wait(
    ) {
        let (r, w) = child_pipe().unwrap();
        let mut f = File::from(w);
        f.write_all(b"I  00400000,4\n").unwrap();
        drop(f);
        let mut p = Patient::new(r);
        let mut buf = [0u8; 64];
        let t = Instant::now();
        assert_eq!(p.read(&mut buf).unwrap(), 14);
        assert_eq!(p.read(&mut buf).unwrap(), 0);
        // A reader that waited out MAX_WAIT would take it on each of the two reads; the bound
        // leaves a loaded machine room to deschedule us without letting that reader pass.
        assert!(t.elapsed() < 2 * Patient::MAX_WAIT, "{:?}", t.elapsed());
    }
}
