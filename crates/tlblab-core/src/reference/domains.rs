//! ARM domains in the reference, for seed 002's twin (`twins/fass/`), naively: each hardware
//! thread's Domain Access Control Register (2 bits per domain, §2.1), the caching page
//! directory (one optional domain per 1 MiB section, §2.3 Fig. 1) as a `Vec`, and the domain
//! each TLB entry carries in a map beside the TLB (by the entry's level instance and tags).
//!
//! Off (`ReferenceModel::domains` None) nothing here runs. On, every reference is checked
//! before it runs (seed 002 §2.1, §2 note 4: the SA-1100 consults the TLB on every cache hit
//! too): the first TLB level on the path that holds the page decides by its entry's domain,
//! else the section's CPD entry; an empty entry is a section fault, a domain the DACR does
//! not enable a domain fault (§2.3). The twin handles the fault (its cycles charged to the
//! hardware thread) and the check is made again. A walk's TLB fills carry the CPD entry's
//! domain, a fill from a lower level's hit that entry's.

use super::parts::{Entry, Who};
use super::ReferenceModel;
use std::collections::HashMap;
use tlblab_types::PageSize;

/// Sections of 1 MiB in the 32-bit address space.
pub(super) const SECTIONS: usize = 4096;

/// Why a reference faulted on ARM domains (seed 002 §2.3), as a twin's `on_domain_fault`
/// hears it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fault {
    /// The CPD holds no entry for the section.
    Section,
    /// The TLB or CPD entry carries a domain the DACR does not enable.
    Domain(u8),
}

/// (TLB instance, vpn, page size, ASID, VMID, hardware thread): an entry as the TLB tags it.
type Key = (usize, u64, PageSize, u16, u16, u8);

pub(super) struct RefDomains {
    pub(super) dacr: Vec<u32>,
    pub(super) cpd: Vec<Option<u8>>,
    tags: HashMap<Key, u8>,
}

impl RefDomains {
    pub(super) fn new(cpus: usize, dacr: u32) -> RefDomains {
        RefDomains {
            dacr: vec![dacr; cpus],
            cpd: vec![None; SECTIONS],
            tags: HashMap::new(),
        }
    }
}

/// Whether `dacr` gives domain `d` client (01) or manager (11) access.
pub(super) fn enables(dacr: u32, d: u8) -> bool {
    (dacr >> (2 * d as u32)) & 3 != 0
}

fn key(t: usize, e: &Entry) -> Key {
    (t, e.vpn, e.size, e.asid, e.vmid, e.hw_thread)
}

impl ReferenceModel {
    /// The domain of the entry of TLB instance `t` a lookup of `va` for `who` would hit.
    fn entry_domain(&self, t: usize, va: u64, who: Who) -> Option<u8> {
        let ds = self.domains.as_ref()?;
        let e = self.tlbs[t].peek(va, who)?;
        Some(ds.tags.get(&key(t, e)).copied().unwrap_or(0))
    }

    /// Before a reference of `va` on `cpu` in `space` (`path`: the TLB levels it looks up):
    /// the check, faults handled by the twin until it passes. Returns the CPD entry's domain
    /// (for a walk's fills), None when domains are off.
    pub(super) fn domain_check(
        &mut self,
        cpu: usize,
        space: usize,
        va: u64,
        path: &[(usize, usize)],
        who: Who,
    ) -> Result<Option<u8>, String> {
        if self.domains.is_none() {
            return Ok(None);
        }
        let section = (va >> 20) as usize;
        let mut cycles = 0;
        let mut faults = 0;
        loop {
            let in_tlb = path
                .iter()
                .find(|&&(t, _)| self.tlbs[t].peek(va, who).is_some())
                .and_then(|&(t, _)| self.entry_domain(t, va, who));
            let ds = self.domains.as_ref().expect("on");
            let fault = match in_tlb.or(ds.cpd[section]) {
                None => Fault::Section,
                Some(d) if enables(ds.dacr[cpu], d) => break,
                Some(d) => Fault::Domain(d),
            };
            faults += 1;
            if faults > 4 {
                return Err(format!(
                    "twin fass: {fault:?} fault at {va:#x} on hardware thread {cpu} not resolved"
                ));
            }
            let mut twin = self.twin.take().expect("domains are on for a twin");
            let r = twin.on_domain_fault(self, cpu, space, va, fault);
            self.twin = Some(twin);
            cycles += r?;
        }
        self.charge(cpu, cycles);
        Ok(self.domains.as_ref().expect("on").cpd[section])
    }

    /// After a reference's fills: each level of `filled` now holding `va` for `who` carries
    /// the domain of the entry that hit at level `hit` of `path`, or after a walk `walked`
    /// (the CPD entry's, seed 002 Fig. 1).
    pub(super) fn tag_fills(
        &mut self,
        path: &[(usize, usize)],
        hit: Option<usize>,
        filled: usize,
        va: u64,
        who: Who,
        walked: Option<u8>,
    ) {
        if self.domains.is_none() {
            return;
        }
        let d = match hit {
            Some(i) => self.entry_domain(path[i].0, va, who).unwrap_or(0),
            None => walked.unwrap_or(0),
        };
        for &(t, _) in &path[..filled] {
            if let Some(e) = self.tlbs[t].peek(va, who) {
                let k = key(t, e);
                self.domains.as_mut().expect("on").tags.insert(k, d);
            }
        }
    }

    /// Turns the domain checks on (a twin's install): every DACR `dacr`, every CPD entry
    /// empty.
    pub(super) fn enable_domains(&mut self, dacr: u32) {
        self.domains = Some(RefDomains::new(self.cpus.len(), dacr));
    }
}
