//! TLB set-index functions: which set a page lives in.
//!
//! Bit positions are virtual-address bits *as for a 4 KiB page* (bit 12 = lowest VPN bit). For a
//! larger page size the same VPN-relative bits are used, shifted by the size's extra offset bits:
//! a TLB that indexes 4 KiB pages by VA[18:12] indexes 2 MiB pages by VA[27:21].

use serde::{Deserialize, Serialize};

/// How a TLB level maps a page to a set.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum IndexFn {
    /// VPN modulo the number of sets (the low VPN bits when sets is a power of two).
    #[default]
    LowBits,
    /// The listed address bits, lowest-order set bit first (`bits = [12, 13, 14, 17]`).
    Bits { bits: Vec<u8> },
    /// Address bits `a.0 ..= a.1` XOR bits `b.0 ..= b.1` (inclusive ranges of equal width,
    /// log2(sets) bits each), as in XOR-hashed TLB indexing (TLBleed, Gras et al. 2018).
    Xor { a: (u8, u8), b: (u8, u8) },
}

/// The compiled form used on the hot path.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub(crate) enum CompiledIndex {
    Mask(u64),
    Modulo(u64),
    Bits(Vec<u8>),
    Xor {
        a_shift: u32,
        b_shift: u32,
        mask: u64,
    },
}

impl CompiledIndex {
    pub(crate) fn new(f: &IndexFn, sets: usize) -> CompiledIndex {
        if sets == 1 {
            // One set: every page is in set 0, as `vpn & 0` says.
            return CompiledIndex::Mask(0);
        }
        match f {
            IndexFn::LowBits if sets.is_power_of_two() => CompiledIndex::Mask(sets as u64 - 1),
            IndexFn::LowBits => CompiledIndex::Modulo(sets as u64),
            IndexFn::Bits { bits } => CompiledIndex::Bits(bits.iter().map(|b| b - 12).collect()),
            IndexFn::Xor { a, b } => CompiledIndex::Xor {
                a_shift: (a.0 - 12) as u32,
                b_shift: (b.0 - 12) as u32,
                mask: sets as u64 - 1,
            },
        }
    }

    /// The mask of a low-VPN-bits index (one set: 0), if it is one.
    pub(crate) fn low_mask(&self) -> Option<u64> {
        match self {
            CompiledIndex::Mask(m) => Some(*m),
            _ => None,
        }
    }

    /// Set of a page, given its VPN counted in its own page size.
    #[inline]
    pub(crate) fn set_of(&self, vpn: u64) -> usize {
        // Low VPN bits (and one set, mask 0) are nearly every geometry: a compare and an AND,
        // before the dispatch over the others.
        if let CompiledIndex::Mask(m) = self {
            return (vpn & m) as usize;
        }
        match self {
            CompiledIndex::Mask(m) => (vpn & m) as usize,
            CompiledIndex::Modulo(n) => (vpn % n) as usize,
            CompiledIndex::Bits(bits) => {
                let mut s = 0usize;
                for (i, b) in bits.iter().enumerate() {
                    s |= ((vpn >> b) as usize & 1) << i;
                }
                s
            }
            CompiledIndex::Xor {
                a_shift,
                b_shift,
                mask,
            } => (((vpn >> a_shift) ^ (vpn >> b_shift)) & mask) as usize,
        }
    }
}

/// Checks an index function against a geometry; the error names the offending field.
pub fn validate_index(f: &IndexFn, sets: usize) -> Result<(), String> {
    let need = if sets.is_power_of_two() {
        sets.trailing_zeros() as usize
    } else {
        usize::MAX
    };
    match f {
        IndexFn::LowBits => Ok(()),
        IndexFn::Bits { bits } => {
            if need == usize::MAX {
                return Err(format!(
                    "index.bits needs a power-of-two number of sets, found {sets} sets"
                ));
            }
            if bits.len() != need {
                return Err(format!(
                    "index.bits: expected {need} bits for {sets} sets, found {} ({bits:?})",
                    bits.len()
                ));
            }
            if let Some(b) = bits.iter().find(|&&b| !(12..64).contains(&b)) {
                return Err(format!(
                    "index.bits: bit {b} is not a VPN bit (expected 12..=63)"
                ));
            }
            let mut sorted = bits.clone();
            sorted.sort();
            sorted.dedup();
            if sorted.len() != bits.len() {
                return Err(format!("index.bits: bits repeat ({bits:?})"));
            }
            Ok(())
        }
        IndexFn::Xor { a, b } => {
            if need == usize::MAX {
                return Err(format!(
                    "index xor needs a power-of-two number of sets, found {sets} sets"
                ));
            }
            for (name, r) in [("a", a), ("b", b)] {
                if r.0 < 12 || r.1 < r.0 || r.1 >= 64 {
                    return Err(format!("index.{name}: expected a range lo..=hi of VPN bits (12 ≤ lo ≤ hi ≤ 63), found {r:?}"));
                }
                let w = (r.1 - r.0 + 1) as usize;
                if w != need {
                    return Err(format!(
                        "index.{name}: expected {need} bits for {sets} sets, found {w} ({r:?})"
                    ));
                }
            }
            Ok(())
        }
    }
}
