//! ARM domains as the engine checks them once a technique turns them on (seed 002 §2.1, §2.3):
//! each hardware thread's Domain Access Control Register (DACR) and the caching page directory
//! (CPD), one domain-tagged first-level entry per 1 MiB section of the 32-bit address space.
//!
//! Off (the default, `System::domains` None) none of this runs: a run without a technique that
//! turns it on executes what it executed before. On (`System::enable_domains`, by
//! `techniques::fass`), the memo and hint-table paths step aside (the cpus' `first_tlb` are
//! cleared, so `reference_first_hit`, by the memo or the hint table, answers None at its
//! first line) and every reference reaches `reference_full`, whose address-limit check is made to
//! fail (`va_limit` 0) so that its cold branch hands the reference here. The check:
//! - a TLB hit is allowed when the DACR gives its entry's domain client or manager access;
//! - a TLB miss reads the CPD entry of the section: none is a section fault (the kernel loads
//!   the entry from the running process's page directory, seed 002 §2.3), one whose domain the
//!   DACR does not enable is a domain fault (an address-space collision, Fig. 1);
//! - the cache access that follows is validated by that same lookup: the SA-1100's caches carry
//!   no protection bits, so a TLB lookup is made on every cache hit too (seed 002 §2 note 4).
//!
//! A fault goes to the technique (`Technique::on_domain_fault`), which flushes, reloads the
//! entry or recycles a domain, and returns the cycles; the access is then restarted.

use super::{SimError, System};
use crate::tlb::Requester;
use tlblab_types::{AccessKind, Domain, VirtAddr};

/// Sections of 1 MiB in the 32-bit address space the CPD covers.
pub const SECTIONS: usize = 4096;

/// Why an access faulted (the SA-1100's fault status, seed 002 §2.3).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DomainFault {
    /// The CPD holds no entry for the section: load it.
    Section,
    /// The TLB entry or CPD entry is tagged with a domain the DACR does not enable.
    Domain(Domain),
}

/// The DACR of every hardware thread and the CPD.
#[derive(Clone, Debug)]
pub struct DomainState {
    /// Per hardware thread: 2 bits per domain (00 no access, 01 client, 11 manager).
    pub dacr: Vec<u32>,
    /// Per 1 MiB section: the domain its CPD entry is tagged with, None when empty.
    pub cpd: Vec<Option<Domain>>,
    /// The format's real address limit (`va_limit` is 0 while domains are on).
    pub(crate) va_limit: u64,
    pub faults_section: u64,
    pub faults_domain: u64,
}

/// Whether `dacr` gives domain `d` any access (client or manager).
#[inline]
pub fn dacr_allows(dacr: u32, d: Domain) -> bool {
    (dacr >> (2 * (d.0 as u32 & 15))) & 0b11 != 0
}

impl System {
    /// Turns domain checks on for the rest of the run (every DACR 0: no domain enabled, every
    /// CPD entry empty). Called by a technique's `install`.
    pub fn enable_domains(&mut self) -> Result<(), SimError> {
        if self.va_limit > 1 << 32 {
            return Err(SimError(format!(
                "ARM domains need a 32-bit address space; the {} page-table format translates more",
                self.config.page_table.format.name()
            )));
        }
        if self.domains.is_none() {
            self.domains = Some(Box::new(DomainState {
                dacr: vec![0; self.cpus.len()],
                cpd: vec![None; SECTIONS],
                va_limit: self.va_limit,
                faults_section: 0,
                faults_domain: 0,
            }));
            // Every reference to reference_full's cold branch (the module comment).
            self.va_limit = 0;
            for c in &mut self.cpus {
                c.first_tlb = [None, None];
            }
        }
        Ok(())
    }

    /// The domain state, when on.
    pub fn domains(&self) -> Option<&DomainState> {
        self.domains.as_deref()
    }

    /// Loads hardware thread `cpu`'s DACR.
    pub fn set_dacr(&mut self, cpu: usize, dacr: u32) {
        if let Some(d) = self.domains.as_deref_mut() {
            d.dacr[cpu] = dacr;
        }
    }

    /// Writes (Some) or empties (None) the CPD entry of `section`.
    pub fn set_cpd(&mut self, section: usize, domain: Option<Domain>) {
        if let Some(d) = self.domains.as_deref_mut() {
            d.cpd[section] = domain;
        }
    }

    /// The domain a lookup of `va` would see on `cpu`'s path for `kind`: the first TLB level
    /// holding it (its entry's domain), else the CPD entry's; None when neither has one.
    fn domain_seen(
        &self,
        cpu: usize,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> (bool, Option<Domain>) {
        for &(t, _) in self.cores[self.cpus[cpu].core].tlb_path(kind) {
            if let Some(d) = self.tlbs[t].probe_domain(va, req) {
                return (true, Some(d));
            }
        }
        let ds = self.domains.as_deref().expect("domains on");
        (false, ds.cpd[(va.0 >> 20) as usize])
    }

    /// A reference with domain checks (the module comment): faults are handled by the
    /// technique and the access restarted, then the reference runs as any other, and an entry
    /// filled by a walk is tagged with its section's CPD domain.
    #[inline(never)]
    pub(super) fn reference_domains(
        &mut self,
        st: super::ThreadState,
        req: Requester,
        kind: AccessKind,
        va: VirtAddr,
    ) -> Result<u64, SimError> {
        let limit = self.domains.as_deref().expect("domains on").va_limit;
        if va.0 >= limit {
            return Err(SimError(format!(
                "virtual address {va} is outside the {}-bit address space of the {} page-table format",
                limit.trailing_zeros(),
                self.config.page_table.format.name()
            )));
        }
        let cpu = st.cpu;
        let mut fault_cycles = 0;
        let mut hit;
        let mut faults = 0;
        loop {
            let (in_tlb, seen) = self.domain_seen(cpu, req, kind, va);
            hit = in_tlb;
            let ds = self.domains.as_deref_mut().expect("domains on");
            let fault = match seen {
                None => DomainFault::Section,
                Some(d) if dacr_allows(ds.dacr[cpu], d) => break,
                Some(d) => DomainFault::Domain(d),
            };
            match fault {
                DomainFault::Section => ds.faults_section += 1,
                DomainFault::Domain(_) => ds.faults_domain += 1,
            }
            faults += 1;
            if faults > 4 {
                return Err(SimError(format!(
                    "the technique did not resolve a {fault:?} fault at {va} on hardware thread {cpu}"
                )));
            }
            let space = st.space;
            fault_cycles += self.with_technique(0, |t, sys| {
                t.on_domain_fault(sys, cpu, space, kind, va, fault)
            })?;
        }
        self.charge(cpu, fault_cycles);
        let fill = self.domains.as_deref().expect("domains on").cpd[(va.0 >> 20) as usize];
        // The body of reference_full, its address check passing for this one call.
        self.va_limit = limit;
        let r = self.reference_full(st, req, kind, va);
        self.va_limit = 0;
        let cycles = r?;
        if !hit {
            // The walk read the process's page table; the hardware read the CPD, whose entry
            // carries the domain (seed 002 Fig. 1).
            let d = fill.expect("checked above");
            for &(t, _) in self.cores[self.cpus[cpu].core].tlb_path(kind) {
                self.tlbs[t].set_domain(va, req, d);
            }
        }
        Ok(cycles + fault_cycles)
    }
}

impl System {
    /// Flushes hardware thread `cpu`'s core: its TLBs and page-walk caches, and its virtually
    /// indexed caches (cleaning dirty lines) when `caches`, as the flush-all switch does
    /// (`switch::flush_core`). Returns the cycles the cache flushes cost.
    pub fn flush_core(&mut self, cpu: usize, caches: bool) -> u64 {
        super::switch::flush_core(self, cpu, caches)
    }
}
