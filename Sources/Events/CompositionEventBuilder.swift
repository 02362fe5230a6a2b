// Turns the lifecycle's notifications into EventBridge events for one deployment
// (region, account), with the event ID and wall-clock time injectable for tests.
public import Lifecycle
import Foundation

public struct CompositionEventBuilder: Sendable {
    public let region: String
    public let account: String
    private let makeID: @Sendable () -> String
    private let secondsSince1970: @Sendable () -> Int64

    /// - Parameters:
    ///   - makeID: a fresh event ID; defaults to a random lowercase UUID.
    ///   - secondsSince1970: wall-clock UTC time in whole seconds; defaults to the system clock.
    public init(region: String, account: String,
                makeID: (@Sendable () -> String)? = nil,
                secondsSince1970: (@Sendable () -> Int64)? = nil) {
        self.region = region
        self.account = account
        self.makeID = makeID ?? { UUID().uuidString.lowercased() }
        self.secondsSince1970 = secondsSince1970 ?? { Int64(Date().timeIntervalSince1970.rounded(.down)) }
    }

    public func event(for notification: CompositionNotification, compositionArn: String,
                      stageArn: String) -> CompositionStateChangeEvent {
        CompositionStateChangeEvent(
            id: makeID(), account: account, time: Self.formatTime(secondsSince1970()), region: region,
            resources: [compositionArn],
            detail: .init(eventName: notification.eventName, stageArn: stageArn,
                          id: notification.destinationID, reason: notification.reason))
    }

    /// The events for the `.emit` actions among `actions`, in order; other actions are skipped.
    public func events(for actions: [CompositionAction], compositionArn: String,
                       stageArn: String) -> [CompositionStateChangeEvent] {
        actions.compactMap { action in
            guard case .emit(let notification) = action else { return nil }
            return event(for: notification, compositionArn: compositionArn, stageArn: stageArn)
        }
    }

    /// "2017-06-12T10:23:43Z" from seconds since 1970 (proleptic Gregorian, UTC).
    public static func formatTime(_ seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Howard Hinnant's civil-from-days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2))Z"
    }
}
