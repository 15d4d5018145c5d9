#!/usr/bin/env bash
# Runs the engine's unsafe fast paths under Miri (undefined-behaviour checks): the fast lane's
# data paths on small streams (crates/tlblab-core/tests/fast_paths_small.rs) and the fingerprint
# and SIMD search unit tests (tags.rs, simd.rs). Not part of `make test`: Miri needs a nightly
# toolchain with the miri and rust-src components (`rustup +nightly component add miri rust-src`)
# and takes minutes where the tests take milliseconds. 2026-11-24: all pass (7.5 minutes on
# the 2-core development VM). `searches_agree_with_a_plain_scan` (25,600 searches of sets of 1 to
# 64 ways) is skipped: under Miri it had not ended after 20 minutes; the data-path runs search
# 16-way rows and a 64-way level through the same functions.
set -euo pipefail
cd "$(dirname "$0")/.."
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
cargo +nightly miri test -p tlblab-core --test fast_paths_small
cargo +nightly miri test -p tlblab-core --lib -- tags:: simd:: --skip searches_agree_with_a_plain_scan
