//! Pure analysis of timing data: no measurement, no I/O, so every rule is unit-tested on
//! synthetic curves with known answers (including noisy ones).

pub mod index;
pub mod knee;
#[cfg(test)]
pub mod model;
pub mod replacement;
