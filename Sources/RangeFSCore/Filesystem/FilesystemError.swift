import Foundation

/// Why the filesystem could not answer an operation: one cause, kept as a value, and the errno
/// the kernel is given for it. Every errno the mount returns is chosen in `errno(for:)`.
public struct FilesystemError: Error, Sendable, CustomStringConvertible {
    public enum Cause: Sendable {
        /// No node with this inode, or no such name in the directory.
        case noSuchEntry
        case notADirectory
        case isADirectory
        /// Opened for writing, or any operation that would change the tree.
        case readOnly
        case negativeOffset
        /// A file handle the table does not hold (never opened, or closed already).
        case unknownHandle
        /// An attribute outside `user.*` (ACLs, security labels): this filesystem has none.
        case attributeNamespaceUnsupported
        case noSuchAttribute
        /// The caller's buffer cannot hold the attribute's value or the list of names.
        case attributeBufferTooSmall(needed: Int)
        /// Finding the file's size or bytes failed; `FetchError.reason` says why.
        case fetch(FetchError)
    }

    public let cause: Cause

    public init(_ cause: Cause) {
        self.cause = cause
    }

    public var errno: Int32 { Self.errno(for: cause) }

    /// The one table of errnos.
    static func errno(for cause: Cause) -> Int32 {
        switch cause {
        case .noSuchEntry: ENOENT
        case .notADirectory: ENOTDIR
        case .isADirectory: EISDIR
        case .readOnly: EROFS
        case .negativeOffset: EINVAL
        case .unknownHandle: EBADF
        // "Not supported" rather than "no such attribute": `ls -l` then stops asking every file
        // for its ACL and security label.
        case .attributeNamespaceUnsupported: EOPNOTSUPP
        case .noSuchAttribute: ENODATA
        case .attributeBufferTooSmall: ERANGE
        case .fetch(let error): errno(for: error.reason)
        }
    }

    static func errno(for reason: FetchError.Reason) -> Int32 {
        switch reason {
        // Whatever failed underneath (the server, the network, the cache disk, a change of the
        // remote file, the deadline, the unmount), the reader gets EIO, the one errno every
        // program treats as "this read failed"; the reason goes to the log and user.rangefs.error.
        case .remote, .cache, .remoteChanged, .rejected, .unreadableListing, .sourcesFailed, .timedOut, .unmounting: EIO
        // A size over `FileSizeLimit`: no retry or reopen helps, and "File too large" says why.
        case .tooLarge: EFBIG
        }
    }

    public var description: String {
        switch cause {
        case .noSuchEntry: "no such file or directory"
        case .notADirectory: "not a directory"
        case .isADirectory: "is a directory"
        case .readOnly: "read-only filesystem"
        case .negativeOffset: "negative offset"
        case .unknownHandle: "unknown file handle"
        case .attributeNamespaceUnsupported: "only user.* attributes exist"
        case .noSuchAttribute: "no such attribute"
        case .attributeBufferTooSmall(let needed): "the attribute needs \(needed) bytes"
        case .fetch(let error): error.description
        }
    }
}
