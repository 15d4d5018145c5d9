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

.PHONY: run test setup sysdeps venv ext runtime lint test-rust test-python test-c bench clean

run: setup
	$(VENV)/bin/tlblab study

test: setup lint test-rust test-c test-python

setup: sysdeps venv ext runtime

sysdeps:
	bash scripts/sysdeps.sh

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

# Builds the Rust extension (tlblab._native) and installs the package into the venv, editable.
ext: venv
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH \
	  $(VENV)/bin/maturin develop --release --quiet

runtime:
	@if [ -f runtime/CMakeLists.txt ]; then \
	  cmake -S runtime -B $(RUNTIME_BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null && \
	  cmake --build $(RUNTIME_BUILD) -j2 >/dev/null; \
	fi

# Formatting and clippy, warnings as errors (the toolchain is pinned, so its lints are too).
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --quiet -- -D warnings

test-rust:
	$(CARGO) test --workspace --exclude tlblab-python --release

test-c: runtime
	@if [ -f runtime/CMakeLists.txt ]; then \
	  ctest --test-dir $(RUNTIME_BUILD) --output-on-failure; \
	fi

test-python: ext
	$(VENV)/bin/pytest

bench: setup
	$(VENV)/bin/tlblab bench

clean:
	rm -rf target build $(VENV)
