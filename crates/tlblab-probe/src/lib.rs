//! Host TLB measurement by timing.
