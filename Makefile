# rmq: one Makefile for developers, the README and CI (.ci/run calls `make test`).
#
#   make run [ARGS="-c broker.conf"]   build (release) and start a broker (examples/broker-dev.conf)
#   make run-slave [ARGS=...]          a slave of `make run`'s broker (examples/broker-slave.conf)
#   make test                          build, all lints, Rust tests, Python tests
#   make chaos [CHAOS_ARGS=...]          the fault campaign (not part of `make test`): report in
#                                      target/chaos/, figures quoted in RELIABILITY.md
#   make build | lint | fmt | bench | clean | distclean
#   make bench-vs-apache [VS_APACHE_ARGS=--quick]   rmq vs Apache RocketMQ 4.9.7 (benches/vs_apache)
#   make bench-outliers                where sync sends' latency outliers come from (perf sched)
#   make fuzz [FUZZ_SECONDS=60]        cargo fuzz on the decoders (nightly; not part of `test`)
#
# Works from a fresh clone: the first target that needs Python tools creates .venv and installs
# requirements-dev.txt into it; cargo installs the toolchain pinned in rust-toolchain.toml.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

PYTHON3 ?= python3
VENV := .venv
VENV_ABS := $(abspath $(VENV))
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.rmq-dev-installed
ARGS ?=
BENCH_ARGS ?=
FUZZ_SECONDS ?= 60

# Build once: maturin develop, clippy and cargo test share target/ and the release profile, and
# see the same environment, so no step invalidates another's build. maturin runs cargo with
# PYO3_PYTHON, PYO3_ENVIRONMENT_SIGNATURE and PYO3_BUILD_EXTENSION_MODULE set; pyo3's build
# script re-runs (and pyo3, rmq-py and the extension rebuild) whenever one of them differs from
# the last build, so every cargo step started here gets the same three values. (pyproject.toml
# therefore sets no `pyo3/extension-module` feature, and no RUSTFLAGS are set anywhere.)
export PYO3_PYTHON := $(VENV_ABS)/bin/python
export PYO3_BUILD_EXTENSION_MODULE := 1
export PYO3_ENVIRONMENT_SIGNATURE := $(shell $(PYTHON3) -c 'import platform, sys; print("%s-%d.%d-%dbit" % (platform.python_implementation().lower(), *sys.version_info[:2], 64 if sys.maxsize > 2**32 else 32))')

# What the extension is built from: `make run` rebuilds (maturin develop) only when one changed.
RUST_SOURCES := Cargo.toml Cargo.lock rust-toolchain.toml pyproject.toml \
	$(shell find crates -name '*.rs' -o -name Cargo.toml -o -name build.rs)
EXTENSION := python/rmq/_rmq.abi3.so
WHEEL_TOOLS_STAMP := $(VENV)/.rmq-wheel-tools-installed
WHEEL_STAMP := dist/.rmq-wheel-built

section = @printf '\n==== %s ====\n' "$(1)"

.PHONY: help venv build wheel run run-slave lint lint-rust lint-python stubtest test test-rust test-python java-tools \
	go-tools node-tools browser-tools bench bench-vs-apache bench-outliers chaos chaos-tools fuzz \
	fmt clean distclean

help:
	@echo "make run [ARGS='-c broker.conf']  build in release mode and start a broker"
	@echo "make run-slave                    a slave of make run's broker (in a second terminal)"
	@echo "make test                         build, lint, cargo test, pytest (what CI runs)"
	@echo "make build                        maturin develop --release into .venv"
	@echo "make wheel                        a stripped manylinux2014 abi3 wheel into dist/"
	@echo "make chaos [CHAOS_ARGS='--kill9-cycles 5']  fault campaign, report in target/chaos"
	@echo "make fuzz [FUZZ_SECONDS=60]       cargo fuzz each decoder target (installs nightly + cargo-fuzz)"
	@echo "make bench-vs-apache [VS_APACHE_ARGS=--quick]  rmq vs Apache RocketMQ 4.9.7, benches/vs_apache/REPORT.md"
	@echo "make bench-outliers               latency outliers vs scheduling delays, benches/vs_apache/OUTLIERS.md"
	@echo "make lint | stubtest | fmt | bench | clean | distclean"

# ---- Python virtualenv ------------------------------------------------------------------------

$(PY):
	$(PYTHON3) -m venv $(VENV)

$(VENV_STAMP): requirements-dev.txt | $(PY)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV_STAMP)

# ---- build and run ----------------------------------------------------------------------------

# maturin develop builds crates/rmq-py in release mode and installs rmq into .venv as an editable
# package: the extension lands in python/rmq/ and a .pth file points .venv at python/, so
# `.venv/bin/python -m rmq.broker` works from any directory.
# `make build` always runs maturin develop (a no-op cargo check when nothing changed, ~3 s);
# `make run` and `make run-slave` only when the extension is older than a Rust source, Cargo.lock,
# pyproject.toml or the venv, so a broker starts in about a second after `make test`.
define maturin-develop
	$(call section,build: maturin develop --release)
	VIRTUAL_ENV=$(VENV_ABS) $(VENV)/bin/maturin develop --release
	touch $(EXTENSION)
endef

build: $(VENV_STAMP)
	$(maturin-develop)

$(EXTENSION): $(VENV_STAMP) $(RUST_SOURCES)
	$(maturin-develop)

# The dev config (examples/broker-dev.conf: small store files in ~/store-dev) comes first, so a
# `-c FILE` in ARGS replaces it (argparse keeps the last -c); RUN_CONF= starts without one.
RUN_CONF ?= examples/broker-dev.conf

run: $(EXTENSION)
	$(PY) -m rmq.broker $(if $(RUN_CONF),-c $(RUN_CONF)) $(ARGS)

# A second broker, the slave of `make run`'s (same brokerName, brokerId 1, listenPort 10921,
# store ~/store-dev-slave, examples/broker-dev.conf's file sizes, `make run`'s embedded
# nameserver): run it in another terminal.
run-slave: $(EXTENSION)
	$(PY) -m rmq.broker -c examples/broker-slave.conf $(ARGS)

# ---- wheel ------------------------------------------------------------------------------------

$(WHEEL_TOOLS_STAMP): requirements-wheel.txt $(VENV_STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements-wheel.txt
	touch $@

# The wheel users install: release, stripped, abi3 (CPython >= 3.10), linked by zig against
# glibc 2.17 so it is tagged manylinux_2_17 (manylinux2014) and installs on any glibc >= 2.17.
# It builds in target/wheel: zig as C compiler and linker would otherwise invalidate the shared
# target/release build of `make build`/`make test`. Rebuilt only when a source changed. maturin
# finds zig as `python3 -m ziglang`, hence .venv/bin first on PATH.
wheel: $(WHEEL_STAMP)

$(WHEEL_STAMP): $(WHEEL_TOOLS_STAMP) $(RUST_SOURCES) $(shell find python -type f ! -name '*.so' ! -path '*/__pycache__/*') README.md
	$(call section,wheel: maturin build --release --strip --zig --compatibility manylinux2014)
	rm -f dist/rmq-*.whl
	PATH=$(VENV_ABS)/bin:$$PATH CARGO_TARGET_DIR=$(CURDIR)/target/wheel $(VENV)/bin/maturin build --release --strip \
		--zig --compatibility manylinux2014 --interpreter $(PY) --out dist
	touch $@
	@ls -l dist/rmq-*.whl

# ---- lint -------------------------------------------------------------------------------------

lint: lint-rust lint-python

lint-rust: $(VENV_STAMP)
	$(call section,lint: cargo fmt --check)
	cargo fmt --all --check
	$(call section,lint: cargo clippy)
	cargo clippy --workspace --all-targets --release -- -D warnings

lint-python: $(VENV_STAMP)
	$(call section,lint: ruff check)
	$(VENV)/bin/ruff check python tests chaos
	$(call section,lint: ruff format --check)
	$(VENV)/bin/ruff format --check python tests chaos
	$(call section,lint: mypy --strict)
	$(VENV)/bin/mypy

# Checks python/rmq/_rmq.pyi against the built module (needs `make build`; `test` runs it).
stubtest: $(VENV_STAMP)
	$(call section,lint: stubtest rmq._rmq)
	$(PY) -m mypy.stubtest rmq._rmq

fmt: $(VENV_STAMP)
	cargo fmt --all
	$(VENV)/bin/ruff format python tests chaos
	$(VENV)/bin/ruff check --fix python tests chaos

# ---- test -------------------------------------------------------------------------------------

# Steps run in this order even under `make -j`: build, lints, Rust tests, Python tests.
test: build
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory stubtest
	@$(MAKE) --no-print-directory test-rust
	@$(MAKE) --no-print-directory test-python
	$(call section,test: all steps passed)

test-rust: $(VENV_STAMP)
	$(call section,test: cargo test)
	cargo test --workspace --release

# Needs `make build` first (the CLI tests start real broker processes). tests/test_first_wheel.py
# installs dist/'s wheel into a fresh venv: `wheel` builds it here, once (and only if a source
# changed since), never inside the test.
test-python: $(VENV_STAMP) wheel java-tools go-tools node-tools browser-tools
	$(call section,test: pytest)
	$(PY) -m pytest tests -q

# The compatibility tests build small programs against the official RocketMQ Java clients (4.9.x
# in tests/compat/java, 5.x in tests/compat/java5) with Maven; install a JDK and Maven from
# Debian when the machine has none.
java-tools:
	@command -v java >/dev/null && command -v mvn >/dev/null || { \
		echo "installing openjdk-17-jdk-headless and maven (needed by tests/test_compat_java*.py and tests/test_timer.py)"; \
		apt-get update -q && apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless maven; }

# tests/test_compat_go.py builds a program against Apache's Go client (tests/compat/go, modules
# from the Go module proxy); it finds `go` on PATH or in /usr/local/go/bin.
go-tools:
	@command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || { \
		echo "error: Go 1.21+ is needed by tests/test_compat_go.py and was found neither on PATH"; \
		echo "nor in /usr/local/go/bin: install it from https://go.dev/dl/ (tar -C /usr/local -xzf ...)"; \
		exit 1; }

# tests/test_compat_node.py runs Alibaba's ali-ons client (tests/compat/node, `npm ci`).
node-tools:
	@command -v node >/dev/null && command -v npm >/dev/null || { \
		echo "error: Node.js 18+ and npm are needed by tests/test_compat_node.py: install them, e.g."; \
		echo "apt-get install -y nodejs npm, or from https://nodejs.org/"; \
		exit 1; }

# tests/test_ops_console_browser.py drives the web console in Debian's headless chromium through
# its chromedriver (Selenium from requirements-dev.txt); no browser is downloaded by a test tool.
browser-tools:
	@[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] || { \
		echo "installing chromium and chromium-driver (needed by tests/test_ops_console_browser.py)"; \
		apt-get update -q && apt-get install -y -q --no-install-recommends chromium chromium-driver; }

# ---- bench ------------------------------------------------------------------------------------

bench: build
	$(call section,bench: cargo bench)
	cargo bench -p rmq-benches
	$(call section,bench: python -m rmq.bench)
	@if [ -f python/rmq/bench/__main__.py ] || [ -f python/rmq/bench.py ]; then \
		$(PY) -m rmq.bench $(BENCH_ARGS); \
	else \
		echo "python -m rmq.bench is not part of this build yet; skipped"; \
	fi

# benches/vs_apache: rmq and Apache RocketMQ 4.9.7 (from Maven Central) under the same loads, one
# at a time, interleaved; a Java load generator (benches/vs_apache/java, official 4.9.8 client)
# and rmq.bench. ~12 min on 2 cores; VS_APACHE_ARGS=--quick is a ~1.5 min smoke run. Report in
# benches/vs_apache/REPORT.md (--out FILE). Not part of `make test`.
VS_APACHE_ARGS ?=
VS_APACHE_JAR := benches/vs_apache/java/target/rmq-vs-apache.jar

$(VS_APACHE_JAR): benches/vs_apache/java/pom.xml $(shell find benches/vs_apache/java/src -name '*.java')
	$(call section,bench-vs-apache: mvn package (load generator))
	cd benches/vs_apache/java && mvn -q -B -Dstyle.color=never package

bench-vs-apache: build java-tools $(VS_APACHE_JAR)
	$(call section,bench-vs-apache: benches/vs_apache/run.py $(VS_APACHE_ARGS))
	$(PY) benches/vs_apache/run.py $(VS_APACHE_ARGS)

bench-outliers: build java-tools $(VS_APACHE_JAR)
	$(call section,bench-outliers: benches/vs_apache/outliers.py $(OUTLIERS_ARGS))
	@command -v perf >/dev/null || { echo "installing perf (apt-get)"; \
		apt-get update -q && apt-get install -y -q --no-install-recommends linux-perf; }
	$(PY) benches/vs_apache/outliers.py $(OUTLIERS_ARGS)

# ---- chaos: the long fault campaign -----------------------------------------------------------

CHAOS_ARGS ?=

# chaos/ (python -m chaos): kill -9 and power-loss cycles of a real broker under load with
# acked-key accounting, memory per idle connection and per stalled frame; ~7 min on 2 cores, then make fuzz (~6 min).
# Its power-loss layer is a FUSE file system (chaos/powerloss_fs.py, mfusepy from
# requirements-dev.txt) on libfuse 3; it mounts as root through /dev/fuse.
chaos: build chaos-tools
	$(call section,chaos: python -m chaos $(CHAOS_ARGS))
	PYTHONPATH=$(CURDIR) $(PY) -m chaos --out target/chaos $(CHAOS_ARGS)
	$(call section,chaos: fuzzing)
	@# Fuzzing: `make fuzz` (cargo fuzz on the frame codec and the record decoder) runs here once
	@# the Makefile has it; its output goes to target/chaos/fuzz.log and its figures to the
	@# "Fuzzing" section of RELIABILITY.md.
	@if grep -q '^fuzz:' Makefile; then \
		$(MAKE) --no-print-directory fuzz 2>&1 | tee target/chaos/fuzz.log; \
	else \
		echo "make fuzz is not part of this build yet; skipped"; \
	fi
	$(call section,chaos: done: target/chaos/report.md)

chaos-tools:
	@[ -e /dev/fuse ] || { echo "error: make chaos needs /dev/fuse (the FUSE kernel module)"; exit 1; }
	@[ -n "$$(ldconfig -p | grep 'libfuse3\.so\.3')" ] || { \
		echo "installing libfuse3-3 and fuse3 (the power-loss layer of make chaos)"; \
		apt-get update -q && apt-get install -y -q --no-install-recommends libfuse3-3 fuse3; }

# ---- fuzz -------------------------------------------------------------------------------------

# The frame codec, header, record, message-body and JSON-body decoders under libFuzzer
# (fuzz/README.md). Needs nightly, which fuzz/run.sh installs with cargo-fuzz; fuzz/ is a
# workspace of its own, so nothing else here needs nightly. Not part of `test`.
fuzz:
	$(call section,fuzz: cargo fuzz $(FUZZ_SECONDS) s per target)
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh

# ---- clean ------------------------------------------------------------------------------------

clean:
	cargo clean
	rm -rf dist .pytest_cache .mypy_cache .ruff_cache
	find python -name '*.so' -delete
	find python tests -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
