import Foundation

public struct CacheError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// The system call's errno, when one failed (ENOSPC tells a full disk).
    public var errorNumber: Int32?

    public init(_ description: String, errorNumber: Int32? = nil) {
        self.description = description
        self.errorNumber = errorNumber
    }

    /// `error` itself when it is a `CacheError` (the cache's own calls throw only those), else
    /// its text: untyped `throws` cannot promise which error comes out.
    static func from(_ error: any Error) -> CacheError {
        error as? CacheError ?? CacheError("\(error)")
    }

    /// A cache file that could not be opened (with `O_NOFOLLOW`): a symbolic link where it
    /// should be is named as such, since nothing of the cache is reached through one.
    static func opening(_ path: String, errno code: Int32 = errno) -> CacheError {
        guard code == ELOOP else { return system("cannot open cache file \(path)", errno: code) }
        return CacheError("cache file \(path) is a symbolic link; it is not followed", errorNumber: code)
    }

    /// An error from a failed system call, with errno's text.
    static func system(_ what: String, errno code: Int32 = errno) -> CacheError {
        CacheError("\(what): \(String(cString: strerror(code)))", errorNumber: code)
    }
}
