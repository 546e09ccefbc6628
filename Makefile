# dcirouter: `make demo`, `make test`, `make bench` do all set-up on a fresh
# Debian bookworm machine as root (packages from Debian and PyPI; Rust stable
# must be on PATH).
SHELL := /bin/bash
CARGO ?= cargo
APT_PKGS := libdpdk-dev dpdk-dev libclang-dev clang pkg-config libpcap-dev tshark iproute2 iputils-ping python3 python3-pip python3-cryptography lua5.4
STAMP := target/.deps-installed
# Respect CARGO_TARGET_DIR when set.
BIN_DIR := $(or $(CARGO_TARGET_DIR),target)/release

.PHONY: all deps build demo test lint test-unit test-integration fuzz bench clean

all: build

# Re-checked whenever this Makefile (and so the package list) changes.
$(STAMP): Makefile
	@command -v $(CARGO) >/dev/null || { echo "Rust stable (cargo) is required: https://rustup.rs"; exit 1; }
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -q && apt-get install -y -q --no-install-recommends $$missing; \
	fi
	@python3 -c 'import scapy, sys; v=tuple(int(x) for x in scapy.VERSION.split(".")[:2]); sys.exit(0 if v >= (2,6) else 1)' 2>/dev/null || \
	  python3 -m pip install -q 'scapy>=2.6' 2>/dev/null || python3 -m pip install -q --break-system-packages 'scapy>=2.6'
	@python3 -c 'import prometheus_client' 2>/dev/null || \
	  python3 -m pip install -q 'prometheus-client>=0.17' 2>/dev/null || python3 -m pip install -q --break-system-packages 'prometheus-client>=0.17'
	@mkdir -p target && touch $(STAMP)

deps: $(STAMP)

build: deps
	$(CARGO) build --release -p control

demo: build
	$(BIN_DIR)/dcirouter demo --out demo-out

# Every test: unit, property, oracle (scapy, tshark), integration on real
# DPDK (net_pcap, net_tap + network namespaces), and a bounded fuzz run.
# DCIROUTER_REQUIRE_ALL=1: a test that cannot run here (not root, no
# /dev/net/tun, one CPU) fails instead of skipping.
test: deps
	DCIROUTER_REQUIRE_ALL=1 $(CARGO) test --workspace --release --no-fail-fast
	bash fuzz/run.sh 20
	$(MAKE) lint

# Clippy over every crate and target; a warning fails. Installed with
# rustup when missing.
lint:
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy
	$(CARGO) clippy --workspace --release --all-targets -- -D warnings

bench: build
	bash bench/run.sh

clean:
	$(CARGO) clean
	rm -rf demo-out
