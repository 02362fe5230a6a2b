# stage-compositor: the two commands a new user runs are `make demo` and `make test`.
SWIFT ?= swift
DEMO_STAGE ?= fixtures/four-grid
DEMO_OUT ?= out/demo
RELEASE_BINARY := .build/release/stage-compositor

# The tests' and benchmarks' Python (python3, aws, moto_server): the virtual environment
# `scripts/install-deps.sh --test` makes, first on PATH for every recipe.
export PATH := $(CURDIR)/.build/venv/bin:$(PATH)

.PHONY: deps test-deps bench-deps deb-deps build release demo live-demo test test-postgres test-postgres-daemons deb test-deb bench bench-live bench-whip fuzz-build fuzz fuzz-merge clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

bench-deps:
	@scripts/install-deps.sh --bench

deb-deps:
	@scripts/install-deps.sh --deb

build: deps
	$(SWIFT) build

## The commit goes into `--version` and /metrics' build_info through a header the build finds
## with -Xcc -I (Sources/CBuildInfo); no tracked file changes. A plain `swift build` says "unknown".
release: deps
	@scripts/stamp-build-info.sh $(CURDIR)/.build/build-info
	$(SWIFT) build -c release -Xcc -I$(CURDIR)/.build/build-info

## Compose the bundled recorded stage into a local HLS recording; prints the playlist path.
demo: release
	@rm -rf $(DEMO_OUT)
	@.build/release/stage-compositor compose --stage $(DEMO_STAGE) --layout grid --encoder 1280x720@30:2500000 --out $(DEMO_OUT)

## A live stage: three ffmpeg publishers (RTMP and RTMPS) composed into an HLS recording;
## prints the command to watch it. LIVE_DEMO_SECONDS=0 runs until Ctrl-C; LIVE_DEMO_ARGS
## passes more options to scripts/live-demo.sh (--out DIR). The release build is used as it is
## when no source is newer (else `make release`), and packages are installed only when ffmpeg,
## curl or python3 is missing.
LIVE_DEMO_SECONDS ?= 0
LIVE_DEMO_ARGS ?=
live-demo:
	@command -v ffmpeg >/dev/null && command -v curl >/dev/null && command -v python3 >/dev/null || scripts/install-deps.sh
	@if [ -x $(RELEASE_BINARY) ] && [ -z "$$(find Sources Package.swift -newer $(RELEASE_BINARY) -print -quit)" ]; then \
	  echo "live-demo: $(RELEASE_BINARY) is newer than every source, not rebuilding"; \
	else $(MAKE) --no-print-directory release; fi
	@scripts/live-demo.sh --binary $(RELEASE_BINARY) --seconds $(LIVE_DEMO_SECONDS) $(LIVE_DEMO_ARGS)

## The whole test suite (unit, end-to-end with ffprobe/ffmpeg, daemon, RTMP).
test: test-deps
	$(SWIFT) build
	@SWIFT=$(SWIFT) scripts/run-tests.sh

## The store matrix's other leg: the whole suite with every daemon test on PostgreSQL (a server
## the tests start themselves). The store tests run on both stores in `make test` already.
test-postgres: test-deps
	$(SWIFT) build
	@STAGE_COMPOSITOR_TEST_STORE=postgres SWIFT=$(SWIFT) scripts/run-tests.sh

## The PostgreSQL leg as CI runs it after `make test` (which already runs the store tests on
## both stores and the fleet and PostgreSQL daemon tests): every other daemon test again, on
## PostgreSQL. Needs `make test`'s build.
## The tests whose outcome the store can change: lifecycle, restarts, sessions, participants,
## recordings, revocations, every operation (conformance), redundant ingest. Not the media
## interop and hostile-input tests (WHIP clients, floods, caps): nothing they check is stored.
POSTGRES_LEG ?= (DaemonProcessTests|LiveDaemonTests|ConformanceDaemonTests|RedundantIngestDaemonTests|WHIPDaemonTests/(testSessionRerenderMatchesTheLiveComposite|testWHIPHTTPRulesAndRefusals|testChromiumIsRecordedIndividually))
## …and the S3 outage tests, beside them (they mostly wait: scripts/run-tests.sh).
POSTGRES_LEG_BESIDE ?= ServerTests.S3DaemonTests
test-postgres-daemons: test-deps
	$(SWIFT) build --build-tests
	@STAGE_COMPOSITOR_TEST_STORE=postgres STAGE_COMPOSITOR_SIDE_TESTS='$(POSTGRES_LEG_BESIDE)' SWIFT=$(SWIFT) \
	  scripts/run-tests.sh --skip-build --filter '$(POSTGRES_LEG)'

## The Debian package out/deb/stage-compositor_<version>_amd64.deb (scripts/build-deb.sh;
## packaging/): a release build with the Swift runtime linked statically, in its own SwiftPM
## scratch path DEB_SCRATCH (about 15 min from nothing on 2 cores). test-deb builds it, then
## unpacks it into a scratch root and tries it (scripts/test-deb.sh; as root with
## STAGE_COMPOSITOR_DEB_INSTALL=1 it installs and purges it for real).
DEB_SCRATCH ?= .build-deb
deb: deb-deps
	@DEB_SCRATCH=$(DEB_SCRATCH) SWIFT=$(SWIFT) scripts/build-deb.sh

test-deb: deb-deps
	@DEB_SCRATCH=$(DEB_SCRATCH) SWIFT=$(SWIFT) scripts/test-deb.sh

## Benchmark on camera-like inputs against an equivalent ffmpeg command line and GStreamer
## pipeline, with the codec floor (release build).
bench: release bench-deps
	benchmarks/run.sh

## Fuzz every whole-session target with libFuzzer for FUZZ_SECONDS each (Sources/Fuzz;
## corpora in Tests/FuzzTests/Corpus). FUZZ_TARGETS picks some; fuzz-merge minimizes what
## was found into the committed corpora. `make test` replays the corpora and runs a short,
## seeded mutation run of each target.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= rtmp-parsers rtmp-session whip-media whep-viewer stun-sdp api-bodies
fuzz-build: deps
	$(SWIFT) build -c release --product StageFuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING --scratch-path .build-fuzz

fuzz: fuzz-build
	scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-merge: fuzz-build
	scripts/fuzz.sh --merge $(FUZZ_TARGETS)

## Live compositions with real RTMP publishers: density, glass-to-glass latency, memory.
bench-live: release test-deps
	benchmarks/live_bench.py

## WHIP publishers (headless Chromium): CPU per publisher, glass-to-glass latency.
bench-whip: release test-deps
	benchmarks/whip_bench.py

clean:
	rm -rf .build .build-fuzz .build-deb out
