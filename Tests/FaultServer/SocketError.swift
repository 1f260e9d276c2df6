#if canImport(Glibc)
import Glibc
#endif

/// A failed socket call, with the call's name and `errno` text.
public struct SocketError: Error, Sendable, CustomStringConvertible {
    public let description: String

    init(_ call: String, _ code: Int32) {
        description = "\(call): \(String(cString: strerror(code)))"
    }
}
