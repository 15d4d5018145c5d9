//! tlblab-core: the engine. No file I/O, no Python.
//!
//! Codemap (see ARCHITECTURE.md for the full picture):
//! - `replacement/` — LRU, tree-PLRU, FIFO, random; one file each, enum-dispatched.
//! - `tlb/` — a TLB level (geometry, index functions, tags, lockdown, direct operations).
//! - `page_table/` — radix page tables as real descriptors in simulated physical memory; one
//!   file per format (x86-64 4/5-level, ARMv7 short descriptor, ARMv8 4 KiB granule).
//! - `walker/` — page-walk caches.
//! - `cache/` — data/instruction caches, physically or virtually indexed.
//! - `memory/` — the frame allocator and its placement policies.
//! - `machine` — the machine description (serde), validated field by field.
//! - `energy` — a machine's optional energy parameters (`[energy]`), data only (docs/energy.md).
//! - `options` — `RunOptions`, a run's switches, taken by both the engine and the reference.
//! - `system` — the engine: cores on one timeline, the per-access path.
//! - `stats` — counters per core, per thread, per level.
//! - `registry` — every technique's model paired with its twin; the one module that sees both.
//! - `reference` — a deliberately naive model of the whole machine the engine is checked against
//!   (its own frame allocator and page-table geometry; docs/reference-model.md).
//! - `tags` — the keys of a set-associative structure with one-byte fingerprints: a set's
//!   search is one SSE2 compare (TLB levels, caches and page-walk caches share it).
//! - `simd` — the host prefetch hint.

pub mod cache;
pub mod energy;
mod lean_row;
pub mod machine;
pub mod memory;
pub mod options;
pub mod os;
pub mod page_table;
pub mod reference;
pub mod registry;
pub mod replacement;
pub mod sched;
mod simd;
pub mod stats;
pub mod system;
mod tags;
pub mod techniques;
pub mod tlb;
pub mod walker;

pub use machine::MachineConfig;
pub use stats::Stats;
pub use system::{Declaration, RunOptions, SimError, System, Technique};
