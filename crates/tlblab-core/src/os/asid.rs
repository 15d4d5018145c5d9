//! ASID allocation with generation rollover, as ARM Linux does it (seed 000 §3.3).
//!
//! An address space holds (generation, ASID). When the space is scheduled and its generation is
//! stale, it gets the next free ASID of the current generation. When the ASIDs run out the
//! generation advances, every TLB is flushed of non-global entries, and the address spaces
//! running right now are re-assigned first (Linux keeps the "reserved" active ASIDs).

#[derive(serde::Serialize, serde::Deserialize, Clone, Debug)]
pub struct AsidAllocator {
    max: u16,
    next: u16,
    generation: u64,
    rollovers: u64,
}

/// What `assign` did.
#[derive(serde::Serialize, serde::Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Assignment {
    /// The space's ASID is still valid.
    Kept,
    /// A new ASID of the current generation.
    New(u16),
    /// The ASID space was exhausted: the generation advanced; every TLB must be flushed and the
    /// running spaces re-assigned. The space got this ASID of the new generation.
    Rollover(u16),
}

impl AsidAllocator {
    pub fn new(bits: u8) -> Self {
        AsidAllocator {
            max: ((1u32 << bits) - 1) as u16,
            next: 1,
            generation: 1,
            rollovers: 0,
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn rollovers(&self) -> u64 {
        self.rollovers
    }

    /// Ensures a space whose current assignment is `(gen, asid)` has a valid ASID.
    pub fn assign(&mut self, gen: u64) -> Assignment {
        if gen == self.generation {
            return Assignment::Kept;
        }
        if self.next > self.max {
            self.generation += 1;
            self.rollovers += 1;
            self.next = 1;
            let a = self.take();
            return Assignment::Rollover(a);
        }
        Assignment::New(self.take())
    }

    /// Takes the next ASID of the current generation (after a rollover, for running spaces).
    pub fn take(&mut self) -> u16 {
        let a = self.next;
        self.next += 1;
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_2_bit_asids_when_a_fourth_space_is_scheduled_then_the_generation_rolls_over() {
        let mut a = AsidAllocator::new(2);
        assert_eq!(a.assign(0), Assignment::New(1));
        assert_eq!(a.assign(0), Assignment::New(2));
        assert_eq!(a.assign(0), Assignment::New(3));
        assert_eq!(a.assign(1), Assignment::Kept);
        assert_eq!(a.assign(0), Assignment::Rollover(1));
        assert_eq!(a.generation(), 2);
        assert_eq!(a.assign(1), Assignment::New(2));
    }
}
