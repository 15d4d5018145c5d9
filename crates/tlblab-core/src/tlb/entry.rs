//! A TLB entry as the techniques see it (`TlbEntry`), as a level stores it beside its key
//! (`Payload`, 16 bytes), and the lookups' requester and answers (`Requester`, `TlbHit`).

use super::*;

/// One translation as the techniques see it (iterate, insert, save/restore).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct TlbEntry {
    /// VPN counted in `size` units.
    pub vpn: Vpn,
    pub size: PageSize,
    /// First 4 KiB frame of the page.
    pub pfn: Pfn,
    pub asid: Asid,
    pub vmid: Vmid,
    pub global: bool,
    pub domain: Domain,
    pub hw_thread: u8,
    pub locked: bool,
}

impl TlbEntry {
    pub fn new(vpn: Vpn, size: PageSize, pfn: Pfn, asid: Asid) -> TlbEntry {
        TlbEntry {
            vpn,
            size,
            pfn,
            asid,
            vmid: Vmid(0),
            global: false,
            domain: Domain(0),
            hw_thread: 0,
            locked: false,
        }
    }
}

/// The fields of a TLB slot besides its key (see `Tlb::payload`). `repr(C)`: 16 bytes without
/// padding, the frame and then the tags, so the fast lane's pair loops build it from two
/// words and store it as two (`Payload::from_words`).
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct Payload {
    pub(crate) pfn: Pfn,
    pub(crate) asid: Asid,
    pub(crate) vmid: Vmid,
    pub(crate) domain: Domain,
    pub(crate) hw_thread: u8,
    pub(crate) global: bool,
    pub(crate) locked: bool,
}

const _: () = assert!(std::mem::size_of::<Payload>() == 16);
const _: () = assert!(std::mem::align_of::<Payload>() == 8);

impl Payload {
    /// The word of everything but the frame (`from_words`).
    #[inline(always)]
    pub(crate) fn tags_word(self) -> u64 {
        // SAFETY: `Payload` is `repr(C)`, 16 bytes of fields without padding (asserted above),
        // so it reads as two initialised words.
        let [_, tags]: [u64; 2] = unsafe { std::mem::transmute(self) };
        tags
    }

    /// The payload of frame `pfn` and the tags of `tags`, a `tags_word`. Built once per
    /// stretch, the word keeps the compiler from storing the tags field by field (measured:
    /// the pair loops, which fill two levels per reference on a stream missing both, stored
    /// a payload built from fields in up to six stores).
    #[inline(always)]
    pub(crate) fn from_words(pfn: Pfn, tags: u64) -> Payload {
        // SAFETY: `tags` is the second word of a valid `Payload` (`tags_word`), and any frame
        // number is a valid first word.
        unsafe { std::mem::transmute([pfn.0, tags]) }
    }

    /// The payload of `e` with every tag of the entry, locked (as the lockable array holds it).
    pub(super) fn locked_from(e: &TlbEntry) -> Payload {
        Payload {
            pfn: e.pfn,
            asid: e.asid,
            vmid: e.vmid,
            domain: e.domain,
            hw_thread: e.hw_thread,
            global: e.global,
            locked: true,
        }
    }

    /// What a level fills for `req` from `found`, the entry of a level below that hit: `req`'s
    /// entry of `found`'s frame and domain, global if `found` is (a kernel entry stays global
    /// in every level it is copied to, as `System::access`'s fills keep it).
    #[inline(always)]
    pub(crate) fn copied_for(found: Payload, req: Requester) -> Payload {
        Payload {
            global: found.global,
            ..Payload::filled(found.pfn, found.domain, req)
        }
    }

    /// What the simulator fills for `req`: an entry of its ASID, VMID and hardware thread,
    /// neither global nor locked (as `System::reference_full` builds it).
    #[inline(always)]
    pub(crate) fn filled(pfn: Pfn, domain: Domain, req: Requester) -> Payload {
        Payload {
            pfn,
            asid: req.asid,
            vmid: req.vmid,
            domain,
            hw_thread: req.hw_thread,
            global: false,
            locked: false,
        }
    }
}

/// Who is asking: the tags a lookup must match.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Requester {
    pub asid: Asid,
    pub vmid: Vmid,
    pub hw_thread: u8,
}

/// An entry `Tlb::peek` found: where it is, its key and page size, its frame.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, Debug)]
pub(crate) struct FoundEntry {
    pub slot: usize,
    pub key: u64,
    /// The address looked up (the memo's, `Tlb::hit_slot`).
    pub va: u64,
    pub size: PageSize,
    pub pfn: Pfn,
}

/// The result of a hit.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub struct TlbHit {
    pub slot: usize,
    pub pfn: Pfn,
    pub size: PageSize,
    pub domain: Domain,
}
