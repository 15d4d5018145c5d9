//! tlblab-trace: what a program did to memory, as records.
//!
//! `record` defines the access and event records every source produces (trace files, converters,
//! built-in workload generators) and the engine consumes. `source` is the streaming interface.
//! This crate knows nothing of TLBs.

pub mod capture;
pub mod capture_qemu;
pub mod champsim;
pub mod clock;
pub mod convert;
pub mod fileio;
pub mod format;
pub mod info;
pub mod lackey;
pub mod pidns;
pub mod profile;
pub mod record;
pub mod source;
pub mod threaded;
pub mod vgtool;
pub mod workloads;

pub use record::{Access, Event, Record};
pub use source::{RecordSource, VecSource};
