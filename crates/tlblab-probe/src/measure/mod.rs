//! Measurements on the host. Each module times one kind of structure; all of them report medians
//! over interleaved repetitions with their spread.

pub mod bench;
pub mod conflict;
pub mod curve;
pub mod dtlb;
pub mod extras;
#[cfg(target_arch = "x86_64")]
pub mod itlb;
pub mod levels;
pub mod memory;
pub mod mlp;
pub mod set_index;
pub mod simulated;
pub mod walk;
