# The two commands of the README:
#   make run    set everything up, then run the main job on built-in defaults
#   make test   set everything up, then run every test (Rust, Python, C)
# Everything else here is a step of those two.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
CARGO ?= cargo
RUNTIME_BUILD := build/runtime

.PHONY: run test setup sysdeps venv ext runtime runtime-tools lint test-rust test-python test-c bench clean

# Each step says what it is doing before it starts, so the minutes of compiling are never silent.
step = @printf '\n==> %s\n' $(1)

run: sysdeps venv ext runtime-tools
	$(call step,"the main job: tlblab study (every built-in workload on every preset; CSV in out/study)")
	$(VENV)/bin/tlblab study

test: setup lint test-rust test-c test-python

setup: sysdeps venv ext runtime

sysdeps:
	bash scripts/sysdeps.sh

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	$(call step,"creating $(VENV) with the pinned Python dependencies")
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# Builds the Rust extension (tlblab._native) and installs the package into the venv, editable.
# A stamp file stands for the build: it is redone only when a Rust source, a manifest, a preset
# (compiled in) or the packaging changed since, so `make test` after `make run` starts testing
# at once. The Python sources are installed editable and need no rebuild.
EXT_STAMP := $(VENV)/.ext-built
EXT_SOURCES := $(shell find crates presets -type f \( -name '*.rs' -o -name '*.toml' \) -not -path '*/target/*' 2>/dev/null) \
               Cargo.toml Cargo.lock pyproject.toml rust-toolchain.toml
ext: $(EXT_STAMP)
$(EXT_STAMP): $(VENV)/.installed $(EXT_SOURCES)
	$(call step,"building the Rust extension with maturin (release; about 4 minutes on 2 cores from a fresh clone)")
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
	  $(VENV)/bin/maturin develop --release
	touch $@

runtime:
	@if [ -f runtime/CMakeLists.txt ]; then \
	  printf '\n==> building the C runtime (libtlblab) with CMake\n' && \
	  cmake -S runtime -B $(RUNTIME_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null && \
	  cmake --build $(RUNTIME_BUILD) -j2 | grep -E '^\[ *[0-9]+%\] (Built|Linking)' || test $${PIPESTATUS[0]} -eq 0; \
	fi

# What `make run` needs of the C runtime: the library and the programs tlblab runs (the host
# measurements' benchmarks, the Valgrind tool, seed 003's and 004's programs), not the test and
# sanitizer binaries ctest runs (`make test` builds those). A program a command finds missing
# is built then (tlblab.host._runtime), so the list need not be exact to be right.
RUNTIME_NOT_FOR_RUN := ^(all|clean|depend|edit_cache|install.*|list_install_components|rebuild_cache|test|test_.*|vgtool_roi_program)$$
runtime-tools:
	@if [ -f runtime/CMakeLists.txt ]; then \
	  printf '\n==> building the C runtime'"'"'s library and programs (libtlblab) with CMake\n' && \
	  cmake -S runtime -B $(RUNTIME_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null && \
	  targets=$$(cmake --build $(RUNTIME_BUILD) --target help | awk '/^\.\.\. /{print $$2}' | grep -v / | grep -vE '$(RUNTIME_NOT_FOR_RUN)') && \
	  cmake --build $(RUNTIME_BUILD) -j2 --target $$targets | grep -E '^\[ *[0-9]+%\] (Built|Linking)' || test $${PIPESTATUS[0]} -eq 0; \
	fi

# Formatting and clippy, warnings as errors (the toolchain is pinned, so its lints are too).
lint:
	$(call step,"lint: rustfmt then clippy on every target (warnings are errors)")
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# The library and integration tests, built once, in the profile `test-debug-asserts`: release
# code generation with the unsafe fast paths' `debug_assert!`s on (no LTO, no debug information,
# so its ~40 test binaries link fast). The release profile's code is the same but for those
# assertions, so one build serves both (the extension and `tlblab bench` are built in release).
# The examples are compiled (checked) by clippy above, so they are not linked again here.
# The property tests draw the same cases on every CI run (set PROPTEST_RNG_SEED to explore others).
test-rust: export PROPTEST_RNG_SEED ?= 20261125
test-rust:
	$(call step,"Rust tests: compiling the test binaries (profile test-debug-asserts: release code with debug assertions) then running them")
	$(CARGO) test --workspace --exclude tlblab-python --profile test-debug-asserts --lib --tests

test-c: runtime
	@if [ -f runtime/CMakeLists.txt ]; then \
	  printf '\n==> C runtime tests (ctest)\n' && \
	  ctest --test-dir $(RUNTIME_BUILD) --output-on-failure; \
	fi

test-python: ext
	$(call step,"Python tests (pytest)")
	$(VENV)/bin/pytest

bench: setup
	$(call step,"benchmarks: tlblab bench")
	$(VENV)/bin/tlblab bench

clean:
	rm -rf target build $(VENV)
