# stage-compositor: the two commands a new user runs are `make demo` and `make test`.
SWIFT ?= swift
DEMO_STAGE ?= fixtures/four-grid
DEMO_OUT ?= out/demo

.PHONY: deps test-deps build release demo test bench clean

deps:
	@scripts/install-deps.sh

test-deps:
	@scripts/install-deps.sh --test

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Compose the bundled recorded stage into a local HLS recording; prints the playlist path.
demo: release
	@rm -rf $(DEMO_OUT)
	@.build/release/stage-compositor compose --stage $(DEMO_STAGE) --layout grid --encoder 1280x720@30:2500000 --out $(DEMO_OUT)

## The whole test suite (unit, end-to-end with ffprobe/ffmpeg, daemon, RTMP).
test: test-deps
	$(SWIFT) build
	$(SWIFT) test

## Benchmark against an equivalent ffmpeg command line (release build).
bench: release
	benchmarks/run.sh

clean:
	rm -rf .build out
