//! What the curve's test files share.

use tlblab_trace::record::{flush, Event, Record};
use tlblab_types::CoreId;

/// A flush of core 0's TLBs, as the streams put one now and then.
pub fn tlb_flush() -> Record {
    Event::Flush {
        core: CoreId(0),
        what: flush::TLB,
    }
    .into()
}
