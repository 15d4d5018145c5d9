//! A captured program in a PID namespace of its own, so that its process id is the same on every
//! run and every machine (`CaptureOptions::own_pid_namespace`, `QemuOptions::own_pid_namespace`).
//!
//! Why: a program that formats its pid into memory it then reads makes the capture depend on
//! the pid's number of digits. Seed 004's background program typeset is troff, whose start-up
//! file (groff 1.22.4's troffrc) loads pdfpic.tmac, whose macro interpolates `\n[$$]` (the pid)
//! when it is defined: troff's capture had other lengths when its pid had 4 digits than when it
//! had 5, so two fresh machines' seed 004 tables differed (docs/lab/2026-12-01-issue89-troff-pid.md).
//! In a namespace of its own the program (Valgrind or QEMU, which runs the guest in its own
//! process) is pid 1 on every run.
//!
//! How: util-linux's `unshare --pid --fork --kill-child` runs the command as the first process
//! of a new namespace (its child; `--kill-child` kills it when `unshare` dies, so a capture that
//! kills its child at its limit still stops the program). That needs `CAP_SYS_ADMIN`: as root
//! it is used as is, otherwise inside a new user namespace (`--user --map-root-user`, where the
//! kernel allows unprivileged ones). Where neither works, `wrapper` says why and the caller
//! decides (a capture then runs as before, its bytes depending on the pid).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The command words that run a program in a PID namespace of its own (`unshare` by absolute
/// path, its flags, `--`), or why none can be made here. Tried once per process with `true`.
pub fn wrapper() -> Result<&'static [String], &'static str> {
    static WRAPPER: OnceLock<Result<Vec<String>, String>> = OnceLock::new();
    WRAPPER
        .get_or_init(|| {
            let unshare = find_in_path("unshare").ok_or_else(|| {
                "`unshare` (util-linux) is not on PATH: the program runs with its own pid".to_string()
            })?;
            let unshare = unshare.display().to_string();
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            let mut tried = Vec::new();
            let mut flags: Vec<&[&str]> = Vec::new();
            if root {
                flags.push(&["--pid", "--fork", "--kill-child"]);
            }
            flags.push(&["--user", "--map-root-user", "--pid", "--fork", "--kill-child"]);
            for f in flags {
                let ok = Command::new(&unshare)
                    .args(f)
                    .arg("--")
                    .arg(find_in_path("true").unwrap_or_else(|| PathBuf::from("/bin/true")))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if ok {
                    let mut words = vec![unshare.clone()];
                    words.extend(f.iter().map(|w| w.to_string()));
                    words.push("--".into());
                    return Ok(words);
                }
                tried.push(f.join(" "));
            }
            Err(format!(
                "`unshare {}` failed here (a PID namespace needs root, or unprivileged user namespaces): the program runs with its own pid",
                tried.join("` and `unshare ")
            ))
        })
        .as_ref()
        .map(|v| v.as_slice())
        .map_err(|e| e.as_str())
}

/// The command that runs `program`: in a PID namespace of its own when `own` is asked and one can
/// be made here (then `true` beside it: the program is the command's child), else `program`
/// itself, having said on stderr why not (`what` names the captured program).
pub fn command(program: &str, own: bool, what: &str) -> (Command, bool) {
    if !own {
        return (Command::new(program), false);
    }
    match wrapper() {
        Ok(words) => {
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]).arg(absolute_program(program));
            (c, true)
        }
        Err(why) => {
            eprintln!("tlblab capture: no PID namespace of its own for {what}: {why}");
            (Command::new(program), false)
        }
    }
}

/// `program` by absolute path, looked up on our PATH when it has no slash: the wrapped command's
/// environment may be cleared, and `unshare` looks its command up on that one.
pub fn absolute_program(program: &str) -> String {
    if program.contains('/') {
        return program.to_string();
    }
    find_in_path(program).map_or_else(|| program.to_string(), |p| p.display().to_string())
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The pid (in our namespace) of the first child of process `pid`: the wrapped program under
/// `unshare --fork`. None until it has forked, or once it is gone.
pub fn first_child(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_program_is_pid_one_of_its_namespace_where_one_can_be_made() {
        let Ok(words) = wrapper() else {
            eprintln!("skipped: {}", wrapper().unwrap_err());
            return;
        };
        let out = Command::new(&words[0])
            .args(&words[1..])
            .args(["/bin/sh", "-c", "echo $$"])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
    }

    #[test]
    fn a_program_is_found_on_the_path_and_a_path_is_kept() {
        assert!(absolute_program("sh").starts_with('/'));
        assert_eq!(absolute_program("./x"), "./x");
        assert_eq!(
            absolute_program("no-such-program-here"),
            "no-such-program-here"
        );
    }
}
