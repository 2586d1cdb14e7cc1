# iap-ledger: two commands on a fresh machine.
#   make run    installs what is missing, builds in release mode, serves the test store's app
#               (CONFIG=FILE: your own) on an embedded PostgreSQL
#   make test   the same set-up, then the whole suite in debug (PostgreSQL directly) and in
#               release mode (the service through PgBouncer in transaction pooling)
SHELL := /bin/bash
SWIFT ?= swift
# Debian packages the build, the tests and the benchmarks need. Checked one by one so a
# machine that has them all never touches apt. `postgresql` brings psql (postgresql-client-NN),
# which `iap-ledger psql` runs.
PACKAGES := libpq-dev libssl-dev libmicrohttpd-dev libcurl4-openssl-dev postgresql libcurl4 openssl util-linux pgbouncer
BENCH_PACKAGES := wrk
ARGS ?=

# The console's browser tests (ConsoleBrowserTests) drive Debian's headless Chromium through chromedriver.
BROWSER_PACKAGES := chromium chromium-driver

# The local multi-node deployment (deploy/local-cluster, ClusterTests): PgBouncer in front of
# PostgreSQL, HAProxy in front of the instances, curl for the script's look at HAProxy's stats.
CLUSTER_PACKAGES := haproxy pgbouncer curl
CLUSTER_ARGS ?=

.PHONY: embed dist deps bench-deps browser cluster-deps cluster cluster-down build release run test test-debug test-fast test-release lint format bench clean

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

# migrations/*.sql are compiled into the binary (Sources/Schema/SchemaMigrations.swift, committed);
# regenerated here so a new migration is never forgotten (SchemaMigrationsTests checks it too).
embed:
	@scripts/embed-migrations

build: deps embed
	$(SWIFT) build

release: deps embed
	$(SWIFT) build -c release

# The test store's app (testkit init, once, under RUN_DATA) is what `make run` serves unless
# CONFIG names your own config, so a purchase can be tried at once (README, "A 5-minute tour").
RUN_DATA ?= .iap-ledger
CONFIG ?= $(RUN_DATA)/testkit/config.json
run: release
	@if [ "$(CONFIG)" = "$(RUN_DATA)/testkit/config.json" ]; then .build/release/iap-ledger testkit init --data-dir "$(RUN_DATA)"; fi
	.build/release/iap-ledger serve --config "$(CONFIG)" --data-dir "$(RUN_DATA)" $(ARGS)

test: deps browser cluster-deps lint test-debug test-release

# The project's own .swift-format, strictly: a finding fails `make test` (fix it with `make format`).
# The generated Sources/Schema/SchemaMigrations.swift opts out with swift-format-ignore-file.
lint:
	$(SWIFT) format lint --strict --recursive --parallel Sources Tests Package.swift

format:
	$(SWIFT) format format --in-place --recursive --parallel Sources Tests Package.swift

test-debug: embed
	$(SWIFT) test

# Only the pure tests, in seconds: every suite tagged `.database` (it starts PostgreSQL; the
# `.cluster` and `.slow` ones all do) is skipped. This toolchain's `swift test` selects by name,
# not tag, so scripts/database-suites reads the tags from the sources into one --skip regex.
# For the edit-build-test loop, not instead of `make test`.
test-fast: embed
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --skip "$$(scripts/database-suites)"

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

# A release tarball in dist/: the binary with the Swift runtime linked in (it carries its
# migrations and console), a sample config, deployment files and licence texts. deploy/Dockerfile
# runs the same steps; SingleBinaryTests packs a tarball the same way and serves from it.
dist: deps embed
	@dpkg-query -W -f='$${Status}' libcurl4-openssl-dev 2>/dev/null | grep -q '^install ok installed$$' || { \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq libcurl4-openssl-dev; }
	$(SWIFT) build -c release --static-swift-stdlib --product iap-ledger
	scripts/dist .build/release/iap-ledger dist

clean:
	rm -rf .build dist
