//! The timing part of a machine description (`[timing]`): the timing model, the memory-level
//! parallelism of the out-of-order cores (`timing.mlp`), the DRAM channels every hardware thread
//! shares (`timing.dram`) and the write buffer; each validated with messages that name the field.
//! Split from `machine/mod.rs` along the file's own seam (issue 84: no file over 800 lines).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimingModel {
    /// Every latency adds up, in order (the seeds' in-order cores).
    #[default]
    InOrder,
    /// A first-level TLB hit overlaps with the L1 cache access (virtually indexed, physically
    /// tagged L1s look up both at once); walks and misses still serialize. Documented in
    /// ARCHITECTURE.md "Timing".
    Overlap,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TimingConfig {
    #[serde(default)]
    pub model: TimingModel,
    /// A write buffer between each core's first data cache and memory (`[timing.write_buffer]`),
    /// with the memory bus it drains over; absent on machines whose stores allocate in the cache
    /// and whose memory is a latency only. Costs nothing when absent (ARCHITECTURE.md "Timing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_buffer: Option<WriteBufferConfig>,
    /// Memory-level parallelism of an out-of-order core (`[timing.mlp]`): references a trace
    /// marks independent (`Event::Independent`) overlap their long misses. Absent: every
    /// latency stalls the core, as it always did (ARCHITECTURE.md "Timing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlp: Option<MlpConfig>,
    /// The DRAM channels every agent's line transfers share (`[timing.dram]`): a line from
    /// memory that finds them busy waits. Absent: memory is a latency only, however many
    /// misses are in flight (ARCHITECTURE.md "Timing").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram: Option<DramConfig>,
}

/// Memory-level parallelism for independent references, first-order interval analysis
/// (Karkhanis & Smith, "A first-order superscalar processor model", ISCA 2004; Eyerman et al.,
/// "A mechanistic performance model for superscalar out-of-order processors", ACM TOCS 2009):
/// an out-of-order core hides a long miss behind the independent work after it, up to the
/// limits of its buffers; a load whose address comes from a miss in flight waits for it.
///
/// A reference is *long* when it took memory (DRAM) for its data or for any page-table entry
/// of its walk. Per hardware thread, a reference of a thread marked independent
/// (`Event::Independent`) that is long does not stall the core for its latency: it occupies
/// one of `miss_slots` slots until its completion (its start plus its in-order latency), and
/// one of `walkers` until its walk ends if it missed every TLB level. The core stalls only
/// - when no slot (or, for a reference that walks, no walker) is free: until the earliest
///   of them is free again;
/// - when `window` references have issued since the oldest outstanding one (the reorder
///   window fills behind it): until that one completes;
/// - at a reference of a thread not marked independent, and at `Independent` with `begin`
///   false: until every outstanding miss completes.
///
/// Independent references that are not long are charged their latency in order, as before.
/// Not modelled: a bandwidth limit of the memory (each miss takes its full latency however
/// many are in flight; `timing.dram` adds one). The work between references is modelled only
/// when `issue_instructions` is set (default 0: a long miss overlaps only the references after
/// it, none of the instructions). A machine with it runs every reference on the general path
/// (no lane).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlpConfig {
    /// Long misses in flight at once (the first data cache's miss buffers).
    pub miss_slots: u32,
    /// Of those, references that walk the page table at once (the page-table walkers).
    pub walkers: u32,
    /// References that may issue from the oldest outstanding long miss on (itself included).
    pub window: u32,
    /// The program's non-memory instructions before each of its references (a mean, measured
    /// from the program: seed 001's runs, docs/technique-pt_baker.md): the core issues them,
    /// `issue_width` a cycle, before the reference issues, while the long misses in flight go
    /// on. Charged to the records' references only, not to a technique's companions (their
    /// loops charge their own work, `System::charge_busy`); the fraction of a cycle carries to
    /// the next reference of the hardware thread, so `n` references take exactly
    /// `floor(n * issue_instructions / issue_width)` cycles of it. 0 (the default): references
    /// issue back to back, as before; nonzero turns the lanes off from the start (every
    /// reference is charged on the general path).
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub issue_instructions: u32,
    /// Instructions the core issues a cycle (used only with `issue_instructions` or
    /// `steady_state`; default 1).
    #[serde(default = "one_u32", skip_serializing_if = "is_one_u32")]
    pub issue_width: u32,
    /// The first-order model's steady state (Karkhanis & Smith 2004: the core issues
    /// `issue_width` instructions a cycle while no miss event stalls it; an L1 hit is no miss
    /// event): a marked reference that hits its first-level TLB and its first-level cache costs
    /// the core no latency of its own; an instruction fetch among them costs 1/`issue_width` of
    /// a cycle (the fraction carried, as `issue_instructions`'), a data reference nothing more
    /// (its instruction's fetch paid its issue). Its value is still ready only after its
    /// latency, for a reference that depends on it (`Event::Depends`). For traces whose
    /// instruction fetches are the program's instructions (captures); not with
    /// `issue_instructions`. Default false: every reference that is not long costs its latency.
    #[serde(default, skip_serializing_if = "is_false")]
    pub steady_state: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

fn one_u32() -> u32 {
    1
}

fn is_one_u32(n: &u32) -> bool {
    *n == 1
}

/// The most miss slots `MlpConfig` takes (each hardware thread keeps them in a fixed array).
pub const MLP_MAX_SLOTS: u32 = 64;

/// `field`'s `value` checked against 1..=`max` (`u32::MAX`: at least 1), with the error that
/// names the field.
fn one_to(field: &str, value: u32, max: u32) -> Result<(), String> {
    match value {
        0 if max == u32::MAX => Err(format!("{field}: expected at least 1, found 0")),
        v if v == 0 || v > max => Err(format!("{field}: expected 1..={max}, found {v}")),
        _ => Ok(()),
    }
}

impl MlpConfig {
    pub fn validate(&self) -> Result<(), String> {
        one_to("timing.mlp.miss_slots", self.miss_slots, MLP_MAX_SLOTS)?;
        if self.walkers == 0 || self.walkers > self.miss_slots {
            return Err(format!(
                "timing.mlp.walkers: expected 1..=miss_slots ({}), found {}",
                self.miss_slots, self.walkers
            ));
        }
        one_to("timing.mlp.window", self.window, u32::MAX)?;
        if self.steady_state && self.issue_instructions != 0 {
            return Err(format!(
                "timing.mlp.steady_state: the fetches are the instructions it issues; expected issue_instructions 0, found {}",
                self.issue_instructions
            ));
        }
        one_to("timing.mlp.issue_width", self.issue_width, 64)
    }
}

/// The DRAM channels behind the last cache level, shared by every hardware thread of the
/// machine (the application's, a technique's helper, stressors): a bandwidth limit with
/// queueing, deterministic, in the style of a first-order queueing model (one server per
/// channel, first come first served).
///
/// Every line memory serves (a data line, a page-table entry's line of a hardware walk or of a
/// technique's software walk) occupies one channel for `line_bytes / bus_bytes` transfers at
/// `mega_transfers` MT/s: `line_cycles()` core cycles. It takes the channel where it can begin
/// first (the controller's address interleaving is not modelled: the channels are a pool), at
/// its arrival if that channel is free then, else at the first gap after it that holds a line;
/// the wait is added to the reference's latency (and, under `timing.mlp`, to its time in
/// flight). The lines of one reference depend on each other (a walk's entries, then its data):
/// the first arrives when the reference issues, each next one when the one before is answered
/// (`memory.latency` after it began); they are placed when the reference is simulated, so a
/// channel holds reservations ahead of the time, and a later reference's line may take the gap
/// before them.
///
/// With `writebacks` (the default) dirty lines leave the caches over the same channels: a
/// store dirties the first level of its path only; a level that evicts a dirty line marks the
/// line dirty in the first level below it on the path that holds it (no fill, no replacement
/// change) or, if none does, writes it to memory: one line, arriving when the line whose fill
/// evicted it is answered (the reference's start if no line came from memory before it),
/// placed after the reference's reads in the first gap that holds it. No reference waits for
/// a write (the controller buffers them) but every later read finds the channel taken. A
/// shared level's eviction is the evicting reference's, whoever dirtied the line; a flush's
/// dirty lines go to memory at the flushing thread's clock.
///
/// With row activations (`ranks`, `banks`, `row_bytes`, `t_rrd_ps`, `t_faw_ps`, all or none) a
/// line's physical address picks its channel, rank, bank and row (rows of `row_bytes` go to
/// channel 0, 1, ..., then to the next rank, then to the next bank: an assumed mapping, not a
/// controller's); each bank keeps the row it last opened; a line to another row first takes
/// an activation at the earliest time at or after its arrival that its rank allows (no two of
/// its activations closer than tRRD, at most four in any tFAW), which opens the row, and its
/// transfer then takes the first gap on its channel from that time. The activation's own
/// latency (tRP, tRCD) stays inside `memory.latency`: what is modelled is the rate a rank
/// takes activations at, which bounds random lines. Not modelled: tRRD_L's bank groups (one
/// tRRD for the rank), a bank's tRC, read/write turnarounds, refresh; a miss that finds its
/// channel free (and, with activations, its rank ready) costs `memory.latency` as before. A channel forgets what ended more than
/// `DRAM_HORIZON` (2^16) cycles before an arrival (arrivals meet the channels in simulation
/// order, time order to within one reference per hardware thread). A machine with it runs
/// every reference on the general path (no lane, no first-level memo).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DramConfig {
    /// Independent channels.
    pub channels: u32,
    /// Transfers per second of one channel, in millions (DDR4-4000: 4000).
    pub mega_transfers: u32,
    /// Bytes per transfer of one channel (a DDR4 channel is 64 bits wide: 8).
    #[serde(default = "eight")]
    pub bus_bytes: u32,
    /// Bytes of the line a miss transfers.
    #[serde(default = "sixty_four")]
    pub line_bytes: u32,
    /// Whether dirty lines leaving the caches are written to memory over the channels
    /// (default true; false: reads only, the model before 2026-11-28).
    #[serde(default = "yes")]
    pub writebacks: bool,
    /// Row activations (all of the next five, or none: without them every line is served at
    /// the channels' peak, as before). Ranks on one channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u32>,
    /// Banks in one rank (DDR4 x8: 4 bank groups of 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banks: Option<u32>,
    /// Bytes of one rank's row (a DDR4 x8 chip's 1 KiB page times the 8 chips of a 64-bit rank).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_bytes: Option<u64>,
    /// The least time between two activations of one rank, in picoseconds (tRRD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_rrd_ps: Option<u32>,
    /// The window in which one rank takes at most four activations, in picoseconds (tFAW).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_faw_ps: Option<u32>,
}

/// `DramConfig`'s row activations, checked and in the channels' fixed-point cycles.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct DramRows {
    pub ranks: u32,
    pub banks: u32,
    /// Lines in one row.
    pub row_lines: u64,
    /// tRRD and tFAW in 1/2^DRAM_FRACTION_BITS core cycles.
    pub rrd: u64,
    pub faw: u64,
}

fn yes() -> bool {
    true
}

fn eight() -> u32 {
    8
}

fn sixty_four() -> u32 {
    64
}

/// Cycles before a line's arrival beyond which a channel forgets the lines it was given
/// (`DramConfig`): arrivals meet the channels in simulation order, which is time order to
/// within about one reference per hardware thread; a line arriving further back than this
/// behind one already placed finds the channel free (an approximation, bounded memory).
pub const DRAM_HORIZON: u64 = 1 << 16;

/// The most channels `DramConfig` takes.
pub const DRAM_MAX_CHANNELS: u32 = 16;

/// `DramConfig::line_cycles_fixed`'s fraction bits: the channels keep time in 1/256 cycles,
/// so that a line's 7.4 cycles (DDR4-4000 at 3.7 GHz) do not round to 7.
pub const DRAM_FRACTION_BITS: u32 = 8;

impl DramConfig {
    /// `channels` channels of `mega_transfers` MT/s with the defaults of every other field
    /// (a DDR4 channel's 8-byte bus, 64-byte lines, writebacks on).
    pub fn new(channels: u32, mega_transfers: u32) -> DramConfig {
        DramConfig {
            channels,
            mega_transfers,
            bus_bytes: eight(),
            line_bytes: sixty_four(),
            writebacks: yes(),
            ranks: None,
            banks: None,
            row_bytes: None,
            t_rrd_ps: None,
            t_faw_ps: None,
        }
    }

    /// The row activations at `frequency_mhz` (None: not modelled). `validate` first.
    pub fn rows(&self, frequency_mhz: f64) -> Option<DramRows> {
        let fixed = |ps: u32| {
            let cycles = ps as f64 * frequency_mhz / 1e6;
            ((cycles * (1u64 << DRAM_FRACTION_BITS) as f64).round() as u64).max(1)
        };
        Some(DramRows {
            ranks: self.ranks?,
            banks: self.banks?,
            row_lines: self.row_bytes? / self.line_bytes as u64,
            rrd: fixed(self.t_rrd_ps?),
            faw: fixed(self.t_faw_ps?),
        })
    }

    pub fn validate(&self) -> Result<(), String> {
        one_to("timing.dram.channels", self.channels, DRAM_MAX_CHANNELS)?;
        one_to("timing.dram.mega_transfers", self.mega_transfers, u32::MAX)?;
        one_to("timing.dram.bus_bytes", self.bus_bytes, u32::MAX)?;
        one_to("timing.dram.line_bytes", self.line_bytes, u32::MAX)?;
        let given = [
            ("ranks", self.ranks.is_some()),
            ("banks", self.banks.is_some()),
            ("row_bytes", self.row_bytes.is_some()),
            ("t_rrd_ps", self.t_rrd_ps.is_some()),
            ("t_faw_ps", self.t_faw_ps.is_some()),
        ];
        if given.iter().any(|g| g.1) {
            if let Some((name, _)) = given.iter().find(|g| !g.1) {
                return Err(format!(
                    "timing.dram.{name}: row activations need ranks, banks, row_bytes, t_rrd_ps and t_faw_ps together; {name} is missing"
                ));
            }
        }
        let (Some(ranks), Some(banks), Some(row), Some(rrd), Some(faw)) = (
            self.ranks,
            self.banks,
            self.row_bytes,
            self.t_rrd_ps,
            self.t_faw_ps,
        ) else {
            return Ok(());
        };
        one_to("timing.dram.ranks", ranks, 64)?;
        one_to("timing.dram.banks", banks, 64)?;
        one_to("timing.dram.t_rrd_ps", rrd, u32::MAX)?;
        if row == 0 || !row.is_multiple_of(self.line_bytes as u64) {
            return Err(format!(
                "timing.dram.row_bytes: expected a positive multiple of line_bytes ({}), found {row}",
                self.line_bytes
            ));
        }
        if faw < rrd {
            return Err(format!(
                "timing.dram.t_faw_ps: four activations cannot fit in less than one tRRD: t_faw_ps {faw} < t_rrd_ps {rrd}"
            ));
        }
        Ok(())
    }

    /// Core cycles one line occupies a channel at `frequency_mhz`: its transfers over the
    /// transfer rate.
    pub fn line_cycles(&self, frequency_mhz: f64) -> f64 {
        let transfers = (self.line_bytes as f64 / self.bus_bytes as f64).ceil();
        transfers * frequency_mhz / self.mega_transfers as f64
    }

    /// `line_cycles` in fixed point (`DRAM_FRACTION_BITS`), at least 1.
    pub fn line_cycles_fixed(&self, frequency_mhz: f64) -> u64 {
        let f = self.line_cycles(frequency_mhz) * (1u64 << DRAM_FRACTION_BITS) as f64;
        (f.round() as u64).max(1)
    }

    /// The peak bandwidth of all channels, bytes per second.
    pub fn peak_bytes_per_second(&self) -> f64 {
        self.channels as f64 * self.bus_bytes as f64 * self.mega_transfers as f64 * 1e6
    }
}

/// A write buffer and the memory bus behind it, as the StrongARM SA-1100 has them (SA-1100
/// Developer's Manual §6.2-6.3):
/// - a store that hits the first data cache completes there; one that misses does not allocate
///   a line (the cache is read-allocate) and goes into the buffer, and the core goes on;
/// - the buffer holds `entries` stores (the SA-1100: "up to 8 blocks of data of 1 to 16 bytes,
///   at independent addresses"; stores do not merge, except a store multiple's words, so a
///   store of the trace, one instruction's, takes one entry); a store that finds it full waits
///   for its oldest entry to drain;
/// - the entries drain in order over one memory bus, `drain_cycles` each;
/// - a read served by memory (a line fill, an instruction fetch's line) uses the same bus
///   after the writes queued before it (reads do not overtake buffered writes, so a load sees
///   its own earlier stores), `memory.latency` cycles from when the bus is free.
///
/// The buffer's clock is the hardware thread's at the start of the reference.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBufferConfig {
    /// Stores the buffer holds.
    pub entries: u32,
    /// Bus cycles to write one entry to memory.
    pub drain_cycles: u64,
}

impl WriteBufferConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.entries == 0 || self.entries > 64 {
            return Err(format!(
                "timing.write_buffer.entries: expected 1..=64, found {}",
                self.entries
            ));
        }
        if self.drain_cycles == 0 {
            return Err("timing.write_buffer.drain_cycles: expected at least 1, found 0".into());
        }
        Ok(())
    }
}
