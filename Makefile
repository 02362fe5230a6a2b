# stage-compositor: the two commands a new user runs are `make demo` and `make test`.
SWIFT ?= swift
DEMO_STAGE ?= fixtures/four-grid
DEMO_OUT ?= out/demo

.PHONY: deps test-deps bench-deps build release demo live-demo test test-postgres test-postgres-daemons bench bench-live bench-whip fuzz-build fuzz fuzz-merge clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

bench-deps:
	@scripts/install-deps.sh --bench

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Compose the bundled recorded stage into a local HLS recording; prints the playlist path.
demo: release
	@rm -rf $(DEMO_OUT)
	@.build/release/stage-compositor compose --stage $(DEMO_STAGE) --layout grid --encoder 1280x720@30:2500000 --out $(DEMO_OUT)

## A live stage: three ffmpeg publishers (RTMP and RTMPS) composed into an HLS recording;
## prints the command to watch it. LIVE_DEMO_SECONDS=0 runs until Ctrl-C.
LIVE_DEMO_SECONDS ?= 0
live-demo: release
	@scripts/live-demo.sh --seconds $(LIVE_DEMO_SECONDS)

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
POSTGRES_LEG ?= (DaemonProcessTests|LiveDaemonTests|WHIPDaemonTests|HostileDaemonTests|S3DaemonTests)
test-postgres-daemons: test-deps
	$(SWIFT) build --build-tests
	@STAGE_COMPOSITOR_TEST_STORE=postgres SWIFT=$(SWIFT) scripts/run-tests.sh --skip-build --filter '$(POSTGRES_LEG)'

## Benchmark on camera-like inputs against an equivalent ffmpeg command line and GStreamer
## pipeline, with the codec floor (release build).
bench: release bench-deps
	benchmarks/run.sh

## Fuzz every whole-session target with libFuzzer for FUZZ_SECONDS each (Sources/Fuzz;
## corpora in Tests/FuzzTests/Corpus). FUZZ_TARGETS picks some; fuzz-merge minimizes what
## was found into the committed corpora. `make test` replays the corpora and runs a short,
## seeded mutation run of each target.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= rtmp-parsers rtmp-session whip-media stun-sdp api-bodies
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
	rm -rf .build .build-fuzz out
