# iap-ledger: two commands on a fresh machine.
#   make run    installs what is missing, builds in release mode, serves on an embedded PostgreSQL
#   make test   the same set-up, then the whole suite in debug (PostgreSQL directly) and in
#               release mode (the service through PgBouncer in transaction pooling)
SHELL := /bin/bash
SWIFT ?= swift
# Debian packages the build, the tests and the benchmarks need. Checked one by one so a
# machine that has them all never touches apt. `postgresql` brings psql (postgresql-client-NN),
# which `iap-ledger psql` runs.
PACKAGES := libpq-dev libssl-dev libmicrohttpd-dev postgresql libcurl4 openssl util-linux pgbouncer
BENCH_PACKAGES := wrk
ARGS ?=

# The console's browser tests (ConsoleBrowserTests) drive Debian's headless Chromium through chromedriver.
BROWSER_PACKAGES := chromium chromium-driver

# The local multi-node deployment (deploy/local-cluster, ClusterTests): PgBouncer in front of
# PostgreSQL, HAProxy in front of the instances, curl for the script's look at HAProxy's stats.
CLUSTER_PACKAGES := haproxy pgbouncer curl
CLUSTER_ARGS ?=

.PHONY: deps bench-deps browser cluster-deps cluster cluster-down build release run test test-debug test-release bench clean

deps:
	@missing=""; for p in $(PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q '^install ok installed$$' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

bench-deps: deps
	@missing=""; for p in $(BENCH_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q '^install ok installed$$' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

browser: deps
	@if ! command -v chromedriver >/dev/null 2>&1; then \
	  echo "installing: $(BROWSER_PACKAGES)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(BROWSER_PACKAGES); \
	fi

cluster-deps: deps
	@missing=""; for p in $(CLUSTER_PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q '^install ok installed$$' || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# A primary, a streaming replica, PgBouncer, three instances and HAProxy on 127.0.0.1 (state in
# ./.iap-ledger-cluster; CLUSTER_ARGS="--base-port N --pool-mode session" and so on).
cluster: cluster-deps build
	deploy/local-cluster up $(CLUSTER_ARGS)

cluster-down:
	deploy/local-cluster down $(CLUSTER_ARGS)

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/iap-ledger serve $(ARGS)

test: deps browser cluster-deps test-debug test-release

test-debug:
	$(SWIFT) test

# Some C-interop lifetime bugs only show with the optimizer on. And the service goes through
# PgBouncer in transaction pooling (TestSupport/PgBouncer.swift), so `make test` covers both:
# PostgreSQL directly in debug, pooled in release.
test-release:
	IAP_TEST_DATABASE_VIA=pgbouncer $(SWIFT) test -c release

# Every benchmark next to its baseline (openssl speed, pgbench) run in the same go; rewrites the
# table in BENCHMARKS.md. Fixed parameters (see BENCHMARKS.md); about 9 minutes on 2 cores (the cluster group included), no network.
BENCH_ARGS ?=
bench: bench-deps cluster-deps
	$(SWIFT) build -c release --product iap-ledger
	$(SWIFT) build -c release --product iap-ledger-bench
	.build/release/iap-ledger-bench run --out BENCHMARKS.md $(BENCH_ARGS)

clean:
	rm -rf .build
