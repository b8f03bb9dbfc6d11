# vecswitch — thin wrappers; the README's two commands are `make demo` and `make test`.
SHELL := /bin/bash
export PATH := $(HOME)/.cargo/bin:$(PATH)
CARGO ?= cargo

.PHONY: setup build test demo bench fuzz soak burn-in clean

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

# Issue 14 item 7: 60 s at 90 % of the measured NDR through a learning, aging bridge; fails on any
# loss, buffers not back to baseline or RSS growth above 10 % (SOAK_ARGS="--duration 1h" for the
# long run). Not part of `make test` (its 5 s version is: crates/cli/tests/soak.rs).
soak: build
	target/release/vecswitch soak --duration 60s --interval 10s --strict -o soak.json $(SOAK_ARGS)

# Issue 12 item 3 (seed 004's overnight test): the L7 mix with illegal flows through vecswitch's
# firewall + router (NAT) chain for 60 s, throughput and TTFB per 10 s interval; fails on any
# failed transaction or illegal flow through. Root (namespaces). Longer: edit duration_s in
# docs/suites/burn-in.toml.
burn-in: build
	target/release/vecswitch bench docs/suites/burn-in.toml -o burn-in.json

clean:
	$(CARGO) clean
