//! What CPUID *declares* about the TLBs, decoded for display beside the measured values.
//!
//! These values are never used as measurements: hypervisors may mask them, and they have been
//! wrong before (Skylake's leaf-2 descriptor says a 6-way STLB; TLBleed measured 12 ways).
//! AMD: leaves 0x8000_0005 (L1, 4K and 2M), 0x8000_0006 (L2, 4K and 2M; associativity as a range
//! code) and 0x8000_0019 (1G). Intel: leaf 0x18 (deterministic address translation parameters).

use serde::{Deserialize, Serialize};

/// Declared associativity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Assoc {
    Full,
    Ways {
        ways: u32,
    },
    /// AMD L2 codes give a range ("8 to 15 ways").
    Range {
        lo: u32,
        hi: u32,
    },
    Disabled,
    Unknown {
        code: u32,
    },
}

impl std::fmt::Display for Assoc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Assoc::Full => write!(f, "fully associative"),
            Assoc::Ways { ways } => write!(f, "{ways}-way"),
            Assoc::Range { lo, hi } => write!(f, "{lo}..{hi}-way"),
            Assoc::Disabled => write!(f, "disabled"),
            Assoc::Unknown { code } => write!(f, "assoc code {code:#x}"),
        }
    }
}

/// One declared TLB.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeclaredTlb {
    pub level: u8,
    /// "data", "instruction" or "unified".
    pub kind: String,
    /// "4K", "2M", "1G" (several for Intel entries that serve more than one size).
    pub page_sizes: Vec<String>,
    pub entries: u32,
    pub assoc: Assoc,
}

/// Everything CPUID says that the probe prints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuidInfo {
    pub vendor: String,
    pub brand: String,
    pub family: u32,
    pub model: u32,
    pub hypervisor: Option<String>,
    pub tlbs: Vec<DeclaredTlb>,
}

/// AMD associativity byte of leaf 0x8000_0005.
fn amd_l1_assoc(b: u32) -> Assoc {
    match b & 0xff {
        0 => Assoc::Disabled,
        0xff => Assoc::Full,
        n => Assoc::Ways { ways: n },
    }
}

/// AMD associativity code of leaves 0x8000_0006 / 0x8000_0019 (AMD PPR, family 17h/19h).
pub fn amd_l2_assoc(code: u32) -> Assoc {
    match code & 0xf {
        0 => Assoc::Disabled,
        1 => Assoc::Ways { ways: 1 },
        2 => Assoc::Ways { ways: 2 },
        3 => Assoc::Ways { ways: 3 },
        4 => Assoc::Range { lo: 4, hi: 5 },
        5 => Assoc::Range { lo: 6, hi: 7 },
        6 => Assoc::Range { lo: 8, hi: 15 },
        8 => Assoc::Range { lo: 16, hi: 31 },
        0xa => Assoc::Range { lo: 32, hi: 47 },
        0xb => Assoc::Range { lo: 48, hi: 63 },
        0xc => Assoc::Range { lo: 64, hi: 95 },
        0xd => Assoc::Range { lo: 96, hi: 127 },
        0xe => Assoc::Range {
            lo: 128,
            hi: u32::MAX,
        },
        0xf => Assoc::Full,
        c => Assoc::Unknown { code: c },
    }
}

fn tlb(level: u8, kind: &str, size: &str, entries: u32, assoc: Assoc) -> Option<DeclaredTlb> {
    if entries == 0 || assoc == Assoc::Disabled {
        return None;
    }
    Some(DeclaredTlb {
        level,
        kind: kind.into(),
        page_sizes: vec![size.into()],
        entries,
        assoc,
    })
}

/// Decodes AMD leaves from raw register values: `l5 = (eax, ebx)` of 0x8000_0005, `l6` of
/// 0x8000_0006, `l19` of 0x8000_0019 (None when the leaf is absent).
pub fn decode_amd(
    l5: Option<(u32, u32)>,
    l6: Option<(u32, u32)>,
    l19: Option<(u32, u32)>,
) -> Vec<DeclaredTlb> {
    let mut v = Vec::new();
    if let Some((eax, ebx)) = l5 {
        for (reg, size) in [(ebx, "4K"), (eax, "2M")] {
            v.extend(tlb(
                1,
                "data",
                size,
                (reg >> 16) & 0xff,
                amd_l1_assoc(reg >> 24),
            ));
            v.extend(tlb(
                1,
                "instruction",
                size,
                reg & 0xff,
                amd_l1_assoc(reg >> 8),
            ));
        }
    }
    let l2_layout = |reg: u32| {
        (
            (reg >> 16) & 0xfff,
            amd_l2_assoc(reg >> 28),
            reg & 0xfff,
            amd_l2_assoc(reg >> 12),
        )
    };
    if let Some((eax, ebx)) = l6 {
        for (reg, size) in [(ebx, "4K"), (eax, "2M")] {
            let (de, da, ie, ia) = l2_layout(reg);
            v.extend(tlb(2, "data", size, de, da));
            v.extend(tlb(2, "instruction", size, ie, ia));
        }
    }
    if let Some((eax, ebx)) = l19 {
        for (reg, level) in [(eax, 1u8), (ebx, 2u8)] {
            let (de, da, ie, ia) = l2_layout(reg);
            v.extend(tlb(level, "data", "1G", de, da));
            v.extend(tlb(level, "instruction", "1G", ie, ia));
        }
    }
    v
}

/// Decodes one Intel leaf-0x18 sub-leaf (`ebx`, `ecx`, `edx`); None for a null entry.
pub fn decode_intel_18(ebx: u32, ecx: u32, edx: u32) -> Option<DeclaredTlb> {
    let kind = match edx & 0x1f {
        1 => "data",
        2 => "instruction",
        3 => "unified",
        4 => "data (loads)",
        5 => "data (stores)",
        _ => return None,
    };
    let level = ((edx >> 5) & 7) as u8;
    let full = (edx >> 8) & 1 == 1;
    let ways = (ebx >> 16) & 0xffff;
    let sets = ecx;
    let mut sizes = Vec::new();
    for (bit, s) in [(0, "4K"), (1, "2M"), (2, "4M"), (3, "1G")] {
        if (ebx >> bit) & 1 == 1 {
            sizes.push(s.to_string());
        }
    }
    let assoc = if full {
        Assoc::Full
    } else {
        Assoc::Ways { ways }
    };
    Some(DeclaredTlb {
        level,
        kind: kind.into(),
        page_sizes: sizes,
        entries: ways * sets,
        assoc,
    })
}

#[cfg(target_arch = "x86_64")]
fn raw(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    let r = core::arch::x86_64::__cpuid_count(leaf, sub);
    (r.eax, r.ebx, r.ecx, r.edx)
}

fn regs_to_string(regs: &[u32]) -> String {
    let bytes: Vec<u8> = regs.iter().flat_map(|r| r.to_le_bytes()).collect();
    String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .to_string()
}

/// Reads CPUID on this machine.
#[cfg(target_arch = "x86_64")]
pub fn read() -> CpuidInfo {
    let (max, b, c, d) = raw(0, 0);
    let vendor = regs_to_string(&[b, d, c]);
    let (eax1, _, ecx1, _) = raw(1, 0);
    let base_family = (eax1 >> 8) & 0xf;
    let family = if base_family == 0xf {
        base_family + ((eax1 >> 20) & 0xff)
    } else {
        base_family
    };
    let model = ((eax1 >> 4) & 0xf)
        | (if base_family >= 6 {
            ((eax1 >> 16) & 0xf) << 4
        } else {
            0
        });
    let hypervisor = if (ecx1 >> 31) & 1 == 1 {
        let (_, hb, hc, hd) = raw(0x4000_0000, 0);
        Some(regs_to_string(&[hb, hc, hd]))
    } else {
        None
    };
    let (max_ext, ..) = raw(0x8000_0000, 0);
    let brand = if max_ext >= 0x8000_0004 {
        let mut regs = Vec::new();
        for l in 0x8000_0002..=0x8000_0004u32 {
            let (a, b, c, d) = raw(l, 0);
            regs.extend([a, b, c, d]);
        }
        regs_to_string(&regs)
    } else {
        String::new()
    };
    let mut tlbs = Vec::new();
    if vendor == "AuthenticAMD" || vendor == "HygonGenuine" {
        let get = |l: u32| {
            if max_ext >= l {
                let (a, b, _, _) = raw(l, 0);
                Some((a, b))
            } else {
                None
            }
        };
        tlbs = decode_amd(get(0x8000_0005), get(0x8000_0006), get(0x8000_0019));
    } else if max >= 0x18 {
        let (subs, ..) = raw(0x18, 0);
        for s in 0..=subs.min(64) {
            let (_, b, c, d) = raw(0x18, s);
            tlbs.extend(decode_intel_18(b, c, d));
        }
    }
    CpuidInfo {
        vendor,
        brand,
        family,
        model,
        hypervisor,
        tlbs,
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub fn read() -> CpuidInfo {
    CpuidInfo::default()
}

impl CpuidInfo {
    /// The declared 4K data TLB at `level`, if any.
    pub fn data_tlb(&self, level: u8) -> Option<&DeclaredTlb> {
        self.tlbs.iter().find(|t| {
            t.level == level
                && (t.kind == "data" || t.kind == "unified" || t.kind == "data (loads)")
                && t.page_sizes.iter().any(|s| s == "4K")
        })
    }

    pub fn instruction_tlb(&self, level: u8) -> Option<&DeclaredTlb> {
        self.tlbs.iter().find(|t| {
            t.level == level
                && (t.kind == "instruction" || t.kind == "unified")
                && t.page_sizes.iter().any(|s| s == "4K")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ryzen_5600g_raw_leaves_decode_to_the_documented_zen3_tlbs() {
        // Raw values from a published CPUID dump of a Ryzen 5 5600G (Umio-Yasuno/cpuid_dump_rs,
        // dump_result/AMD_Ryzen_5_5600G_with_Radeon_Graphics_00A50F00.txt).
        let v = decode_amd(
            Some((0xFF40FF40, 0xFF40FF40)),
            Some((0x48002200, 0x68004200)),
            Some((0xF040F040, 0xF0400000)),
        );
        let find = |level, kind: &str, size: &str| {
            v.iter()
                .find(|t| t.level == level && t.kind == kind && t.page_sizes[0] == size)
                .cloned()
                .unwrap()
        };
        assert_eq!(find(1, "data", "4K").entries, 64);
        assert_eq!(find(1, "data", "4K").assoc, Assoc::Full);
        assert_eq!(find(2, "data", "4K").entries, 2048);
        assert_eq!(find(2, "data", "4K").assoc, Assoc::Range { lo: 8, hi: 15 });
        assert_eq!(find(2, "instruction", "4K").entries, 512);
        assert_eq!(
            find(2, "instruction", "4K").assoc,
            Assoc::Range { lo: 4, hi: 5 }
        );
        assert_eq!(find(2, "data", "2M").assoc, Assoc::Range { lo: 4, hi: 5 });
        assert_eq!(find(1, "data", "1G").entries, 64);
        assert_eq!(find(2, "data", "1G").assoc, Assoc::Full);
        // EBX of 0x8000_0019 declares no L2 1G instruction TLB.
        assert!(v
            .iter()
            .all(|t| !(t.level == 2 && t.kind == "instruction" && t.page_sizes[0] == "1G")));
    }

    #[test]
    fn intel_leaf_18_subleaf_decodes_ways_times_sets() {
        // A 4-way, 16-set L1 data TLB for 4K pages: EDX type 1, level 1; EBX ways 4, 4K bit.
        let t = decode_intel_18(4 << 16 | 1, 16, 1 | 1 << 5).unwrap();
        assert_eq!((t.level, t.kind.as_str(), t.entries), (1, "data", 64));
        assert_eq!(t.assoc, Assoc::Ways { ways: 4 });
        assert_eq!(t.page_sizes, vec!["4K"]);
        assert!(decode_intel_18(0, 0, 0).is_none());
    }

    #[test]
    fn reading_this_cpu_does_not_fail() {
        let info = read();
        if cfg!(target_arch = "x86_64") {
            assert!(!info.vendor.is_empty());
        }
    }
}
