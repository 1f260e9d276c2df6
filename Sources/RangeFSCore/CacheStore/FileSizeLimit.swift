/// The largest remote file a mount accepts: 2^50 bytes (1 PiB). Every size that makes a file —
/// a HEAD's `Content-Length`, a `206`'s `Content-Range` total, a listing's or a manifest's
/// stated size, a bucket's `<Size>`, a record in the cache database — is checked against it
/// where it becomes a file (`LoadedFiles`); a larger one is refused for that file alone
/// (`FetchError.Reason.tooLarge`, EFBIG). Far above any real file, and low enough that an
/// offset plus a length, a block number times the block size or `st_blocks` never overflow
/// 64 bits, and that JSON readers (doubles) show every size exactly.
public enum FileSizeLimit {
    public static let largest: UInt64 = 1 << 50

    /// The largest block size `--block-size` takes; a record with another is not sound.
    public static let largestBlockSize: UInt64 = 64 << 20

    /// The limit as `--help`, the README and error messages say it.
    public static let shown = "1 PiB (2^50 bytes)"

    public static func accepts(_ size: UInt64) -> Bool {
        size <= largest
    }
}

extension CachedFileRecord {
    /// Whether the record's numbers can describe a cached file. The database is read as a
    /// server's reply is: a damaged or edited one, or a size kept by a build that accepted
    /// larger files, must not crash the mount (the record is dropped and the file asked again).
    var isWithinLimits: Bool {
        FileSizeLimit.accepts(size) && blockSize > 0 && blockSize <= FileSizeLimit.largestBlockSize
    }
}
