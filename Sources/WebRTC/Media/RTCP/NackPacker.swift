// Sequence numbers to generic NACK (PID, BLP) pairs: each pair covers its PID and the 16
// numbers after it. Covering points with fixed windows is solved greedily from the first
// point; on the 16-bit circle we start right after the widest empty arc, so a list that
// crosses 65535 → 0 is one run.

public enum NackPacker {
    /// The fewest pairs that report exactly `sequenceNumbers` (duplicates ignored).
    public static func pack(_ sequenceNumbers: [UInt16]) -> [RTCPNackPair] {
        let sorted = Array(Set(sequenceNumbers)).sorted()
        guard let firstValue = sorted.first else { return [] }
        // Start after the largest circular gap.
        var startIndex = 0
        var widestGap = Int(firstValue) + 65536 - Int(sorted[sorted.count - 1])
        for index in 1..<max(1, sorted.count) where Int(sorted[index]) - Int(sorted[index - 1]) > widestGap {
            widestGap = Int(sorted[index]) - Int(sorted[index - 1])
            startIndex = index
        }
        let ordered = Array(sorted[startIndex...] + sorted[..<startIndex])

        var pairs: [RTCPNackPair] = []
        var current: RTCPNackPair?
        for seq in ordered {
            if var pair = current {
                let distance = seq &- pair.packetID
                if distance >= 1, distance <= 16 {
                    pair.lostBitmask |= 1 << (distance - 1)
                    current = pair
                    continue
                }
                pairs.append(pair)
            }
            current = RTCPNackPair(packetID: seq, lostBitmask: 0)
        }
        if let current { pairs.append(current) }
        return pairs
    }

    /// The sequence numbers the pairs report, in order, duplicates kept out.
    public static func unpack(_ pairs: [RTCPNackPair]) -> [UInt16] {
        var seen = Set<UInt16>()
        return pairs.flatMap(\.sequenceNumbers).filter { seen.insert($0).inserted }
    }
}
