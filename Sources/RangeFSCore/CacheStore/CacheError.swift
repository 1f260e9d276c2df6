import Foundation

public struct CacheError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// The system call's errno, when one failed (ENOSPC tells a full disk).
    public var errorNumber: Int32?

    public init(_ description: String, errorNumber: Int32? = nil) {
        self.description = description
        self.errorNumber = errorNumber
    }

    /// An error from a failed system call, with errno's text.
    static func system(_ what: String, errno code: Int32 = errno) -> CacheError {
        CacheError("\(what): \(String(cString: strerror(code)))", errorNumber: code)
    }
}
