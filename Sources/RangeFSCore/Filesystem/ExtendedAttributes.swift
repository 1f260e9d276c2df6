import Foundation

/// The `user.rangefs.*` attributes: a file's URL, cache state and progress, and on the root the
/// daemon's pid and control socket (which the CLI reads to find the mount's process).
enum ExtendedAttributes {
    static let prefix = "user.rangefs."

    /// The root's attributes.
    static func ofRoot(pid: Int32, controlSocketPath: String?) -> [String: String] {
        var attributes = [prefix + "pid": String(pid)]
        attributes[prefix + "control"] = controlSocketPath
        return attributes
    }

    /// A file's attributes. `state` is the state's raw value as `rangefs status` shows it.
    static func ofFile(_ status: FileStatus) -> [String: String] {
        var attributes = [
            prefix + "url": status.url,
            prefix + "state": status.state.rawValue,
            prefix + "cached": String(status.cachedBytes),
        ]
        if let size = status.size {
            attributes[prefix + "progress"] = progress(cachedBytes: status.cachedBytes, size: size)
        }
        attributes[prefix + "error"] = status.failure
        // One line per source, its URL first: `URL ok 1.2 MiB/s`, `URL dropped: why` …
        attributes[prefix + "sources"] = status.sources.map { $0.map(\.summary).joined(separator: "\n") + "\n" }
        return attributes
    }

    /// Percent cached, one decimal; an empty file is all there.
    static func progress(cachedBytes: UInt64, size: UInt64) -> String {
        let percent = size == 0 ? 100 : Double(cachedBytes) * 100 / Double(size)
        return String(format: "%.1f", percent)
    }

    /// Why `name` cannot be one of ours, decided from the name alone (so `ls -l`, which asks
    /// every file for its ACL and label, costs no look at the file): nil when it may be.
    static func refusal(of name: String) -> FilesystemError? {
        guard name.hasPrefix("user.") else { return FilesystemError(.attributeNamespaceUnsupported) }
        guard name.hasPrefix(prefix) else { return FilesystemError(.noSuchAttribute) }
        return nil
    }

    static func value(named name: String, in attributes: [String: String]) -> Result<[UInt8], FilesystemError> {
        if let refusal = refusal(of: name) { return .failure(refusal) }
        guard let value = attributes[name] else { return .failure(FilesystemError(.noSuchAttribute)) }
        return .success(Array(value.utf8))
    }

    /// The names as `listxattr` returns them: sorted, each ending in a NUL byte.
    static func nameList(_ attributes: [String: String]) -> [UInt8] {
        attributes.keys.sorted().flatMap { name -> [UInt8] in Array(name.utf8) + [0] }
    }
}

/// The answer to `getxattr` or `listxattr`: with a buffer size of 0 the caller asks only how
/// big the value is.
public enum AttributeAnswer: Sendable, Equatable {
    case size(Int)
    case bytes([UInt8])

    static func fitting(_ value: [UInt8], into bufferSize: Int) -> Result<AttributeAnswer, FilesystemError> {
        if bufferSize == 0 { return .success(.size(value.count)) }
        guard value.count <= bufferSize else { return .failure(FilesystemError(.attributeBufferTooSmall(needed: value.count))) }
        return .success(.bytes(value))
    }
}
