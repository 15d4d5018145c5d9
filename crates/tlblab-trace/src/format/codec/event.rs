//! Events in a payload (both versions, formats/trace.md §4.3): an opcode per event kind and
//! its fields as LEB128 varints in declaration order, written and read back with every field
//! checked against its type's range.

use super::*;

// Event opcodes (a varint after `ESC_EVENT`), as in version 1.
const OP_THREAD_START: u64 = 1;
const OP_THREAD_EXIT: u64 = 2;
const OP_CONTEXT_SWITCH: u64 = 3;
const OP_MIGRATE: u64 = 4;
const OP_MMAP: u64 = 5;
const OP_MUNMAP: u64 = 6;
const OP_MPROTECT: u64 = 7;
const OP_TASK_RELEASE: u64 = 8;
const OP_JOB_START: u64 = 9;
const OP_JOB_END: u64 = 10;
const OP_REGION: u64 = 11;
const OP_PHASE_BEGIN: u64 = 12;
const OP_PHASE_END: u64 = 13;
const OP_FLUSH: u64 = 14;
const OP_MAP_SHARED: u64 = 15;
const OP_TLB_LOCK: u64 = 16;
const OP_FLUSH_RANGE: u64 = 17;
const OP_PROCESS_EXIT: u64 = 18;
const OP_KERNEL_ENTRY: u64 = 19;
const OP_INDEPENDENT: u64 = 20;
const OP_DEPENDS: u64 = 21;

/// The opcode of an event (the same numbers in both payload versions, formats/trace.md §4.3).
pub(in crate::format) fn event_op(e: &Event) -> u64 {
    match e {
        Event::ThreadStart { .. } => OP_THREAD_START,
        Event::ThreadExit { .. } => OP_THREAD_EXIT,
        Event::ContextSwitch { .. } => OP_CONTEXT_SWITCH,
        Event::Migrate { .. } => OP_MIGRATE,
        Event::Mmap { .. } => OP_MMAP,
        Event::Munmap { .. } => OP_MUNMAP,
        Event::Mprotect { .. } => OP_MPROTECT,
        Event::TaskRelease { .. } => OP_TASK_RELEASE,
        Event::JobStart { .. } => OP_JOB_START,
        Event::JobEnd { .. } => OP_JOB_END,
        Event::Region { .. } => OP_REGION,
        Event::PhaseBegin { .. } => OP_PHASE_BEGIN,
        Event::PhaseEnd { .. } => OP_PHASE_END,
        Event::MapShared { .. } => OP_MAP_SHARED,
        Event::Flush { .. } => OP_FLUSH,
        Event::TlbLock { .. } => OP_TLB_LOCK,
        Event::FlushRange { .. } => OP_FLUSH_RANGE,
        Event::ProcessExit { .. } => OP_PROCESS_EXIT,
        Event::KernelEntry { .. } => OP_KERNEL_ENTRY,
        Event::Independent { .. } => OP_INDEPENDENT,
        Event::Depends { .. } => OP_DEPENDS,
    }
}

/// An event's fields after its opcode, LEB128 varints in declaration order (both versions).
pub(in crate::format) fn put_event_fields(b: &mut Vec<u8>, e: &Event) {
    let fields: &[u64] = match *e {
        Event::ThreadStart { thread, process } => &[thread.0 as u64, process as u64],
        Event::ThreadExit { thread } => &[thread.0 as u64],
        Event::ProcessExit { process } => &[process as u64],
        Event::KernelEntry { process, path } => &[process as u64, path as u64],
        Event::Independent { thread, begin } => &[thread.0 as u64, begin as u64],
        Event::Depends { thread, back } => &[thread.0 as u64, back as u64],
        Event::ContextSwitch { core, from, to } => &[core.0 as u64, from.0 as u64, to.0 as u64],
        Event::Migrate { thread, core } => &[thread.0 as u64, core.0 as u64],
        Event::Mmap {
            process,
            start,
            len,
            prot,
            page_shift,
        } => &[process as u64, start.0, len, prot as u64, page_shift as u64],
        Event::Munmap {
            process,
            start,
            len,
        } => &[process as u64, start.0, len],
        Event::Mprotect {
            process,
            start,
            len,
            prot,
        } => &[process as u64, start.0, len, prot as u64],
        Event::TaskRelease { task, job }
        | Event::JobStart { task, job }
        | Event::JobEnd { task, job } => &[task as u64, job as u64],
        Event::Region { region, start, len } => &[region as u64, start.0, len],
        Event::PhaseBegin { region } | Event::PhaseEnd { region } => &[region as u64],
        Event::MapShared {
            process,
            start,
            len,
            prot,
            page_shift,
            object,
        } => &[
            process as u64,
            start.0,
            len,
            prot as u64,
            page_shift as u64,
            object as u64,
        ],
        Event::Flush { core, what } => &[core.0 as u64, what as u64],
        Event::TlbLock {
            process,
            page,
            core,
            lock,
        } => &[process as u64, page.0, core.0 as u64, lock as u64],
        Event::FlushRange {
            process,
            start,
            len,
            what,
        } => &[process as u64, start.0, len, what as u64],
    };
    for &f in fields {
        put_varint(b, f);
    }
}

pub(in crate::format) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// An event after `ESC_EVENT`: its opcode and fields, LEB128 varints.
pub(super) fn decode_event(buf: &[u8], p: &mut usize, len: usize) -> Result<Event, String> {
    let op = read_varint(buf, p, len).ok_or("event field opcode overruns the payload")?;
    decode_event_fields(op, buf, p, len)?
        .ok_or_else(|| format!("unknown event opcode {op} (expected 1..={OP_DEPENDS})"))
}

/// The fields of an event with opcode `op` (both payload versions), checked against their
/// types' ranges; None when `op` names no event.
pub(in crate::format) fn decode_event_fields(
    op: u64,
    buf: &[u8],
    p: &mut usize,
    len: usize,
) -> Result<Option<Event>, String> {
    let mut f = |max: u64, name: &str| -> Result<u64, String> {
        match read_varint(buf, p, len) {
            Some(v) if v <= max => Ok(v),
            Some(v) => Err(format!(
                "event field {name} = {v} is out of range (max {max})"
            )),
            None => Err(format!("event field {name} overruns the payload")),
        }
    };
    const U32: u64 = u32::MAX as u64;
    const U16: u64 = u16::MAX as u64;
    const U8: u64 = u8::MAX as u64;
    const U64: u64 = u64::MAX;
    Ok(Some(match op {
        OP_THREAD_START => Event::ThreadStart {
            thread: ThreadId(f(U32, "thread")? as u32),
            process: f(U32, "process")? as u32,
        },
        OP_THREAD_EXIT => Event::ThreadExit {
            thread: ThreadId(f(U32, "thread")? as u32),
        },
        OP_PROCESS_EXIT => Event::ProcessExit {
            process: f(U32, "process")? as u32,
        },
        OP_KERNEL_ENTRY => Event::KernelEntry {
            process: f(U32, "process")? as u32,
            path: f(crate::record::kernel_entry::MAX as u64, "path")? as u8,
        },
        OP_INDEPENDENT => Event::Independent {
            thread: ThreadId(f(U32, "thread")? as u32),
            begin: f(1, "begin")? != 0,
        },
        OP_DEPENDS => {
            let thread = ThreadId(f(U32, "thread")? as u32);
            let back = f(U32, "back")? as u32;
            if back == 0 {
                return Err("depends: back expected 1 or more, found 0".into());
            }
            Event::Depends { thread, back }
        }
        OP_CONTEXT_SWITCH => Event::ContextSwitch {
            core: CoreId(f(U16, "core")? as u16),
            from: ThreadId(f(U32, "from")? as u32),
            to: ThreadId(f(U32, "to")? as u32),
        },
        OP_MIGRATE => Event::Migrate {
            thread: ThreadId(f(U32, "thread")? as u32),
            core: CoreId(f(U16, "core")? as u16),
        },
        OP_MMAP => Event::Mmap {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            prot: f(U8, "prot")? as u8,
            page_shift: f(63, "page_shift")? as u8,
        },
        OP_MUNMAP => Event::Munmap {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
        },
        OP_MPROTECT => Event::Mprotect {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            prot: f(U8, "prot")? as u8,
        },
        // A periodic task's job events: the same two fields.
        OP_TASK_RELEASE | OP_JOB_START | OP_JOB_END => {
            let task = f(U32, "task")? as u32;
            let job = f(U32, "job")? as u32;
            match op {
                OP_TASK_RELEASE => Event::TaskRelease { task, job },
                OP_JOB_START => Event::JobStart { task, job },
                _ => Event::JobEnd { task, job },
            }
        }
        OP_REGION => Event::Region {
            region: f(U32, "region")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
        },
        OP_PHASE_BEGIN | OP_PHASE_END => {
            let region = f(U32, "region")? as u32;
            if op == OP_PHASE_BEGIN {
                Event::PhaseBegin { region }
            } else {
                Event::PhaseEnd { region }
            }
        }
        OP_MAP_SHARED => Event::MapShared {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            prot: f(U8, "prot")? as u8,
            page_shift: f(63, "page_shift")? as u8,
            object: f(U32, "object")? as u32,
        },
        OP_FLUSH => Event::Flush {
            core: CoreId(f(U16, "core")? as u16),
            what: f(U8, "what")? as u8,
        },
        OP_TLB_LOCK => Event::TlbLock {
            process: f(U32, "process")? as u32,
            page: VirtAddr(f(U64, "page")?),
            core: CoreId(f(U16, "core")? as u16),
            lock: f(1, "lock")? != 0,
        },
        OP_FLUSH_RANGE => Event::FlushRange {
            process: f(U32, "process")? as u32,
            start: VirtAddr(f(U64, "start")?),
            len: f(U64, "len")?,
            what: f(U8, "what")? as u8,
        },
        _ => return Ok(None),
    }))
}

/// LEB128, at most 10 bytes, never reading at or past `len`.
#[inline]
pub(in crate::format) fn read_varint(buf: &[u8], p: &mut usize, len: usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        if *p >= len || shift > 63 {
            return None;
        }
        let b = buf[*p];
        *p += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
    }
}
