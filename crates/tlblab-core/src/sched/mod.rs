//! Schedulers that drive the engine: each one decides which thread runs where and when, and calls
//! the engine's operations (`System::context_switch`, `migrate`, `access`) to do it. They sit on
//! top of `system`; the engine knows nothing of them.
//! - `rr` — round-robin scheduling with a quantum over N cores, pinning, forced rotation.
//! - `rm` — preemptive fixed-priority rate-monotonic scheduling of periodic task sets on one
//!   core, with statistics per job (seed 003 Figs. 6.2–6.8).
//! - `helper` — helper threads that generate their own access stream at a rate (PT-Baker, seed 001).
//!
//! Trace-driven scheduling (ContextSwitch/Migrate/TaskRelease/JobStart/JobEnd events, and the
//! implicit switch when a core runs an access of a thread other than its current one) needs no
//! driver: the engine applies those events itself (`system/events.rs`).

pub mod helper;
pub mod rm;
pub mod rr;
