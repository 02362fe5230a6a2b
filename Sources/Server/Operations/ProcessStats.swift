// This process's CPU time, resident memory and open files, read from /proc/self when /metrics
// is served (the standard process_* metrics). Parsing is pure; reading is one function.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

public struct ProcessStats: Sendable, Equatable {
    public var cpuSeconds: Double
    public var residentMemoryBytes: Int64
    public var openFileDescriptors: Int

    /// Reads /proc/self; nil where there is no /proc (not Linux).
    public static func read() -> ProcessStats? {
        #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return nil }
        return parse(stat: stat, statm: statm, openFileDescriptors: fds.count,
                     ticksPerSecond: Int(sysconf(Int32(_SC_CLK_TCK))), pageSize: Int(sysconf(Int32(_SC_PAGESIZE))))
        #else
        return nil
        #endif
    }

    /// From /proc/self/stat (utime and stime, fields 14 and 15, in clock ticks; the command
    /// name before them is in parentheses and may hold spaces) and /proc/self/statm (resident
    /// pages, its second field).
    static func parse(stat: String, statm: String, openFileDescriptors: Int, ticksPerSecond: Int, pageSize: Int) -> ProcessStats? {
        guard let close = stat.lastIndex(of: ")"), ticksPerSecond > 0 else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        let pages = statm.split(separator: " ")
        // After the name: field 3 (state) is fields[0], so field n is fields[n - 3].
        guard fields.count > 12, let user = Int64(fields[11]), let system = Int64(fields[12]),
              pages.count > 1, let resident = Int64(pages[1]) else { return nil }
        return ProcessStats(cpuSeconds: Double(user + system) / Double(ticksPerSecond),
                            residentMemoryBytes: resident * Int64(pageSize), openFileDescriptors: openFileDescriptors)
    }
}
