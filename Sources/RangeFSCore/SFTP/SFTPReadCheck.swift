import Foundation

/// A file's version on an SFTP server: its size and its modification time, as the listing
/// (or a `stat`) states them, the way an ETag names an HTTP file's. The size is the file's own
/// (`RemoteFileInfo.size`, held by every file); the time goes in the validator's `lastModified`,
/// as whole seconds since 1970 (what SFTP version 3 carries).
public enum SFTPVersion {
    /// The validator of a file modified at `modified`; an empty one when the server said no time.
    public static func validator(modified: Date?) -> RemoteValidator {
        RemoteValidator(etag: nil, lastModified: modified.map { String(Int64($0.timeIntervalSince1970.rounded(.down))) })
    }

    /// What a probe reports of a file of `size` bytes modified at `modified`.
    static func fileInfo(size: UInt64?, modified: Date?) throws(RemoteError) -> RemoteFileInfo {
        guard let size else { throw .protocolViolation("the server did not say the file's size") }
        return RemoteFileInfo(size: size, validator: validator(modified: modified), modified: modified)
    }

    /// Whether `url` is one that SFTP reads.
    public static func isSFTP(_ url: URL) -> Bool {
        url.scheme?.lowercased() == "sftp"
    }
}

/// What an HTTP reply's status, `Content-Range` and validators say of a range reply, for a
/// ranged SFTP read (libcurl's `sftp://` with `CURLOPT_RANGE`), which has none of them. Pure.
///
/// libcurl `stat`s the file before it reads: a range that starts past the end fails
/// (`CURLE_BAD_DOWNLOAD_RESUME`), one that runs past it is cut at the end, and the file's
/// modification time comes with it (`CURLOPT_FILETIME`). So a read whose range reaches the end
/// of the file as held asks for one byte more: a longer file shows in the length to come, a
/// shorter one too, and the time shows any other change. The bytes delivered must then be
/// exactly the range asked: fewer are never taken as data.
enum SFTPReadCheck {
    /// The range libcurl is asked for (`CURLOPT_RANGE`, inclusive), one byte past the file's
    /// end when the range reaches it.
    static func rangeText(_ request: RangeRequest) -> String {
        let reachesEnd = request.range.upperBound >= request.expectedSize
        return "\(request.range.lowerBound)-\(request.range.upperBound - (reachesEnd ? 0 : 1))"
    }

    /// The verdict before the first byte is used. `deliverable`: the length libcurl will deliver
    /// (the range as cut at the file's end now); `modified`: the file's time now, in seconds.
    static func beforeBody(_ request: RangeRequest, deliverable: UInt64?, modified: Int64?) -> RemoteError? {
        let asked = UInt64(request.range.count)
        if let deliverable, deliverable != asked {
            // Past the end of the file as held, the one byte more was there.
            if deliverable > asked { return .changed("size was \(request.expectedSize) bytes, now more") }
            return .changed("size was \(request.expectedSize) bytes, now \(request.range.lowerBound + deliverable)")
        }
        if let held = request.validator.lastModified, let modified, held != String(modified) {
            return .changed("modified time was \(held), now \(modified) (seconds since 1970)")
        }
        return nil
    }

    /// The verdict once the transfer ended without an error of its own: `delivered` bytes came.
    static func afterBody(_ request: RangeRequest, delivered: UInt64) -> RemoteError? {
        let asked = UInt64(request.range.count)
        guard delivered != asked else { return nil }
        return .changed("a short read: \(delivered) of the \(asked) bytes asked at \(request.range.lowerBound) (the file is shorter now)")
    }

    /// The version a reply names, for a file whose version is not known yet.
    static func repliedVersion(_ request: RangeRequest, modified: Int64?) -> RemoteFileInfo {
        let date = modified.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        return RemoteFileInfo(size: request.expectedSize, validator: SFTPVersion.validator(modified: date), modified: date)
    }
}
