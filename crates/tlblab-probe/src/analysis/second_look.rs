//! What a `--quick` run's L2 DTLB readings leave unsettled, so that the run reads it once more
//! before it reports (`probe/sections/dtlb.rs::second_look`). Pure: the readings in, which of
//! the three measurements to repeat out.
//!
//! Why: the host tools take this host's machine file from one quick probe
//! (`python/tlblab/host/geometry.py`), and on the Zen 5 VM (256 sets × 16 ways) at load 3.8-5.8
//! (2026-11-29 18:40 UTC, the lab note `docs/lab/2026-11-29-issue90-quick-probe.md`) 4 of 8
//! quick runs wrote a wrong or no L2 DTLB, each from one disturbed measurement whose
//! repetition a full run has and a quick run had not: the conflict sweep's single trial at a
//! 256-page stride read 12 of 16 (its halving then "neither 1× nor ½×": unclear); the five
//! one-set curves' first misses [13, 14, 16, 15, 14] (two curves share no more than 15: 15 ways,
//! 3840 reported, while the stride-1 trials read 4078, more than 15 ways and the L1 hold); the
//! trials of both stride-1 measurements split between ≈ 4100 and ≈ 4600 (unclear), or voted
//! 4630, over the 4096 + 96 pages the level and the L1 can hold. A neighbour's entries only take
//! ways away, so each of these is a measurement taken in a busy phase; one more, seconds later,
//! is the cheapest way past it (≈ 0.4 s for five curves, ≈ 3 s for the conflict sweep, 1-1.5 s a
//! stride-1 trial), and the thresholds that decide stay as they are.

use super::knee::Confidence;

/// The one-set curves need a second set of five when they do not all read the same first
/// misses: the ways are the highest reading two curves share, and a curve a neighbour disturbed
/// reads low, so with a single curve at the ways (or none) a busy phase decides the reading.
pub fn one_set_unsettled(firsts: &[usize]) -> bool {
    firsts.len() >= 2 && firsts.iter().any(|&f| f != firsts[0])
}

/// The stride-1 trials need another measurement when their vote is unclear, or when it lies
/// above what the structure read by the conflict sets and the one-set curves can hold: `sets` ×
/// `ways` entries and, in front of them, the `l1` entries of a first level that need not be
/// inclusive (a random chain over every set keeps at most that many pages). A reading above it
/// took a later rise (the walks' cost climbing as page-table lines leave the caches) for the
/// overflow.
pub fn trials_unsettled(
    confidence: Confidence,
    reading: usize,
    structure: Option<(usize, usize)>,
    l1: usize,
) -> bool {
    confidence == Confidence::Unclear
        || structure.is_some_and(|(sets, ways)| reading > sets * ways + l1)
}

/// After the second look, an L2 entries line whose stride-1 vote is still unclear stands on the
/// structure when two measurements that a busy phase can only lower read it alike: the conflict
/// sets halving down to `geometry`'s sets (an exact count), and the one-set curves' ways read by
/// most curves of a set (`one_set_ways`, the same ways as `geometry`'s), with `reported` their
/// product. A neighbour holding entries takes ways away from both, never adds any, so their
/// agreement is the level's; the stride-1 trials, which a neighbour moves both ways (a lower
/// overflow, a later rise of the walks' cost), then only say they could not agree. On Zen 5 at
/// load 7-8 (2026-11-29 18:52-18:55 UTC) three runs read 256 × 16 so while their stride-1 trials
/// ranged 3107-4755, and the line said "unclear" (the machine file kept the base preset's 2048).
pub fn structure_stands(
    trials: Confidence,
    reported: usize,
    geometry: Option<(usize, usize)>,
    one_set_ways: Option<usize>,
) -> bool {
    trials == Confidence::Unclear
        && geometry.is_some_and(|(sets, ways)| {
            one_set_ways == Some(ways) && reported == sets * ways && sets >= 2
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_that_all_read_the_same_first_misses_are_settled_and_scattered_ones_are_not() {
        assert!(!one_set_unsettled(&[16, 16, 16, 16, 16]));
        assert!(one_set_unsettled(&[13, 14, 16, 15, 14]));
        assert!(one_set_unsettled(&[16, 16, 16, 16, 14]));
        // One curve is no vote: nothing to repeat for.
        assert!(!one_set_unsettled(&[15]));
        assert!(!one_set_unsettled(&[]));
    }

    #[test]
    fn trials_over_what_the_level_and_the_l1_hold_or_unclear_are_read_again() {
        use Confidence::*;
        // Zen 5's 256 × 16 behind 96: up to 4192 pages is the level (4100-4190 read quietly).
        assert!(!trials_unsettled(High, 4073, Some((256, 16)), 96));
        assert!(!trials_unsettled(Medium, 4192, Some((256, 16)), 96));
        assert!(trials_unsettled(Medium, 4193, Some((256, 16)), 96));
        // Batch 18:40 run 4: both measurements voted 4630 (5 of 7 trials at 4506-4757).
        assert!(trials_unsettled(Medium, 4630, Some((256, 16)), 96));
        // 15 ways read by disturbed curves: 4078 is more than 3840 + 96, so read again.
        assert!(trials_unsettled(Medium, 4078, Some((256, 15)), 96));
        // An unclear vote is read again whatever the structure; without one only the vote counts.
        assert!(trials_unsettled(Unclear, 4152, Some((256, 16)), 96));
        assert!(trials_unsettled(Unclear, 4152, None, 96));
        assert!(!trials_unsettled(High, 9000, None, 96));
        // Below the structure is the early loss `arbitrate` already weighs: not a reason.
        assert!(!trials_unsettled(Medium, 3850, Some((256, 16)), 96));
    }

    #[test]
    fn an_unclear_vote_gives_way_to_a_structure_two_methods_read_alike() {
        use Confidence::*;
        assert!(structure_stands(Unclear, 4096, Some((256, 16)), Some(16)));
        // The curves read other ways, or none: the conflict sets alone do not decide.
        assert!(!structure_stands(Unclear, 4096, Some((256, 16)), Some(15)));
        assert!(!structure_stands(Unclear, 4096, Some((256, 16)), None));
        assert!(!structure_stands(Unclear, 4096, None, Some(16)));
        // The line reports something else than the structure (the trials' reading): not this.
        assert!(!structure_stands(Unclear, 4111, Some((256, 16)), Some(16)));
        // A vote that is not unclear keeps its own line.
        assert!(!structure_stands(Medium, 4096, Some((256, 16)), Some(16)));
    }
}
