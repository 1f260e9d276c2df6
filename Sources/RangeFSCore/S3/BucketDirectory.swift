import Foundation

/// One directory of a mounted bucket, made from every page of the listing of its prefix
/// (`delimiter=/`). Keys map to names as mountpoint-s3 documents it ("Mapping S3 object keys
/// to files and directories"): a key whose name would be empty, `.` or `..`, or hold a NUL or
/// a `/`, is not shown; a file and a directory of the same name show the directory; the
/// object named like the prefix itself (a `photos/` "folder" object) is the directory, not a
/// child. Names must also pass the mount's own check (`EntryPath`): no control characters,
/// at most 255 bytes. Pure: no I/O.
public struct BucketDirectory: Sendable, Equatable {
    public struct File: Sendable, Equatable {
        public var name: String
        public var key: String
        public var size: UInt64
        public var etag: String?
        public var lastModified: Date?
    }

    public struct Subdirectory: Sendable, Equatable {
        public var name: String
        /// What to list for it: the common prefix, ending in `/`.
        public var prefix: String
    }

    public enum Child: Sendable, Equatable {
        case file(File)
        case directory(Subdirectory)

        public var name: String {
            switch self {
            case .file(let file): file.name
            case .directory(let directory): directory.name
            }
        }

        /// The key or prefix the child stands for: children are ordered by its bytes.
        var listedKey: String {
            switch self {
            case .file(let file): file.key
            case .directory(let directory): directory.prefix
            }
        }
    }

    /// A key or common prefix that is not shown, with the one reason for the log.
    public struct LeftOut: Sendable, Equatable, CustomStringConvertible {
        public var key: String
        public var reason: String

        public var description: String { "\(DisplayText.quoted(key)): \(reason)" }
    }

    /// The prefix listed: "" for the bucket's top, otherwise ending in `/`.
    public var prefix: String
    /// In S3's order, the byte order of keys (a directory by its prefix, `/` included).
    public var children: [Child]
    /// Each key or prefix at most once.
    public var leftOut: [LeftOut]

    /// The directory from all pages of one prefix's listing, in the order they came.
    public init(prefix: String, pages: [BucketListingPage]) {
        self.init(prefix: prefix, objects: pages.flatMap(\.objects), commonPrefixes: pages.flatMap(\.commonPrefixes))
    }

    public init(prefix: String, objects: [BucketObject], commonPrefixes: [String]) {
        self.prefix = prefix
        var sorter = ChildSorter(prefix: prefix)
        for commonPrefix in commonPrefixes {
            sorter.addDirectory(commonPrefix)
        }
        for object in objects {
            sorter.addFile(object)
        }
        children = sorter.children.sorted { $0.listedKey.utf8.lexicographicallyPrecedes($1.listedKey.utf8) }
        leftOut = sorter.leftOut
    }
}

/// Applies the naming rules one key at a time. Names and keys are compared by their bytes,
/// as the kernel and S3 compare them: `é` and `e` + U+0301 are two names, not one.
private struct ChildSorter {
    let prefix: String
    var children: [BucketDirectory.Child] = []
    var leftOut: [BucketDirectory.LeftOut] = []
    private var directoryNames: Set<[UInt8]> = []
    /// Keys and prefixes already placed or left out: a page boundary may repeat one.
    private var seen: Set<[UInt8]> = []

    init(prefix: String) {
        self.prefix = prefix
    }

    /// Directories go first, so that a file of the same name finds its directory there.
    mutating func addDirectory(_ commonPrefix: String) {
        guard seen.insert(Array(commonPrefix.utf8)).inserted else { return }
        guard let relative = relativeName(commonPrefix) else {
            leaveOut(commonPrefix, "the server listed it under \(DisplayText.quoted(prefix)) but it does not start with that prefix")
            return
        }
        guard relative.utf8.last == ASCII.slash else {
            leaveOut(commonPrefix, "a common prefix that does not end in '/'")
            return
        }
        let name = String(decoding: relative.utf8.dropLast(), as: UTF8.self)
        if let problem = problem(with: name) {
            leaveOut(commonPrefix, problem)
            return
        }
        directoryNames.insert(Array(name.utf8))
        children.append(.directory(.init(name: name, prefix: commonPrefix)))
    }

    mutating func addFile(_ object: BucketObject) {
        guard seen.insert(Array(object.key.utf8)).inserted else { return }
        guard let name = relativeName(object.key) else {
            leaveOut(object.key, "the server listed it under \(DisplayText.quoted(prefix)) but it does not start with that prefix")
            return
        }
        if name.isEmpty {
            // The "folder" object of this very prefix (S3 consoles make them, empty). One with
            // data is said once: its bytes cannot be shown under a directory's name.
            if object.size > 0 {
                leaveOut(object.key, "an object named like its directory; its \(object.size) bytes are not shown")
            }
            return
        }
        if let problem = problem(with: name) {
            leaveOut(object.key, problem)
            return
        }
        if directoryNames.contains(Array(name.utf8)) {
            leaveOut(object.key, "a directory of the same name is shown instead")
            return
        }
        children.append(.file(.init(name: name, key: object.key, size: object.size,
                                     etag: object.etag, lastModified: object.lastModified)))
    }

    /// The key with the listed prefix taken off, or nil when it does not start with it.
    private func relativeName(_ key: String) -> String? {
        guard key.utf8.starts(with: prefix.utf8) else { return nil }
        // The prefix is whole UTF-8, so the cut falls between scalars and the bytes stay as they are.
        return String(decoding: key.utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
    }

    /// Why `name` cannot be one entry of this directory, or nil.
    private func problem(with name: String) -> String? {
        if name.isEmpty { return "its name in \(DisplayText.quoted(prefix)) would be empty (a '//' in the key)" }
        if name.utf8.contains(0) { return "its name contains a NUL byte" }
        if name.utf8.contains(ASCII.slash) {
            return "its name \(DisplayText.quoted(name)) contains '/' (the listing was not grouped by the '/' delimiter)"
        }
        do throws(EntryPathError) {
            _ = try EntryPath(validatingComponent: name)
            return nil
        } catch {
            return error.reason
        }
    }

    private mutating func leaveOut(_ key: String, _ reason: String) {
        leftOut.append(.init(key: key, reason: reason))
    }
}
