//! What a run is asked for (`Spec`: the level's path, sizes, set counts, the levels above) and
//! what it gives (`Curves`: per group of references, the points of every curve).

use super::*;

/// Which references reach the level.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Path {
    Data,
    Instr,
    Unified,
}

/// What to compute.
#[derive(Clone, Debug)]
pub struct Spec {
    pub path: Path,
    /// The fixed levels above the level (their geometry), and the order each path looks them
    /// up in (indices into `upper`; a unified upper level is on both).
    pub upper: Vec<UpperGeometry>,
    pub upper_data: Vec<usize>,
    pub upper_instr: Vec<usize>,
    /// The exact fully associative curve from 1 to this many entries (0: none).
    pub max_entries: usize,
    /// Set counts (powers of two) whose every associativity 1..=`max_ways` is computed.
    pub set_counts: Vec<usize>,
    pub max_ways: usize,
    /// A SHARDS sampled fully associative curve (up to `sample_entries`) at this rate.
    pub sample_rate: Option<f64>,
    pub sample_entries: usize,
    /// The page size of addresses outside every mapped region (the machine's
    /// `page_table.page_size`).
    pub page_size: PageSize,
    /// Flush the TLB at each change of address space (a level without ASID tags).
    pub flush_on_switch: bool,
    /// Also keep curves per page size and per address space when there are several.
    pub groups: bool,
}

impl Spec {
    /// A spec for a data level with no level above it.
    pub fn new(max_entries: usize, set_counts: &[usize]) -> Spec {
        Spec {
            path: Path::Data,
            upper: Vec::new(),
            upper_data: Vec::new(),
            upper_instr: Vec::new(),
            max_entries,
            set_counts: set_counts.to_vec(),
            max_ways: sets::WAYS,
            sample_rate: None,
            sample_entries: max_entries,
            page_size: PageSize::Size4K,
            flush_on_switch: false,
            groups: true,
        }
    }

    /// Checks every field; the message names it.
    pub fn validate(&self) -> Result<(), String> {
        for &s in &self.set_counts {
            if s == 0 || !s.is_power_of_two() || s > 1 << 20 {
                return Err(format!(
                    "sets: expected powers of two from 1 to 1048576, found {s}"
                ));
            }
        }
        if self.max_ways == 0 || self.max_ways > sets::WAYS {
            return Err(format!(
                "ways: expected 1..={}, found {}",
                sets::WAYS,
                self.max_ways
            ));
        }
        if self.max_entries > 1 << 24 || self.sample_entries > 1 << 24 {
            return Err(format!(
                "max_entries: expected at most 16777216, found {}",
                self.max_entries.max(self.sample_entries)
            ));
        }
        if let Some(r) = self.sample_rate {
            if !(r > 0.0 && r <= 1.0) {
                return Err(format!("sample: expected a rate in (0, 1], found {r}"));
            }
            if self.sample_entries == 0 {
                return Err("sample: needs a positive number of entries".into());
            }
        }
        for (i, g) in self.upper.iter().enumerate() {
            if g.sets == 0 || !g.sets.is_power_of_two() || g.ways == 0 {
                return Err(format!(
                    "upper level {i}: expected a power-of-two number of sets and at least one way, found {} sets of {} ways",
                    g.sets, g.ways
                ));
            }
        }
        for &i in self.upper_data.iter().chain(&self.upper_instr) {
            if i >= self.upper.len() {
                return Err(format!("upper level index {i} out of range"));
            }
        }
        if self.max_entries == 0 && self.set_counts.is_empty() && self.sample_rate.is_none() {
            return Err("nothing to compute: no entries, no set counts, no sampling".into());
        }
        Ok(())
    }
}

/// One point of a curve: a TLB of `sets × ways` entries missed `misses` times.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Point {
    pub sets: usize,
    pub ways: usize,
    pub misses: u64,
    /// False for the sampled curve's estimates.
    pub exact: bool,
}

/// The curves of one group of references ("all", a page size, an address space).
#[derive(Clone, Debug)]
pub struct GroupCurves {
    pub name: String,
    /// References that reached the level.
    pub references: u64,
    /// Compulsory misses (first references, and first since an invalidation or flush), when
    /// the exact fully associative curve is computed.
    pub cold: Option<u64>,
    pub points: Vec<Point>,
}

#[derive(Clone, Debug)]
pub struct Curves {
    pub groups: Vec<GroupCurves>,
    /// The sampling rate used (`T / P`), when sampled.
    pub sample_rate: Option<f64>,
    /// Records read.
    pub records: u64,
}

impl Curves {
    /// The group named `name`.
    pub fn group(&self, name: &str) -> Option<&GroupCurves> {
        self.groups.iter().find(|g| g.name == name)
    }
}

impl GroupCurves {
    /// Misses of the exact curve at `sets × ways`.
    pub fn misses(&self, sets: usize, ways: usize) -> Option<u64> {
        self.points
            .iter()
            .find(|p| p.exact && p.sets == sets && p.ways == ways)
            .map(|p| p.misses)
    }
}
