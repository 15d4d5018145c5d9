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
//! - the environment is empty (it lies on the guest's stack), or exactly the variables a caller
//!   gives (`QemuOptions::env`, in their order: a program that reads the clock takes its time
//!   from one, seed 004's troff), which the metadata then names;
//! - argv[0] is the program's file name without its folder (QEMU's `-0`), and the program runs
//!   from a copy at a path of one fixed length (`/tmp/tlblab-qemu-XXXXXX/prog`), because the
//!   kernel-style loader puts the path on the stack (AT_EXECFN): its length moves the stack;
//! - input files are copied into that folder (`QemuOptions::files`) and named by their file name
//!   alone in argv, so that no host folder's path reaches the guest's stack;
//! - the metadata names no folder (the sysroot by its last component) and the footer holds no
//!   time.
//!
//! The guest's mappings are QEMU's, not the host process's: `/proc/PID/maps` of QEMU shows
//! host addresses, so the footer's `maps` is empty (the pages touched are in the trace).
//!
//! The guest's system calls, which the references do not show (seed 004's Tables 2-3 charge
//! each as a kernel entry, and a munmap's or mprotect's TLB maintenance), are in the footer's
//! `syscalls`: one `[at, number, arg1, arg2, arg3, result]` per call in the order the guest made
//! them, `at` the trace's references before it (the plugin's `sysfd` lines, `SyscallLog`), the
//! number, arguments and result as the guest's ABI gives them (an ARMv7 guest's arguments in
//! their low 32 bits; `result` null for a call that never returned, exit_group, and for one whose
//! result is a host's process or thread id, `HOST_ID_CALLS`). A capture cut at a limit keeps the
//! calls before the limit.

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
    /// Files copied into the guest's working folder before the run, each under its file name
    /// (the program's inputs, named so in argv).
    pub files: Vec<PathBuf>,
    /// The guest's whole environment, `(name, value)` in order (empty: none). It reaches the guest
    /// through QEMU's `-E`, so QEMU's own environment stays empty (QEMU reads `QEMU_*` variables
    /// itself).
    pub env: Vec<(String, String)>,
    /// References to keep; the program is killed after that.
    pub limit: Option<u64>,
    /// The program's stdout (default: discarded).
    pub stdout: Option<PathBuf>,
    /// Asked between batches: `true` stops the program and fails the capture.
    pub stop: Option<fn() -> bool>,
    /// Run QEMU (which runs the guest in its own process, so the guest's pid is QEMU's) as pid 1
    /// of a PID namespace of its own (`crate::pidns`): as `CaptureOptions::own_pid_namespace`.
    pub own_pid_namespace: bool,
}

#[derive(Debug)]
pub struct QemuReport {
    pub summary: Summary,
    pub references_seen: u64,
    pub exit_status: Option<i32>,
    pub killed_at_limit: bool,
    /// The guest's system calls kept in the footer (`syscalls`).
    pub syscalls: u64,
}

fn qemu_version(qemu: &str) -> Option<String> {
    let o = Command::new(qemu).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    text.lines().next().map(|l| l.trim().to_string())
}

/// The calls whose result is an id QEMU's host process or thread has (QEMU's user mode runs the
/// guest as itself): their results would make two captures of one program differ, so the
/// footer leaves them out. ARM EABI numbers (Linux arch/arm/tools/syscall.tbl): fork 2, getpid
/// 20, getppid 64, clone 120, vfork 190, gettid 224, set_tid_address 256.
const HOST_ID_CALLS: [i128; 7] = [2, 20, 64, 120, 190, 224, 256];

/// The guest's system calls as the plugin logs them (`C at vcpu num a1 a2 a3` when QEMU is about
/// to run one, `R vcpu num ret` when it returns: runtime/qemu-plugin/tlblab_qemu.c), paired by
/// vCPU into `[at, num, a1, a2, a3, ret]` in the order of the calls.
#[derive(Debug, Default, PartialEq)]
pub struct SyscallLog {
    pub calls: Vec<[Option<i128>; 6]>,
}

impl SyscallLog {
    /// Parses the log's text; `what` names it in errors (one line: the line, what was found).
    pub fn parse(text: &str, what: &str) -> Result<Self, String> {
        let mut calls: Vec<[Option<i128>; 6]> = Vec::new();
        // Per vCPU, the index in `calls` of its call under way (a call returns on its vCPU).
        let mut open: std::collections::HashMap<i128, usize> = std::collections::HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let bad = || {
                format!("{what}, line {}: expected 'C at vcpu num a1 a2 a3' or 'R vcpu num ret', found '{line}'", i + 1)
            };
            let mut f = line.split(' ');
            let tag = f.next();
            let nums: Vec<i128> = f
                .map(|x| x.parse::<i128>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            match (tag, nums.as_slice()) {
                (Some("C"), [at, vcpu, num, a1, a2, a3]) => {
                    open.insert(*vcpu, calls.len());
                    calls.push([Some(*at), Some(*num), Some(*a1), Some(*a2), Some(*a3), None]);
                }
                (Some("R"), [vcpu, num, ret]) => {
                    let k = open.remove(vcpu).filter(|&k| calls[k][1] == Some(*num)).ok_or_else(|| {
                        format!("{what}, line {}: a return of call {num} on vCPU {vcpu} that no call line opened", i + 1)
                    })?;
                    calls[k][5] = Some(*ret);
                }
                _ => return Err(bad()),
            }
        }
        Ok(SyscallLog { calls })
    }

    /// The calls as the footer's JSON, those at or past `limit` references left out, and the
    /// result null for a call that returns a host's process or thread id (`HOST_ID_CALLS`).
    pub fn to_json(&self, limit: Option<u64>) -> Value {
        let kept = self
            .calls
            .iter()
            .filter(|c| limit.is_none_or(|l| c[0].is_some_and(|at| at < l as i128)));
        Value::Array(
            kept.map(|c| {
                let mut c = *c;
                if c[1].is_some_and(|n| HOST_ID_CALLS.contains(&n)) {
                    c[5] = None;
                }
                Value::Array(
                    c.iter()
                        .map(|v| v.map_or(Value::Null, |x| json!(x as i64)))
                        .collect(),
                )
            })
            .collect(),
        )
    }
}

/// The guest's environment as QEMU's `-E` takes it, `NAME=value` each, checked: a name must be
/// non-empty without `=` or NUL, a value without NUL, and no name given twice.
fn guest_env(vars: &[(String, String)]) -> Result<Vec<String>, String> {
    let mut seen = std::collections::HashSet::new();
    vars.iter()
        .map(|(k, v)| {
            if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(format!(
                    "the guest's environment variable '{k}={v}': expected a name without '=' and a value, neither with a NUL"
                ));
            }
            if !seen.insert(k.as_str()) {
                return Err(format!("the guest's environment names '{k}' twice"));
            }
            Ok(format!("{k}={v}"))
        })
        .collect()
}

/// The descriptors the plugin writes to in QEMU's process: fixed numbers, because QEMU's user
/// mode shares its descriptor table with the guest, whose `open` returns the lowest free number:
/// where tlblab's own descriptors happened to lie would move the guest's descriptors, and with
/// them its system calls' arguments and results. (The originals are close-on-exec.)
const GUEST_OUT_FD: i32 = 200;
const GUEST_SYS_FD: i32 = 201;

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
    for f in &opts.files {
        let to = dir.0.join(
            f.file_name()
                .ok_or_else(|| format!("{}: not a file", f.display()))?,
        );
        std::fs::copy(f, &to).map_err(|e| format!("{}: {e}", f.display()))?;
    }
    let name = Path::new(&argv[0])
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| argv[0].clone());

    let (read_end, write_end) = child_pipe()?;
    let wfd = write_end.as_raw_fd();
    // The plugin's system-call log: a file of the folder (written unbuffered by the plugin, read
    // once QEMU has exited, so no pipe can fill).
    let log_path = dir.0.join("syscalls");
    let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let sysfd = std::os::fd::AsRawFd::as_raw_fd(&log);
    let mut qemu_args: Vec<String> =
        vec!["-cpu".into(), opts.cpu.clone(), "-0".into(), name.clone()];
    let env = guest_env(&opts.env)?;
    // QEMU puts each `-E` variable before those given earlier (its envlist inserts at the head):
    // given last to first, the guest's environment is in `env`'s order.
    for var in env.iter().rev() {
        qemu_args.push("-E".into());
        qemu_args.push(var.clone());
    }
    if let Some(root) = &opts.sysroot {
        qemu_args.push("-L".into());
        qemu_args.push(root.display().to_string());
    }
    qemu_args.push("-plugin".into());
    qemu_args.push(format!(
        "{},outfd={GUEST_OUT_FD},sysfd={GUEST_SYS_FD}",
        opts.plugin.display()
    ));
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
            // Its last component: the folder it lies in differs between checkouts.
            "sysroot": opts.sysroot.as_ref().map(|p| p.file_name().map_or_else(
                || p.display().to_string(), |n| n.to_string_lossy().to_string())),
            "limit": opts.limit,
            // "empty" as before any variable could be given, so that those captures keep their bytes.
            "environment": if env.is_empty() { json!("empty") } else { json!(env) },
            "threads": "one thread per guest thread (QEMU's vCPU index); QEMU runs them in parallel, the plugin orders their references under one lock",
        },
        "regions": Vec::<String>::new(),
    });
    let mut writer =
        TraceWriter::create(output, &meta, WriterOptions::default()).map_err(|e| e.message)?;
    let stdout = child_stdio(opts.stdout.as_deref(), |p| File::create(p), Stdio::null())?;
    let (mut command, _) = crate::pidns::command(&opts.qemu, opts.own_pid_namespace, &name);
    // SAFETY: the closure runs in the child between fork and exec and calls only fcntl, dup2
    // and close, which are async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            // Out of the way of the fixed numbers first (wfd or sysfd may be one of them).
            let (a, b) = (
                libc::fcntl(wfd, libc::F_DUPFD, 300),
                libc::fcntl(sysfd, libc::F_DUPFD, 300),
            );
            if a < 0 || b < 0 || libc::dup2(a, GUEST_OUT_FD) < 0 || libc::dup2(b, GUEST_SYS_FD) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(a);
            libc::close(b);
            Ok(())
        })
    };
    let spawned = command
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
    drop(log);
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
    let log_text =
        std::fs::read_to_string(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let calls = SyscallLog::parse(
        &log_text,
        &format!("the system calls of {name} as tlblab's QEMU plugin logged them"),
    )?;
    let syscalls = calls.to_json(killed.then_some(seen));
    let n_syscalls = syscalls.as_array().map_or(0, |a| a.len() as u64);
    writer.set_footer("syscalls", syscalls);
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
        syscalls: n_syscalls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_log_of_calls_and_returns_then_each_return_closes_its_vcpus_call() {
        let text = "C 10 0 45 0 0 0\nR 0 45 4096\nC 20 0 91 3221225472 8192 0\nC 21 1 20 0 0 0\nR 1 20 7\nR 0 91 0\nC 30 0 248 0 0 0\n";
        let log = SyscallLog::parse(text, "log").unwrap();
        let c: Vec<Vec<Option<i128>>> = log.calls.iter().map(|c| c.to_vec()).collect();
        assert_eq!(
            c[0],
            [Some(10), Some(45), Some(0), Some(0), Some(0), Some(4096)]
        );
        assert_eq!(
            c[1],
            [
                Some(20),
                Some(91),
                Some(3221225472),
                Some(8192),
                Some(0),
                Some(0)
            ]
        );
        assert_eq!(
            c[2],
            [Some(21), Some(20), Some(0), Some(0), Some(0), Some(7)]
        );
        assert_eq!(c[3][5], None, "exit_group never returns");
        // getpid's result is the host's pid: left out of the footer.
        assert_eq!(log.to_json(None)[2][5], Value::Null);
        assert_eq!(log.to_json(None)[0][5], json!(4096));
        // A limit of 21 references keeps the calls made before the 21st.
        assert_eq!(log.to_json(Some(21)).as_array().unwrap().len(), 2);
        assert_eq!(log.to_json(None).as_array().unwrap().len(), 4);
    }

    #[test]
    fn given_variables_then_the_guest_env_is_them_in_order_and_a_bad_one_is_named() {
        let vars = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            guest_env(&vars(&[("SOURCE_DATE_EPOCH", "1640995200"), ("TZ", ":")])).unwrap(),
            ["SOURCE_DATE_EPOCH=1640995200", "TZ=:"]
        );
        assert_eq!(guest_env(&[]).unwrap(), Vec::<String>::new());
        let e = guest_env(&vars(&[("A=B", "1")])).unwrap_err();
        assert!(e.contains("'A=B=1'"), "{e}");
        let e = guest_env(&vars(&[("TZ", ":"), ("TZ", "UTC0")])).unwrap_err();
        assert!(e.contains("'TZ' twice"), "{e}");
    }

    #[test]
    fn given_a_bad_line_or_an_unopened_return_then_one_line_names_it() {
        let e = SyscallLog::parse("C 1 0 45 0 0\n", "log").unwrap_err();
        assert!(e.starts_with("log, line 1: expected"), "{e}");
        let e = SyscallLog::parse("C 1 0 45 0 0 0\nR 0 20 0\n", "log").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("call 20 on vCPU 0"),
            "{e}"
        );
    }
}
