// Test-only helpers: a seeded generator, hex byte vectors, and packet builders.
@testable import WebRTCMedia
import TestSupport

func randomBytes(_ count: Int, using generator: inout SeededGenerator) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

/// Frames out of a depacketizer's events.
func frames(_ events: [DepacketizerEvent]) -> [EncodedFrame] {
    events.compactMap { if case .frame(let frame) = $0 { frame } else { nil } }
}

func discards(_ events: [DepacketizerEvent]) -> [DepacketizerDiscard] {
    events.compactMap { if case .discarded(let reason) = $0 { reason } else { nil } }
}
