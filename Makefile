# vecswitch — thin wrappers; the README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo

.PHONY: setup build test demo bench fuzz clean

setup:
	@scripts/setup.sh

build: setup
	$(CARGO) build --release --bin vecswitch

test: setup
	$(CARGO) build --workspace --all-targets
	@# Every `unsafe` block carries a `// SAFETY:` comment (the other crates forbid unsafe outright).
	$(CARGO) clippy --workspace --all-targets -q -- -A clippy::all -D clippy::undocumented_unsafe_blocks
	$(CARGO) test --workspace --no-fail-fast

demo: build
	scripts/demo.sh

# docs/BENCHMARKS.md: the graph alone (criterion + callgrind), memif end to end, the generator.
bench: build
	scripts/bench-nodes.sh
	scripts/bench-memif-e2e.sh
	scripts/bench-gen.sh

fuzz:
	scripts/fuzz.sh

clean:
	$(CARGO) clean
