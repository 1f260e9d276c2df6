import Foundation

/// Why a read or a look-up could not be answered; the FUSE layer turns it into an errno.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public var errno: Int32
    public var description: String

    public init(errno: Int32 = EIO, _ description: String) {
        self.errno = errno
        self.description = description
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
