// Puts a live publisher's timestamps on the stage clock. Pure.
//
// Each packet has the publisher's media time (its own clock) and our arrival time. The
// offset between the two is the transit delay plus the difference of the clocks; its
// smallest value over a window is the best estimate free of network jitter. A packet is
// presented at media time + offset + latency, so anything that arrives at most `latency`
// behind the least-delayed packets is on time.
//
// The offset follows the windowed minimum slowly (at most `maxSlew` per unit of arrival
// time), which absorbs the drift between the publisher's clock and ours — a few hundred ppm
// at worst — so over hours nothing builds up and nothing runs dry. A jump of the publisher's
// timestamps (an encoder restart) re-anchors at once.
//
// The latency itself is measured per publisher, as WebRTC receivers size their jitter
// buffers: how late packets arrive behind the least-delayed ones (the largest lateness over
// the last one to two `latenessWindow`s), plus a margin for the composition, which reads a
// frame's worth ahead of its clock, held within [minimumLatency, maximumLatency]. A new
// publisher starts at the maximum, as a fixed allowance would, and comes down to what its
// jitter needs no faster than `maxShrinkPPM` of the time passing, so the lateness of its first
// seconds (connection start-up, a host under load) is learned before the allowance is small.
// It comes down in steps of `shrinkStep` (a video frame: the picture skips one frame and the
// sound as much, and a 30 fps picture keeps its cadence against a 30 fps composition), never
// by squeezing the sound; the last step may be smaller (at least 10 ms). A step applies from
// a media time beyond every packet seen, so audio and video of the same instant always share
// one allowance, whichever of them arrives first. A packet that comes with less than the margin
// to spare steps it up at once (the picture holds and the sound has a gap as long as the
// step, once); each step up is counted. A clean publisher is shown soon after it arrives once
// settled; a jittery one keeps as much delay as its jitter needs. With both bounds equal the
// latency is fixed.

public struct LiveTimestampMapper: Sendable {
    /// How long after its expected arrival a packet is still on time now (µs): the allowance
    /// of media from `shrunkFrom` on.
    public private(set) var latency: Int64
    /// The allowance of media before `shrunkFrom` (publisher µs), where the latest step down
    /// applies from: packets of earlier instants that arrive after the step keep the allowance
    /// their stream's neighbours had.
    private var latencyBefore: Int64
    private var shrunkFrom: Int64?
    /// Where the walk down at `maxShrinkPPM` has come to (µs): the latency steps down to it
    /// once it is a `shrinkStep` below (or at what the jitter needs).
    private var walk: Int64
    /// How much one step down moves the allowance (µs; the last step to the target may be less,
    /// down to `minimumShrinkStep`: the allowance stays less than that above the target).
    public let shrinkStep: Int64
    public static let minimumShrinkStep: Int64 = 10_000
    /// Bounds of the measured latency (µs).
    public let minimumLatency: Int64
    public let maximumLatency: Int64
    /// Added to the lateness measured: the composition reads a publisher's queue once per
    /// output frame, and a packet must be there by then (µs).
    public let margin: Int64
    /// Largest decrease of the latency per µs of arrival time, in parts per million, averaged
    /// over its steps.
    public let maxShrinkPPM: Int64
    /// Length of one lateness-tracking window (µs of arrival time): the largest lateness is
    /// remembered for one to two of them.
    public let latenessWindow: Int64
    private var latenessWindowStart: Int64 = 0
    /// Steps up for packets that came with less than the margin to spare, and how much they
    /// added in all (µs): each is a held picture and a gap in the sound that long.
    public private(set) var steps: Int64 = 0
    public private(set) var steppedUp: Int64 = 0
    /// Largest lateness (µs behind the offset) in the current and the previous window.
    private var currentMaximumLate: Int64 = 0
    private var previousMaximumLate: Int64 = 0
    /// Length of one minimum-tracking window (µs of arrival time).
    public let window: Int64
    /// Largest offset change per µs of arrival time, in parts per million (1 000 = 0.1 %):
    /// several times the worst clock drift, and slow enough for audio to follow by resampling.
    public let maxSlewPPM: Int64
    /// A change of the offset estimate beyond this is a discontinuity (µs).
    public let discontinuityThreshold: Int64
    /// For this long after the first packet the offset follows the least-delayed packet at
    /// once: a connection's first packets are often late (handshakes, encoder start-up), and
    /// slewing away from them would take many seconds. A jump while a publisher appears is
    /// not noticed; later ones would be.
    public let settling: Int64
    private var firstArrival: Int64 = 0

    /// Presentation time = media time + offset + latency.
    public private(set) var offset: Int64?
    private var windowStart: Int64 = 0
    private var currentMinimum: Int64 = .max
    private var previousMinimum: Int64 = .max
    private var lastArrival: Int64 = 0
    private var lastMediaTime: Int64?
    public private(set) var discontinuities = 0

    /// `latency`: the most a publisher is delayed by; `minimumLatency` (nil: the same, a
    /// fixed latency) the least; `initialLatency` (nil: the most) where it starts.
    public init(latency: Int64, minimumLatency: Int64? = nil, initialLatency: Int64? = nil, margin: Int64 = 40_000,
                maxShrinkPPM: Int64 = 5_000, shrinkStep: Int64 = 33_333, latenessWindow: Int64 = 5_000_000,
                window: Int64 = 5_000_000, maxSlewPPM: Int64 = 1_000,
                discontinuityThreshold: Int64 = 1_000_000, settling: Int64 = 2_000_000) {
        self.settling = settling
        maximumLatency = max(0, latency)
        self.minimumLatency = min(max(0, minimumLatency ?? latency), maximumLatency)
        self.margin = margin
        self.maxShrinkPPM = maxShrinkPPM
        self.latenessWindow = max(1, latenessWindow)
        self.latency = min(max(initialLatency ?? maximumLatency, self.minimumLatency), maximumLatency)
        latencyBefore = latency
        walk = latency
        self.shrinkStep = max(1, shrinkStep)
        self.window = window
        self.maxSlewPPM = maxSlewPPM
        self.discontinuityThreshold = discontinuityThreshold
    }

    /// The stage time (µs) at which the packet with publisher time `mediaTime` (µs) that
    /// arrived at `arrival` (µs, stage clock) is presented.
    public mutating func presentationTime(mediaTime: Int64, arrival: Int64) -> Int64 {
        let sample = arrival - mediaTime
        guard var current = offset else {
            start(sample: sample, arrival: arrival)
            lastMediaTime = mediaTime
            return mediaTime + sample + latency
        }
        defer { lastMediaTime = max(lastMediaTime ?? mediaTime, mediaTime) }
        let jumped = lastMediaTime.map { mediaTime < $0 - discontinuityThreshold || mediaTime > $0 + discontinuityThreshold + (arrival - lastArrival) } ?? false
        if jumped || abs(sample &- current) > discontinuityThreshold + maximumLatency {
            // The publisher's timeline jumped (or the network path changed completely).
            discontinuities += 1
            start(sample: sample, arrival: arrival)
            lastMediaTime = mediaTime
            return mediaTime + sample + latency
        }
        if arrival - windowStart >= window {
            previousMinimum = currentMinimum
            currentMinimum = .max
            windowStart = arrival
        }
        if arrival - latenessWindowStart >= latenessWindow {
            previousMaximumLate = currentMaximumLate
            currentMaximumLate = 0
            latenessWindowStart = arrival
        }
        currentMinimum = min(currentMinimum, sample)
        if arrival - firstArrival < settling, sample < current {
            current = sample
            previousMinimum = min(previousMinimum, sample)
        }
        let target = min(previousMinimum, currentMinimum)
        let elapsed = max(0, arrival - lastArrival)
        let step = elapsed * maxSlewPPM / 1_000_000
        if target < current {
            current = max(target, current - step)
        } else if target > current {
            current = min(target, current + step)
        }
        offset = current
        adaptLatency(late: sample &- current, elapsed: elapsed, mediaTime: mediaTime)
        lastArrival = max(lastArrival, arrival)
        return mediaTime + current + latency(at: mediaTime)
    }

    /// The allowance of the publisher's instant `mediaTime` (µs).
    public func latency(at mediaTime: Int64) -> Int64 {
        guard let shrunkFrom, mediaTime < shrunkFrom else { return latency }
        return latencyBefore
    }

    /// Follows the lateness measured: up at once (a step, counted) when the packet of
    /// `mediaTime` leaves less than the margin to spare, for every packet from then on; down
    /// in steps of `shrinkStep` as the walk at `maxShrinkPPM` of the time elapsed reaches
    /// them, from an instant after every packet seen so far.
    private mutating func adaptLatency(late: Int64, elapsed: Int64, mediaTime: Int64) {
        guard minimumLatency < maximumLatency else { return }
        currentMaximumLate = max(currentMaximumLate, late)
        let target = min(max(max(currentMaximumLate, previousMaximumLate) &+ margin, minimumLatency), maximumLatency)
        if target > latency(at: mediaTime) {
            steps &+= 1
            steppedUp &+= target &- latency(at: mediaTime)
            latency = target
            latencyBefore = target
            shrunkFrom = nil
            walk = target
            return
        }
        walk = max(target, min(latency, walk &- elapsed.multipliedReportingOverflow(by: maxShrinkPPM).partialValue / 1_000_000))
        // The last step, to the target, is less than a frame but at least `minimumShrinkStep`:
        // a smaller one would be the sound's drift following's to take, which it must not.
        let next = latency &- shrinkStep >= target ? latency &- shrinkStep
            : latency &- target >= min(shrinkStep, LiveTimestampMapper.minimumShrinkStep) ? target : latency
        guard next < latency, walk <= next else { return }
        latencyBefore = latency
        latency = next
        shrunkFrom = max(lastMediaTime ?? mediaTime, mediaTime) &+ 1
    }

    private mutating func start(sample: Int64, arrival: Int64) {
        offset = sample
        latencyBefore = latency
        shrunkFrom = nil
        firstArrival = arrival
        windowStart = arrival
        latenessWindowStart = arrival
        currentMinimum = sample
        previousMinimum = sample
        lastArrival = arrival
    }
}
