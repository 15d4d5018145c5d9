#!/usr/bin/env bash
# Runs the engine's unsafe fast paths under Miri (undefined-behaviour checks): the fast lane's
# data paths on small streams (crates/tlblab-core/tests/fast_paths_small.rs) and the fingerprint
# and SIMD search unit tests (tags.rs, simd.rs). Not part of `make test`: Miri needs a nightly
# toolchain with the miri and rust-src components (`rustup +nightly component add miri rust-src`)
# and takes minutes where the tests take milliseconds. 2026-11-24: all pass (about 3 minutes on
# the 2-core development VM).
set -euo pipefail
cd "$(dirname "$0")/.."
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}"
cargo +nightly miri test -p tlblab-core --test fast_paths_small
cargo +nightly miri test -p tlblab-core --lib -- tags:: simd::
