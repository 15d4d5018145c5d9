//! The data-TLB instrument: one-line-per-page chases (test) against packed chases (control).
//!
//! The control always visits its lines in random order: packed lines in sequence would be
//! streamed in by the hardware prefetchers and look like L1D hits at any size, which would leave
//! data-cache knees in the excess. The test may run in sequence (sharp LRU-style cliffs at a
//! TLB's capacity); each of its accesses lands on a different page, which the prefetchers do not
//! follow.

use super::curve::Instrument;
use crate::chase::{build, build_lanes, span_bytes, time_lanes, Layout, Order};
use crate::sys::{Region, Thp};

/// Memory for test chains of up to `max_n` pages at `stride` pages, and for their controls.
/// Chains are rebuilt in place for each N (pointer writes only; pages stay faulted in).
pub struct DataChains {
    test: Region,
    control: Region,
    layout: Layout,
    order: Order,
    control_order: Order,
    max_n: usize,
    /// Independent chains followed in lockstep (1: one dependent chain, a latency); see
    /// [`time_lanes`].
    lanes: usize,
    built: Option<(usize, bool)>,
    starts: Vec<*const usize>,
}

impl DataChains {
    pub fn new(
        max_n: usize,
        layout: Layout,
        order: Order,
        thp: Thp,
    ) -> std::io::Result<DataChains> {
        let test = Region::new(span_bytes(layout, max_n), 2 << 20, thp)?;
        let control = Region::new(span_bytes(Layout::Packed, max_n), 2 << 20, Thp::Never)?;
        // Fault everything in once, so no page fault lands inside a timed window.
        build(&test, layout, order, max_n);
        let control_order = Order::Random(0x5eed ^ max_n as u64);
        build(&control, Layout::Packed, control_order, max_n);
        Ok(DataChains {
            test,
            control,
            layout,
            order,
            control_order,
            max_n,
            lanes: 1,
            built: None,
            starts: Vec::new(),
        })
    }

    /// Times `lanes` independent chains in lockstep instead of one (both test and control).
    pub fn with_lanes(mut self, lanes: usize) -> DataChains {
        self.lanes = lanes;
        self.built = None;
        self
    }
}

impl DataChains {
    /// Start of the test chains' mapping (to look it up in /proc/self/smaps).
    pub fn test_base(&self) -> *const u8 {
        self.test.base()
    }
}

impl Instrument for DataChains {
    fn time(&mut self, n: usize, control: bool, window_ns: u64) -> f64 {
        let n = n.clamp(1, self.max_n);
        if self.built != Some((n, control)) {
            self.starts = if control {
                build_lanes(
                    &self.control,
                    Layout::Packed,
                    self.control_order,
                    n,
                    self.lanes,
                )
            } else {
                build_lanes(&self.test, self.layout, self.order, n, self.lanes)
            };
            self.built = Some((n, control));
        }
        // SAFETY: `start` was just built in one of our regions, which live as long as `self`.
        unsafe { time_lanes(&self.starts, n, window_ns) }
    }

    fn max_n(&self) -> usize {
        self.max_n
    }
}
