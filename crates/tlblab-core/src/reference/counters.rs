//! What the reference model reports, in the names the engine's statistics use: one
//! reference's outcome, the counters per core and of the OS, a TLB entry as tests compare it.

use tlblab_types::PageSize;

/// What the reference model says one reference did.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RefOutcome {
    /// Index of the TLB level (along the path) that hit, or None after a walk.
    pub tlb_hit: Option<usize>,
    /// Where each walk reference was served (cache position in `Stats::sources` order, the
    /// last being memory).
    pub walk_sources: Vec<usize>,
    pub cycles: u64,
}

/// The counters the reference keeps, as `UnitStats` names them (per core: its hardware
/// threads' references and the OS work charged to it). TLB and cache levels are
/// (accesses, hits, misses, evictions) in `Stats::tlb_levels`/`cache_levels` order.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct RefCounters {
    pub references: u64,
    pub instr_references: u64,
    pub tlb: Vec<[u64; 4]>,
    pub walks: u64,
    pub walk_refs: u64,
    pub walk_refs_by_source: Vec<u64>,
    pub pwc_hits: u64,
    pub walk_cycles: u64,
    pub data_by_source: Vec<u64>,
    pub cache: Vec<[u64; 4]>,
    pub page_faults: u64,
    pub invalidations: u64,
    pub cycles: u64,
    /// Per TLB level, the cycles data references stalled because they missed it (seed 004
    /// §V): the next level's lookup, or the walk after the path's last level. Empty unless
    /// the run reports them (`RunOptions::stall_cycles`, or lockdown's twin).
    pub data_stall_cycles: Vec<u64>,
}

impl RefCounters {
    pub(super) fn new(tlbs: usize, caches: usize) -> RefCounters {
        RefCounters {
            tlb: vec![[0; 4]; tlbs],
            cache: vec![[0; 4]; caches],
            walk_refs_by_source: vec![0; caches + 1],
            data_by_source: vec![0; caches + 1],
            data_stall_cycles: vec![0; tlbs],
            ..RefCounters::default()
        }
    }

    pub(super) fn add(&mut self, o: &RefCounters) {
        let sum = |a: &mut Vec<u64>, b: &Vec<u64>| a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        let sum4 = |a: &mut Vec<[u64; 4]>, b: &Vec<[u64; 4]>| {
            for (x, y) in a.iter_mut().zip(b) {
                for k in 0..4 {
                    x[k] += y[k];
                }
            }
        };
        self.references += o.references;
        self.instr_references += o.instr_references;
        sum4(&mut self.tlb, &o.tlb);
        self.walks += o.walks;
        self.walk_refs += o.walk_refs;
        sum(&mut self.walk_refs_by_source, &o.walk_refs_by_source);
        self.pwc_hits += o.pwc_hits;
        self.walk_cycles += o.walk_cycles;
        sum(&mut self.data_by_source, &o.data_by_source);
        sum4(&mut self.cache, &o.cache);
        self.page_faults += o.page_faults;
        self.invalidations += o.invalidations;
        self.cycles += o.cycles;
        sum(&mut self.data_stall_cycles, &o.data_stall_cycles);
    }

    /// These counters less `o` (what a warm-up counted), field by field.
    pub(super) fn sub(&mut self, o: &RefCounters) {
        let less = |a: &mut Vec<u64>, b: &Vec<u64>| a.iter_mut().zip(b).for_each(|(x, y)| *x -= y);
        let less4 = |a: &mut Vec<[u64; 4]>, b: &Vec<[u64; 4]>| {
            for (x, y) in a.iter_mut().zip(b) {
                for k in 0..4 {
                    x[k] -= y[k];
                }
            }
        };
        self.references -= o.references;
        self.instr_references -= o.instr_references;
        less4(&mut self.tlb, &o.tlb);
        self.walks -= o.walks;
        self.walk_refs -= o.walk_refs;
        less(&mut self.walk_refs_by_source, &o.walk_refs_by_source);
        self.pwc_hits -= o.pwc_hits;
        self.walk_cycles -= o.walk_cycles;
        less(&mut self.data_by_source, &o.data_by_source);
        less4(&mut self.cache, &o.cache);
        self.page_faults -= o.page_faults;
        self.invalidations -= o.invalidations;
        self.cycles -= o.cycles;
        less(&mut self.data_stall_cycles, &o.data_stall_cycles);
    }
}

/// The OS counters: the OS model's own vocabulary (`os::OsStats`, data only, no engine code),
/// counted by the reference independently of the engine and compared whole.
pub type RefOsCounters = crate::os::OsStats;

/// One TLB entry as tests compare it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RefEntry {
    pub vpn: u64,
    pub size: PageSize,
    pub pfn: u64,
    pub asid: u16,
    pub hw_thread: u8,
    pub locked: bool,
    /// A global mapping (the kernel's: `kernel_touch`).
    pub global: bool,
}
