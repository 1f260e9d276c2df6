import Foundation

public struct CacheError: Error, Sendable, CustomStringConvertible {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }

    /// An error from a failed system call, with errno's text.
    static func system(_ what: String, errno code: Int32 = errno) -> CacheError {
        CacheError("\(what): \(String(cString: strerror(code)))")
    }
}
