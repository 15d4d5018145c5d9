//! Seed 002 §4.1: lmbench `hot_potato` (latency): two processes sending a token back and forth
//! through a pipe, a FIFO, a UNIX socket or file locks (`ipc` 0-3, Table 1's four latency
//! rows). Each turn the sender stores `msg_bytes` into its send buffer and runs the kernel's
//! send half (`write`, or `fcntl` unlock), the core switches, and the receiver runs the
//! receive half (the return from `read`, or `fcntl` lock) and loads the message. With `kernel`
//! on (the default) the kernel's paths are traced (`kernel_path.rs`), each of its calibrated
//! length unless `kernel_instrs` gives one (both halves together). Text is fork-shared
//! (object 0); buffers and stacks are private.

use super::gen::*;
use super::kernel_path::{self, KernelPath};
use super::lat_ctx::{start_two_processes_with_data, DATA, STACK, TEXT};
use super::WorkloadInfo;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "hot_potato",
    summary: "lmbench hot potato: two processes ping-ponging a message through a pipe",
    source: "seed 002 §4.1 (hot potato, Table 1)",
    in_default_set: true,
    params: params! {
        rounds: 10000, "round trips";
        msg_bytes: 4, "bytes written and read per message (latency test: one word)";
        ipc: 0, "0 = pipe, 1 = FIFO, 2 = UNIX socket, 3 = fcntl file locks (seed Table 1)";
        kernel: 1, "1 = trace the kernel's path around each switch";
        kernel_instrs: 0, "instructions of the kernel's path per message (0 = the calibrated length of the ipc kind)";
    },
};

pub struct HotPotato {
    rounds: u64,
    words: u64,
    turn: u64,
    /// The kernel's (receive, send) halves, when traced.
    paths: Option<(KernelPath, KernelPath)>,
}

/// The kernel's path of each IPC kind: instructions per message (both halves), and the loop
/// footprint in lines (0 = straight-line). Pipe, FIFO and UNIX socket lengths are calibrated
/// so that the flushing kernel on the `sa1100` preset gives Table 1's original column (seed 002
/// §4.2; docs/technique-fass.md; 400 round trips, with the preset's write buffer): pipe 257 us
/// (ours 256.1), FIFO 263 us (262.0; Linux's FIFOs are its pipe code), UNIX socket 511 us
/// (510.8). The cycles are a
/// sawtooth in the length (a path ending just past a line boundary fetches one line more), so
/// each was found by a scan in steps of 2-20 around the secant's answer. fcntl's 39 us is below
/// the flushing kernel's floor here (the D-cache clean and the switch path's refetch), so its length is set from the fast column instead (25 us) and
/// its original latency is the prediction; its path is the lock list's search loop: "the test
/// code touches very few pages and cache lines" (§4.2).
pub const IPC_PATHS: [(u64, u64); 4] = [(1009, 0), (1041, 0), (2401, 0), (1680, 24)];

/// The kernel's two halves of one message of IPC kind `ipc` with `instrs` instructions.
pub fn ipc_paths(ipc: u64, instrs: u64) -> (KernelPath, KernelPath) {
    let (default, loop_lines) = IPC_PATHS[ipc as usize];
    let n = if instrs == 0 { default } else { instrs };
    // FIFOs run the pipe's code (fs/pipe.c), so they share its lines.
    let code = if ipc == 1 { 0 } else { ipc };
    let half = |i: u64, k: u64| KernelPath {
        text: kernel_path::text_slot(2 * code + i),
        instrs: k,
        loop_lines: loop_lines / 2,
        data: kernel_path::data_slot(2 * code + i),
    };
    (half(0, n / 2), half(1, n - n / 2))
}

impl HotPotato {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let ipc = get("ipc");
        if ipc > 3 {
            return Err(format!(
                "hot_potato: ipc must be 0 (pipe), 1 (FIFO), 2 (UNIX socket) or 3 (fcntl) (got {ipc})"
            ));
        }
        Ok(HotPotato {
            rounds: get("rounds"),
            words: positive("hot_potato", "msg_bytes", get("msg_bytes"))?.div_ceil(4),
            turn: 0,
            paths: (get("kernel") != 0).then(|| ipc_paths(ipc, get("kernel_instrs"))),
        })
    }
}

impl Generator for HotPotato {
    fn regions(&self) -> Vec<String> {
        vec!["text".into(), "buffers".into(), "stack".into()]
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        let total = self.rounds * 2;
        let buf_len = (self.words * 4 * 2).div_ceil(4096) * 4096;
        if self.turn == 0 {
            start_two_processes_with_data(out, self.paths.is_some(), buf_len);
            regions(out, &[(TEXT, 4096), (DATA, buf_len), (STACK, 4096)]);
            if total > 0 {
                out.push(switch(0, None, Some(0)));
            }
        }
        if self.turn == total {
            return false;
        }
        let p = (self.turn % 2) as u32;
        let recv = DATA + self.words * 4; // second half of the buffer page(s)
        if self.turn > 0 {
            if let Some((recv_path, _)) = &self.paths {
                kernel_path::switch_path().run(out, p);
                recv_path.run(out, p);
            }
            out.push(fetch(p, TEXT + 0x180, 4));
            for w in 0..self.words {
                out.push(load(p, recv + w * 4, 4));
            }
        }
        out.push(fetch(p, TEXT + 0x100, 4));
        out.push(load(p, STACK + 0xf00, 8));
        for w in 0..self.words {
            out.push(store(p, DATA + w * 4, 4));
        }
        if let Some((_, send_path)) = &self.paths {
            send_path.run(out, p);
        }
        self.turn += 1;
        if self.turn < total {
            out.push(switch(0, Some(p), Some(1 - p)));
        }
        true
    }
}
