/// A validated relative path inside the mount, such as `podcasts/episode 1.mp3`.
///
/// Equality and hashing compare the exact UTF-8 bytes of each component, as the
/// kernel does: two names that differ only in Unicode normalization are
/// different files, not duplicates.
public struct EntryPath: Sendable, Hashable, CustomStringConvertible {
    /// Longest component Linux accepts (NAME_MAX).
    public static let maxComponentBytes = 255

    /// The components joined by "/", kept as the directories' part and the name: a manifest may
    /// hold 100,000 paths, whose entries then share the directories' part, and a name of up to
    /// 15 bytes needs no allocation at all.
    private var text: SharedPrefixText

    public init(validating string: String) throws(EntryPathError) {
        guard !string.isEmpty else { throw EntryPathError(reason: "path is empty") }
        let bytes = string.utf8
        if bytes.first == ASCII.slash {
            throw EntryPathError(reason: "path \(DisplayText.quoted(string)) is absolute (paths are relative to the mount)")
        }
        if bytes.last == ASCII.slash {
            throw EntryPathError(reason: "path \(DisplayText.quoted(string)) ends with '/'")
        }
        // Split the bytes, not Characters: a combining mark after "/" must not hide the separator.
        for part in bytes.split(separator: ASCII.slash, omittingEmptySubsequences: false) {
            if let problem = Self.problem(withComponent: part) {
                throw EntryPathError(reason: "path \(DisplayText.quoted(string)) \(problem)")
            }
        }
        self.text = SharedPrefixText(string)
    }

    /// A one-component path, for names that must not be split at "/" (such as a name taken from a URL).
    init(validatingComponent name: String) throws(EntryPathError) {
        if name.isEmpty { throw EntryPathError(reason: "name is empty") }
        if name.utf8.contains(ASCII.slash) {
            throw EntryPathError(reason: "name \(DisplayText.quoted(name)) contains '/'")
        }
        if let problem = Self.problem(withComponent: Substring(name).utf8) {
            throw EntryPathError(reason: "name \(DisplayText.quoted(name)) \(problem)")
        }
        self.text = SharedPrefixText(name)
    }

    /// For components already validated, such as the directory prefixes of a valid path.
    init(trustedComponents: some Sequence<String>) {
        self.text = SharedPrefixText(trustedComponents.joined(separator: "/"))
    }

    /// The names from the top of the mount down: ["a", "b.mp3"] for "a/b.mp3".
    public var components: [String] {
        description.utf8.split(separator: ASCII.slash).map { String(Substring($0)) }
    }

    /// The file's own name, the last component.
    public var lastComponent: String { text.rest }

    /// The directories the path lies in, deepest first: "a/b", then "a" for "a/b/c.mp3".
    var enclosingDirectories: some Sequence<EntryPath> {
        // The prefix is "" or ends with "/": "a/b/", then "a/".
        sequence(state: Substring(text.prefix)) { pending -> EntryPath? in
            guard pending.utf8.last == ASCII.slash else { return nil }
            let directory = pending[..<pending.utf8.index(before: pending.utf8.endIndex)]
            pending = directory.utf8.lastIndex(of: ASCII.slash).map { directory[...$0] } ?? ""
            return EntryPath(trustedText: String(directory))
        }
    }

    private init(trustedText: String) {
        self.text = SharedPrefixText(trustedText)
    }

    public var description: String { text.description }

    /// Byte for byte: components never hold "/", so equal texts are equal component lists.
    public static func == (lhs: EntryPath, rhs: EntryPath) -> Bool {
        lhs.text == rhs.text
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(text)
    }

    /// Takes the copy of its directories' part that `prefixes` holds (see `SharedPrefixText`).
    mutating func sharePrefix(in prefixes: inout SharedPrefixes) {
        text.sharePrefix(in: &prefixes)
    }

    /// What is wrong with one component, phrased to follow "path 'x' ", or nil if it is fine.
    private static func problem(withComponent bytes: Substring.UTF8View) -> String? {
        if bytes.isEmpty { return "has an empty component" }
        if bytes.elementsEqual(".".utf8) { return "contains '.'" }
        if bytes.elementsEqual("..".utf8) { return "contains '..'" }
        // Bytes below 0x80 occur in UTF-8 only as themselves, so a byte check is exact.
        if let control = bytes.first(where: ASCII.isControl) {
            return "contains a control character (\(DisplayText.hex(Unicode.Scalar(control))))"
        }
        if bytes.count > maxComponentBytes {
            return "has a component of \(bytes.count) bytes (at most \(maxComponentBytes))"
        }
        return nil
    }
}

/// Why a string is not a valid `EntryPath`.
public struct EntryPathError: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
