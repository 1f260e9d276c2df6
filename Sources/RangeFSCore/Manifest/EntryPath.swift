/// A validated relative path inside the mount, such as `podcasts/episode 1.mp3`.
///
/// Equality and hashing compare the exact UTF-8 bytes of each component, as the
/// kernel does: two names that differ only in Unicode normalization are
/// different files, not duplicates.
public struct EntryPath: Sendable, Hashable, CustomStringConvertible {
    /// Longest component Linux accepts (NAME_MAX).
    public static let maxComponentBytes = 255

    /// The components joined by "/". One string rather than an array of them: a manifest may
    /// hold 100,000 paths, and a path of up to 15 bytes then needs no allocation at all.
    private let text: String

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
        self.text = string
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
        self.text = name
    }

    /// For components already validated, such as the directory prefixes of a valid path.
    init(trustedComponents: some Sequence<String>) {
        self.text = trustedComponents.joined(separator: "/")
    }

    /// The names from the top of the mount down: ["a", "b.mp3"] for "a/b.mp3".
    public var components: [String] {
        text.utf8.split(separator: ASCII.slash).map { String(Substring($0)) }
    }

    /// The file's own name, the last component.
    public var lastComponent: String {
        guard let slash = text.utf8.lastIndex(of: ASCII.slash) else { return text }
        return String(text[text.utf8.index(after: slash)...])
    }

    /// The directories the path lies in, deepest first: "a/b", then "a" for "a/b/c.mp3".
    var enclosingDirectories: some Sequence<EntryPath> {
        sequence(state: Substring(text)) { rest -> EntryPath? in
            guard let slash = rest.utf8.lastIndex(of: ASCII.slash) else { return nil }
            rest = rest[..<slash]
            return EntryPath(trustedText: String(rest))
        }
    }

    private init(trustedText: String) {
        self.text = trustedText
    }

    public var description: String { text }

    /// Byte for byte: components never hold "/", so equal texts are equal component lists.
    public static func == (lhs: EntryPath, rhs: EntryPath) -> Bool {
        lhs.text.utf8.elementsEqual(rhs.text.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(0xFF as UInt8)  // never occurs in UTF-8, so it ends the path
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
