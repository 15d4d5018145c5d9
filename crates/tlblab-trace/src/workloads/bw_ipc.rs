//! Seed 002 Table 1's hot potato *bandwidth* rows: lmbench's `bw_pipe` and `bw_unix`. A writer
//! process `write`s its 64 KiB buffer into a pipe (`ipc` 0) or a UNIX stream socket (`ipc` 2)
//! over and over, and a reader `read`s it into its own 64 KiB buffer (lmbench 2,
//! src/bw_pipe.c and src/bw_unix.c: `write(pipes[1], buf, XFERSIZE)` and
//! `read(pipes[0], buf, XFERSIZE)`; src/bench.h: `XFERSIZE (64*1024)`, "all bandwidth I/O
//! should use this").
//!
//! What sets the rate on the SA-1100 is how much the kernel moves between two context
//! switches, and the copies themselves:
//! - a pipe holds one page (Linux 2.4 fs/pipe.c, include/linux/pipe_fs_i.h: `PIPE_SIZE` =
//!   `PAGE_SIZE`): the writer copies 4 KiB into it, wakes the reader and sleeps; the reader
//!   copies the 4 KiB out, wakes the writer and sleeps: two switches per 4 KiB;
//! - a UNIX stream socket copies each `write` into socket buffers of at most
//!   `(sk->sndbuf >> 1) - 64` bytes (`unix_stream_sendmsg`, net/unix/af_unix.c), and the writer
//!   blocks only when the socket's send buffer is full (`sock_alloc_send_skb`; `sndbuf` defaults
//!   to `SK_WMEM_MAX` = 65535 in Linux 2.4, include/net/sock.h): two buffers of 32,703 bytes,
//!   so about 64 KiB between two switches, sixteen times a pipe's.
//!
//! Each turn the running process returns from its blocked call (the kernel's receive half of
//! the IPC kind, `hot_potato::ipc_paths`, whose lengths Table 1's latency rows calibrated),
//! copies its chunk (the writer `copy_from_user`, the reader `copy_to_user`) and enters its
//! next call (the send half), then the core switches to the other process. ARM Linux 2.4's
//! user copies (arch/arm/lib/uaccess.S) reach user memory one word at a time (`ldrt`/`strt`:
//! a user access from kernel mode must use the user's permissions) and kernel memory by four
//! registers at a time (`ldmia`/`stmia`, 16 bytes): per 32-byte line, 8 word accesses on the
//! user side, 2 of 16 bytes on the kernel side, and 12 instructions round a 2-line loop.

use super::gen::*;
use super::hot_potato::ipc_paths;
use super::kernel_path::{self, KernelPath, KERNEL};
use super::lat_ctx::{start_two_processes_with_data, DATA, STACK, TEXT};
use super::WorkloadInfo;
use crate::record::Event;
use tlblab_types::VirtAddr;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "bw_ipc",
    summary: "lmbench bw_pipe / bw_unix: a writer streaming 64 KiB writes to a reader",
    source: "seed 002 §4.1-4.2 (hot potato bandwidth, Table 1); lmbench 2 bw_pipe.c, bw_unix.c",
    in_default_set: false,
    params: params! {
        ipc: 0, "0 = pipe (bw_pipe), 2 = UNIX stream socket (bw_unix)";
        bytes: 1 << 20, "bytes moved from the writer to the reader (lmbench: 10 MiB, XFER)";
        kernel: 1, "1 = trace the kernel's path around each switch";
    },
};

/// lmbench's `XFERSIZE`: each `write` and `read` moves up to this many bytes (src/bench.h).
pub const XFERSIZE: u64 = 64 << 10;
/// Bytes a pipe holds: one page (Linux 2.4 `PIPE_SIZE`).
pub const PIPE_CHUNK: u64 = kernel_path::PIPE_BUFFER_BYTES;
/// Linux 2.4's default socket send buffer (`SK_WMEM_MAX`, include/net/sock.h).
pub const SOCKET_SNDBUF: u64 = 65535;
/// One socket buffer's data: `(sk->sndbuf >> 1) - 64` (`unix_stream_sendmsg`).
pub const SOCKET_SKB_BYTES: u64 = (SOCKET_SNDBUF >> 1) - 64;
/// Socket buffers queued before the writer blocks: the second one takes the send buffer's
/// allocation past `sndbuf`, so the third waits (`sock_alloc_send_skb`).
pub const SOCKET_SKBS_PER_TURN: u64 = 2;
/// Where the socket buffers' data lives: a free data slot of the kernel image (kmalloc'd
/// memory, reused after each `kfree_skb`).
const SKB_DATA: u64 = KERNEL + (2 << 20) + kernel_path::data_slot(15);
/// The user-copy loop's text (`__arch_copy_from_user` / `__arch_copy_to_user`).
const COPY_TEXT: u64 = KERNEL + kernel_path::text_slot(15);
/// Instructions of the copy loop per 32-byte line (8 `ldrt`/`strt`, 2 `ldmia`/`stmia`, the
/// count and the branch) and the lines of the loop.
pub const COPY_INSTRS_PER_LINE: u64 = 12;
const COPY_LOOP_INSTRS: u64 = 16;

pub struct BwIpc {
    socket: bool,
    bytes: u64,
    moved: u64,
    /// Bytes of the writer's current 64 KiB `write` not yet copied.
    write_left: u64,
    turn: u64,
    paths: Option<(KernelPath, KernelPath)>,
}

impl BwIpc {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        let ipc = get("ipc");
        if ipc != 0 && ipc != 2 {
            return Err(format!(
                "bw_ipc: ipc must be 0 (pipe) or 2 (UNIX stream socket) (got {ipc})"
            ));
        }
        Ok(BwIpc {
            socket: ipc == 2,
            bytes: positive("bw_ipc", "bytes", get("bytes"))?,
            moved: 0,
            write_left: XFERSIZE,
            turn: 0,
            paths: (get("kernel") != 0).then(|| ipc_paths(ipc, 0)),
        })
    }

    /// Bytes the writer copies in this turn before it blocks: what the pipe or the socket's
    /// send buffer takes, within the current `write` (a `write` that ends starts the next).
    fn chunk(&self) -> u64 {
        let room = if self.socket {
            SOCKET_SKB_BYTES * SOCKET_SKBS_PER_TURN
        } else {
            PIPE_CHUNK
        };
        room.min(self.write_left).min(self.bytes - self.moved)
    }

    /// The kernel-side address of byte `i` of the chunk.
    fn kernel_buffer(&self, i: u64) -> u64 {
        if self.socket {
            SKB_DATA + i % (SOCKET_SKB_BYTES * SOCKET_SKBS_PER_TURN)
        } else {
            kernel_path::pipe_buffer(0) + i % PIPE_CHUNK
        }
    }

    /// Appends the copy of `len` bytes between user buffer offset `user` and the kernel's
    /// buffer by process `p`: `copy_from_user` (`to_kernel`) or `copy_to_user`.
    fn copy(&self, out: &mut Vec<Record>, p: u32, user: u64, len: u64, to_kernel: bool) {
        let mut fetched = 0;
        for line in 0..len.div_ceil(32) {
            for _ in 0..COPY_INSTRS_PER_LINE {
                out.push(fetch(p, COPY_TEXT + (fetched % COPY_LOOP_INSTRS) * 4, 4));
                fetched += 1;
            }
            let off = line * 32;
            let words = (len - off).min(32).div_ceil(4);
            let u = DATA + (user + off) % XFERSIZE;
            let k = self.kernel_buffer(off);
            if to_kernel {
                for w in 0..words {
                    out.push(load(p, u + w * 4, 4));
                }
                for h in 0..words.div_ceil(4) {
                    out.push(store(p, k + h * 16, 16));
                }
            } else {
                for h in 0..words.div_ceil(4) {
                    out.push(load(p, k + h * 16, 16));
                }
                for w in 0..words {
                    out.push(store(p, u + w * 4, 4));
                }
            }
        }
    }
}

impl Generator for BwIpc {
    fn regions(&self) -> Vec<String> {
        vec!["text".into(), "buffer".into(), "stack".into()]
    }
    fn step(&mut self, out: &mut Vec<Record>) -> bool {
        if self.turn == 0 {
            start_two_processes_with_data(out, self.paths.is_some(), XFERSIZE);
            for (region, start, len) in [(0, TEXT, 4096), (1, DATA, XFERSIZE), (2, STACK, 4096)] {
                out.push(ev(Event::Region {
                    region,
                    start: VirtAddr(start),
                    len,
                }));
            }
            out.push(switch(0, None, Some(0)));
        }
        if self.moved == self.bytes {
            return false;
        }
        // Even turns: the writer fills the pipe or the send buffer; odd turns: the reader
        // empties it. Both start where they blocked, run the kernel's receive half (the
        // wake-up and the return of the blocked call) and end entering their next call.
        let p = (self.turn % 2) as u32;
        let len = self.chunk();
        if self.turn > 0 {
            if let Some((recv_path, _)) = &self.paths {
                kernel_path::switch_path().run(out, p);
                recv_path.run(out, p);
            }
        }
        out.push(fetch(p, TEXT + 0x100, 4));
        out.push(load(p, STACK + 0xf00, 8));
        let user = self.moved % XFERSIZE;
        self.copy(out, p, user, len, p == 0);
        if p == 1 {
            self.moved += len;
            self.write_left -= len;
            if self.write_left == 0 {
                self.write_left = XFERSIZE;
            }
        }
        if let Some((_, send_path)) = &self.paths {
            send_path.run(out, p);
        }
        self.turn += 1;
        if self.moved < self.bytes {
            out.push(switch(0, Some(p), Some(1 - p)));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(spec: &[(&str, u64)]) -> Vec<Record> {
        let get = |k: &str| {
            spec.iter()
                .find(|(n, _)| *n == k)
                .map(|p| p.1)
                .unwrap_or_else(|| INFO.params.iter().find(|p| p.0 == k).unwrap().1)
        };
        let mut g = BwIpc::from_params(get).unwrap();
        let mut out = Vec::new();
        while g.step(&mut out) {}
        out
    }

    fn switches(out: &[Record]) -> usize {
        out.iter()
            .filter(|r| matches!(r, Record::Event(Event::ContextSwitch { .. })))
            .count()
    }

    #[test]
    fn a_pipe_switches_twice_per_page_and_a_socket_sixteen_times_less_often() {
        // 64 KiB through a pipe: 16 pages, each written then read, 32 turns, 31 switches
        // after the first one in.
        let pipe = records(&[("ipc", 0), ("bytes", 64 << 10), ("kernel", 0)]);
        assert_eq!(switches(&pipe), 1 + 31);
        // Through a socket: 65,406 bytes then 130, each written then read: 4 turns.
        let sock = records(&[("ipc", 2), ("bytes", 64 << 10), ("kernel", 0)]);
        assert_eq!(switches(&sock), 1 + 3);
    }

    #[test]
    fn every_byte_is_copied_in_and_out_once() {
        let out = records(&[("ipc", 2), ("bytes", 100_000), ("kernel", 0)]);
        let stored_kernel: u64 = out
            .iter()
            .filter_map(|r| match r {
                Record::Access(a)
                    if a.kind == tlblab_types::AccessKind::Store && a.vaddr.0 >= KERNEL =>
                {
                    Some(a.size as u64)
                }
                _ => None,
            })
            .sum();
        // Kernel stores are whole 16-byte groups: each line's words rounded up to 4.
        assert!((100_000..100_000 + 16 * 100_000 / 32).contains(&stored_kernel));
        let stored_user: u64 = out
            .iter()
            .filter_map(|r| match r {
                Record::Access(a)
                    if a.kind == tlblab_types::AccessKind::Store && a.vaddr.0 == DATA =>
                {
                    Some(1)
                }
                _ => None,
            })
            .sum();
        assert!(
            stored_user >= 2,
            "the reader's buffer start is written at each of its copies"
        );
    }
}
