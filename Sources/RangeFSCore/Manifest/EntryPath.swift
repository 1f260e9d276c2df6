/// A validated relative path inside the mount, such as `podcasts/episode 1.mp3`.
///
/// Equality and hashing compare the exact UTF-8 bytes of each component, as the
/// kernel does: two names that differ only in Unicode normalization are
/// different files, not duplicates.
public struct EntryPath: Sendable, Hashable, CustomStringConvertible {
    /// Longest component Linux accepts (NAME_MAX).
    public static let maxComponentBytes = 255

    public let components: [String]

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
        let parts = bytes.split(separator: ASCII.slash, omittingEmptySubsequences: false)
        for part in parts {
            if let problem = Self.problem(withComponent: part) {
                throw EntryPathError(reason: "path \(DisplayText.quoted(string)) \(problem)")
            }
        }
        self.components = parts.map { String(Substring($0)) }
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
        self.components = [name]
    }

    /// For components already validated, such as the directory prefixes of a valid path.
    init(trustedComponents: some Sequence<String>) {
        self.components = Array(trustedComponents)
    }

    public var description: String { components.joined(separator: "/") }

    public static func == (lhs: EntryPath, rhs: EntryPath) -> Bool {
        lhs.components.count == rhs.components.count
            && zip(lhs.components, rhs.components).allSatisfy { $0.utf8.elementsEqual($1.utf8) }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(components.count)
        for component in components {
            var component = component
            component.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(0xFF as UInt8)  // never occurs in UTF-8, so it separates components
        }
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
