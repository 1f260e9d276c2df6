import Foundation

/// Why a read or a look-up could not be answered: which file, and the reason as a value, with
/// the error underneath kept whole. The errno for each reason is chosen in `FilesystemError`'s
/// one table, not here.
public struct FetchError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Sendable, CustomStringConvertible {
        /// The server or the network failed, after the retries the policy allows.
        case remote(RemoteError)
        /// The cache disk could not keep or give back the bytes.
        case cache(CacheError)
        /// The server has another version now (why it differs): this one can no longer be read,
        /// and is never mixed with the new one.
        case remoteChanged(String)
        /// The finished file is not what the manifest promised (a sha256 mismatch).
        case rejected(String)
        /// A directory's page came, but is not a listing that can be read (the reason).
        case unreadableListing(String)
        /// None of the file's sources (its URL and mirrors) serves it: each one and why.
        case sourcesFailed(String)
        /// The file's size (as a server or the cache database stated it) is over the largest a
        /// mount accepts (`FileSizeLimit`): the file is refused, the rest of the mount goes on.
        case tooLarge(UInt64)
        /// The read waited longer than the read deadline.
        case timedOut(Duration)
        /// The mount is going away; its transfers were stopped.
        case unmounting

        public var description: String {
            switch self {
            case .remote(let error): error.description
            case .cache(let error): error.description
            case .remoteChanged(let why): "remote file changed (\(why))"
            case .rejected(let why): why
            case .unreadableListing(let why): why
            case .sourcesFailed(let sources): "no source serves it: \(sources)"
            case .tooLarge(let size): "its stated size of \(size) bytes is over the largest file a mount accepts, \(FileSizeLimit.shown)"
            case .timedOut(let deadline): "timed out after \(deadline)"
            case .unmounting: "unmounting"
            }
        }

        /// True when opening the file again gets a readable (new) version.
        var isCuredByReopening: Bool {
            switch self {
            case .remoteChanged, .remote(.changed): true
            default: false
            }
        }
    }

    /// The file as messages show it: its URL without credentials.
    public let file: String
    public let reason: Reason

    public init(_ file: String, _ reason: Reason) {
        self.file = file
        self.reason = reason
    }

    public init(_ url: URL, _ reason: Reason) {
        self.init(url.redactedForDisplay, reason)
    }

    /// The error underneath, when there is one (a `RemoteError` or a `CacheError`).
    public var cause: (any Error & Sendable)? {
        switch reason {
        case .remote(let error): error
        case .cache(let error): error
        default: nil
        }
    }

    /// "file: reason", with what to do about it when the reader can do something.
    public var description: String {
        "\(file): \(reason)" + (reason.isCuredByReopening ? "; open the file again" : "")
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
