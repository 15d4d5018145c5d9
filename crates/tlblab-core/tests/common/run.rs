//! Both models set up alike for a random run, and the check that they ended alike.

use proptest::prelude::*;
use tlblab_core::machine::MachineConfig;
use tlblab_core::reference::ReferenceModel;
use tlblab_core::{RunOptions, System};
use tlblab_types::ThreadId;

/// Both models made alike: `spaces` address spaces, thread t in space t % spaces on hardware
/// thread t % hardware threads (threads 0..6; threads above run where they are placed).
pub fn setup(cfg: &MachineConfig, opts: RunOptions, spaces: usize) -> (System, ReferenceModel) {
    let mut sys = System::new(cfg.clone(), opts).unwrap();
    let mut r = ReferenceModel::machine(cfg, opts);
    let cpus = sys.cpu_count();
    for _ in 0..spaces {
        sys.create_space().unwrap();
        r.create_space().unwrap();
    }
    for t in 0..6u32 {
        let (space, cpu) = (t as usize % spaces, t as usize % cpus);
        sys.bind_thread(ThreadId(t), space, cpu);
        r.bind_thread(ThreadId(t), space, cpu);
    }
    (sys, r)
}

/// The engine and the reference ended alike: Err (the same record failing) or Ok on both, and
/// then everything `reference_difference` compares.
pub fn same_run(
    sys: &System,
    sys_result: Result<(), String>,
    r: &ReferenceModel,
    r_result: Result<(), String>,
) -> Result<(), TestCaseError> {
    if !both_ok("run", &sys_result, &r_result)? {
        // The record that failed ends the run (the CLI reports it and exits 2): what it had
        // counted by then is no result.
        return Ok(());
    }
    super::reference_difference(sys, r).map_err(TestCaseError::fail)
}

/// Whether a step (`what`) went on in both the engine and the reference: both Ok is true, both
/// Err false (the same refusal), and one of each fails the case, with what each said.
pub fn both_ok<T: std::fmt::Debug, U: std::fmt::Debug, E: std::fmt::Debug>(
    what: &str,
    engine: &Result<T, E>,
    reference: &Result<U, E>,
) -> Result<bool, TestCaseError> {
    prop_assert_eq!(
        engine.is_ok(),
        reference.is_ok(),
        "{}: engine {:?}, reference {:?}",
        what,
        engine,
        reference
    );
    Ok(engine.is_ok())
}
