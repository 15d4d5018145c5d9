//! Thread migration as a policy: what a thread meets when it moves to another core.
//!
//! The default (no hook) is what stock hardware does: the thread finds whatever the new core's
//! TLBs hold and refills by walking. The TLB-migration technique of seed 000 installs a
//! `MigrationHook` that saves entries on the old core and restores them on the new one.

use crate::system::{SimError, System};
use tlblab_types::ThreadId;

pub trait MigrationHook: Send {
    /// Called when `thread` of address space `space` moves from hardware thread `from` to `to`,
    /// after its clock was carried over and before it runs on `to`. Returns the cycles the
    /// technique costs (charged to `to`).
    fn on_migrate(
        &mut self,
        sys: &mut System,
        thread: ThreadId,
        space: usize,
        from: usize,
        to: usize,
    ) -> Result<u64, SimError>;
}
