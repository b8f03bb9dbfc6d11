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
	@# Style is enforced by tools: one rustfmt.toml, and clippy's default lints as errors (the workspace
	@# lints add `undocumented_unsafe_blocks = "deny"`: every `unsafe` block carries a `// SAFETY:` comment).
	$(CARGO) fmt --all --check
	$(CARGO) build --workspace --all-targets
	$(CARGO) clippy --workspace --all-targets -q -- -D warnings
	$(CARGO) test --workspace --no-fail-fast

demo: build
	scripts/demo.sh

# docs/BENCHMARKS.md: the graph alone (criterion + callgrind), memif end to end, the generator.
bench: build
	scripts/bench-nodes.sh
	scripts/bench-memif-e2e.sh
	scripts/bench-gen.sh

fuzz:
	scripts/fuzz.sh $(FUZZ_ARGS)

clean:
	$(CARGO) clean
