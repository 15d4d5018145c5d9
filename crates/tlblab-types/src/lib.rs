//! The vocabulary of tlblab: distinct types for distinct things.
//!
//! A *virtual address* (`VirtAddr`) is what a program issues; a *physical address* (`PhysAddr`) is
//! where the data lives in simulated memory. A *page* is a `PageSize`-aligned range of virtual
//! addresses, named by its virtual page number (`Vpn`, always counted in units of *its own* page
//! size); a *frame* is the physical range backing it, named by a `Pfn` (counted in 4 KiB units so
//! frames of every size share one number space). Keeping them apart in the type system is what
//! stops a VPN from being used as a set index of a physically indexed cache by accident.
//!
//! This crate depends only on serde (for derives), so every other crate can use it.

use serde::{Deserialize, Serialize};
use std::fmt;

pub mod hint;
pub mod rng;
pub use rng::SplitMix64;

/// Declares each newtype: a plain value (`Copy`, ordered, hashable, zero by default) serialized
/// as its number, printed in hex (addresses and page numbers) or decimal (ids and counts).
macro_rules! newtypes {
    ($($(#[$doc:meta])* $name:ident($inner:ty): $fmt:ident;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);
        newtypes!(@fmt $name $fmt);
    )*};
    (@fmt $t:ident hex) => { newtypes!(@show $t "{:#x}"); };
    (@fmt $t:ident dec) => { newtypes!(@show $t "{}"); };
    (@show $t:ident $form:literal) => {
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($t), "(", $form, ")"), self.0)
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, $form, self.0)
            }
        }
    };
}

newtypes! {
    /// A virtual address as issued by a program.
    VirtAddr(u64): hex;
    /// A physical address in simulated memory.
    PhysAddr(u64): hex;
    /// A virtual page number: the virtual address shifted right by the page size's shift.
    Vpn(u64): hex;
    /// A physical frame number in 4 KiB units (a 2 MiB frame is 512 consecutive PFNs).
    Pfn(u64): hex;
    /// An address-space identifier as the TLB sees it (ARMv7: 8 bits; x86 PCID: 12 bits).
    Asid(u16): dec;
    /// A virtual-machine identifier (tags guest translations; 0 means "host / no virtualization").
    Vmid(u16): dec;
    /// An ARM domain number (0..16), carried by ARMv7 short-descriptor L1 entries (seed 002 §2).
    Domain(u8): dec;
    /// A simulated core (a hardware context that owns private TLBs and caches).
    CoreId(u16): dec;
    /// A software thread of a simulated program (trace thread ids map onto these).
    ThreadId(u32): dec;
    /// Simulated processor cycles.
    Cycles(u64): dec;
}

impl std::ops::Add for Cycles {
    type Output = Cycles;
    #[inline]
    fn add(self, o: Cycles) -> Cycles {
        Cycles(self.0 + o.0)
    }
}
impl std::ops::AddAssign for Cycles {
    #[inline]
    fn add_assign(&mut self, o: Cycles) {
        self.0 += o.0
    }
}

/// The page sizes tlblab models. Several may be live in one run (e.g. 4 KiB and 2 MiB on x86-64).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4KiB", alias = "4k", alias = "4K")]
    Size4K,
    #[serde(rename = "16KiB", alias = "16k", alias = "16K")]
    Size16K,
    #[serde(rename = "64KiB", alias = "64k", alias = "64K")]
    Size64K,
    #[serde(rename = "1MiB", alias = "1m", alias = "1M")]
    Size1M,
    #[serde(rename = "2MiB", alias = "2m", alias = "2M")]
    Size2M,
    #[serde(rename = "1GiB", alias = "1g", alias = "1G")]
    Size1G,
}

impl PageSize {
    /// Every page size, smallest first.
    pub const ALL: [PageSize; 6] = [
        PageSize::Size4K,
        PageSize::Size16K,
        PageSize::Size64K,
        PageSize::Size1M,
        PageSize::Size2M,
        PageSize::Size1G,
    ];

    /// log2 of the size in bytes.
    #[inline]
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size16K => 14,
            PageSize::Size64K => 16,
            PageSize::Size1M => 20,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }

    #[inline]
    pub const fn bytes(self) -> u64 {
        1u64 << self.shift()
    }

    /// A small dense index (0..6), used to pack the size into TLB tags.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            PageSize::Size4K => 0,
            PageSize::Size16K => 1,
            PageSize::Size64K => 2,
            PageSize::Size1M => 3,
            PageSize::Size2M => 4,
            PageSize::Size1G => 5,
        }
    }

    pub const fn from_index(i: usize) -> Option<PageSize> {
        match i {
            0 => Some(PageSize::Size4K),
            1 => Some(PageSize::Size16K),
            2 => Some(PageSize::Size64K),
            3 => Some(PageSize::Size1M),
            4 => Some(PageSize::Size2M),
            5 => Some(PageSize::Size1G),
            _ => None,
        }
    }

    /// The human name used in configuration files ("4KiB", "2MiB", ...).
    pub const fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4KiB",
            PageSize::Size16K => "16KiB",
            PageSize::Size64K => "64KiB",
            PageSize::Size1M => "1MiB",
            PageSize::Size2M => "2MiB",
            PageSize::Size1G => "1GiB",
        }
    }

    /// Parses "4KiB", "4k", "2M", "1GiB", ... (case-insensitive suffix).
    pub fn parse(s: &str) -> Option<PageSize> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.trim_end_matches("ib").trim_end_matches('b');
        Some(match t {
            "4k" => PageSize::Size4K,
            "16k" => PageSize::Size16K,
            "64k" => PageSize::Size64K,
            "1m" => PageSize::Size1M,
            "2m" => PageSize::Size2M,
            "1g" => PageSize::Size1G,
            _ => return None,
        })
    }

    /// Number of 4 KiB frames in one page of this size.
    #[inline]
    pub const fn frames(self) -> u64 {
        1u64 << (self.shift() - 12)
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl VirtAddr {
    #[inline]
    pub const fn vpn(self, size: PageSize) -> Vpn {
        Vpn(self.0 >> size.shift())
    }
    #[inline]
    pub const fn page_offset(self, size: PageSize) -> u64 {
        self.0 & (size.bytes() - 1)
    }
    #[inline]
    pub const fn align_down(self, size: PageSize) -> VirtAddr {
        VirtAddr(self.0 & !(size.bytes() - 1))
    }
}

impl Vpn {
    /// The first virtual address of this page, given the size the VPN is counted in.
    #[inline]
    pub const fn base(self, size: PageSize) -> VirtAddr {
        VirtAddr(self.0 << size.shift())
    }
}

impl Pfn {
    #[inline]
    pub const fn base(self) -> PhysAddr {
        PhysAddr(self.0 << 12)
    }
}

impl PhysAddr {
    #[inline]
    pub const fn pfn(self) -> Pfn {
        Pfn(self.0 >> 12)
    }
}

/// What kind of memory reference an access is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessKind {
    /// An instruction fetch (looked up in the instruction TLB where split).
    Instr,
    Load,
    Store,
}

impl AccessKind {
    #[inline]
    pub const fn is_instr(self) -> bool {
        matches!(self, AccessKind::Instr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_names_round_trip() {
        for s in PageSize::ALL {
            assert_eq!(PageSize::parse(s.name()), Some(s));
            assert_eq!(PageSize::from_index(s.index()), Some(s));
            assert_eq!(s.bytes(), 1 << s.shift());
        }
        assert_eq!(PageSize::parse("2M"), Some(PageSize::Size2M));
        assert_eq!(PageSize::parse("3M"), None);
    }

    #[test]
    fn vpn_and_offset_split_an_address() {
        let va = VirtAddr(0x1234_5678);
        assert_eq!(va.vpn(PageSize::Size4K), Vpn(0x12345));
        assert_eq!(va.page_offset(PageSize::Size4K), 0x678);
        assert_eq!(
            va.vpn(PageSize::Size2M).base(PageSize::Size2M),
            VirtAddr(0x1220_0000)
        );
    }
}
