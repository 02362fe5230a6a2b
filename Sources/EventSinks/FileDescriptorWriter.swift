// The few POSIX calls the file and stdout sinks need.

#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

enum FileDescriptorWriter {
    /// Writes every byte (retrying short writes and EINTR); the errno of a failure.
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { buffer in
                write(descriptor, buffer.baseAddress, buffer.count)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }

    /// Opens for appending, creating the file (0640) if needed; the errno of a failure.
    static func openForAppending(_ path: String) -> (descriptor: Int32?, errno: Int32) {
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
        return descriptor < 0 ? (nil, errno) : (descriptor, 0)
    }

    static func sync(_ descriptor: Int32) -> Int32? {
        fsync(descriptor) == 0 ? nil : errno
    }

    static func closeDescriptor(_ descriptor: Int32) {
        _ = close(descriptor)
    }

    static func describe(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
