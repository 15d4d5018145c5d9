//! tlblab-probe: measures the TLB hierarchy of the machine it runs on, by timing alone.
//!
//! Layout: `sys` (mappings, pinning, clocks), `chase` (the pointer-chase instrument), `measure/*`
//! (one module per measurement), `analysis/*` (pure knee/index inference, unit-tested on synthetic
//! curves), `cpuid` (declared values, printed beside the measured ones and never used as
//! measurements), `probe/` (the orchestration: options and report in `mod.rs`, `budget`, `summary` the
//! summary lines' text, `run` the steps).

pub mod analysis;
pub mod chase;
pub mod cpuid;
pub mod measure;
pub mod probe;
pub mod stats;
pub mod sys;
