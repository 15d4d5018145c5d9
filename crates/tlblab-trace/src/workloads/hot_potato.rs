//! Seed 002 §4.1: lmbench `hot_potato` (pipe latency): two processes sending a token back and
//! forth. Each turn the sender stores `msg_bytes` into its send buffer before `write`, the core
//! switches, and the receiver loads them from its receive buffer after `read` (the kernel's copy
//! in between is not traced). Text is fork-shared (object 0); buffers and stacks are private.

use super::gen::*;
use super::lat_ctx::{process_start, DATA, STACK, TEXT};
use super::WorkloadInfo;
use crate::record::{prot, Event};
use tlblab_types::VirtAddr;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "hot_potato",
    summary: "lmbench hot potato: two processes ping-ponging a message through a pipe",
    source: "seed 002 §4.1 (hot potato, Table 1)",
    params: &[
        ("rounds", 10000, "round trips"),
        (
            "msg_bytes",
            4,
            "bytes written and read per message (latency test: one word)",
        ),
    ],
    in_default_set: true,
};

pub struct HotPotato {
    rounds: u64,
    words: u64,
    turn: u64,
}

impl HotPotato {
    pub fn from_params(get: impl Fn(&str) -> u64) -> Result<Self, String> {
        Ok(HotPotato {
            rounds: get("rounds"),
            words: positive("hot_potato", "msg_bytes", get("msg_bytes"))?.div_ceil(4),
            turn: 0,
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
            for p in 0..2 {
                process_start(out, p, 4096);
                out.push(ev(Event::Mmap {
                    process: p,
                    start: VirtAddr(DATA),
                    len: buf_len,
                    prot: prot::READ | prot::WRITE,
                    page_shift: 12,
                }));
            }
            out.push(ev(Event::Region {
                region: 0,
                start: VirtAddr(TEXT),
                len: 4096,
            }));
            out.push(ev(Event::Region {
                region: 1,
                start: VirtAddr(DATA),
                len: buf_len,
            }));
            out.push(ev(Event::Region {
                region: 2,
                start: VirtAddr(STACK),
                len: 4096,
            }));
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
        self.turn += 1;
        if self.turn < total {
            out.push(switch(0, Some(p), Some(1 - p)));
        }
        true
    }
}
