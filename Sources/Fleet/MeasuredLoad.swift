// What this node's process really uses, for placement: the CPU time it consumed between two
// samples over the wall time between them, in thousandths of a core, smoothed so one busy
// second (a keyframe storm, a start-up) does not close the node to new stages and a quiet one
// does not open it. Placement counts a node's load as the larger of what its stages reserved
// and this, so an estimate that is too low is corrected by what the node measures. Pure: the
// caller supplies the samples (getrusage and a monotonic clock).
public struct MeasuredLoad: Sendable {
    /// How much of each new sample enters the average (0...1).
    public var weight: Double
    /// The smoothed load, in millicores (0 until two samples).
    public private(set) var millicores: Int = 0
    private var last: (cpuMicros: Int64, wallMicros: Int64)?
    private var average: Double?

    public init(weight: Double = 0.2) {
        self.weight = weight.isFinite ? min(max(weight, 0.01), 1) : 0.2
    }

    /// Adds a sample: the process's total CPU time (user + system) and a monotonic wall time,
    /// both in microseconds. A sample that goes backwards or comes too soon (under 100 ms)
    /// is ignored, as is a figure beyond 1024 cores.
    public mutating func sample(cpuMicros: Int64, wallMicros: Int64) {
        guard let previous = last else {
            last = (cpuMicros, wallMicros)
            return
        }
        let wall = wallMicros &- previous.wallMicros
        let cpu = cpuMicros &- previous.cpuMicros
        guard wall >= 100_000 else { return }
        last = (cpuMicros, wallMicros)
        guard cpu >= 0, wall > 0 else { return }
        let now = min(Double(cpu) * 1000 / Double(wall), 1_024_000)
        let smoothed = average.map { $0 + weight * (now - $0) } ?? now
        average = smoothed
        millicores = Int(smoothed.rounded())
    }
}
