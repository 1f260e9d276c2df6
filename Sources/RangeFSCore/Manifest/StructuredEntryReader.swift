import Foundation

/// Turns one JSON or YAML entry into a `ManifestEntry`:
///
///     {"url": "https://h/a.mp3", "path": "music/a.mp3", "size": 1234,
///      "sha256": "…64 hex digits…", "headers": {"Authorization": "…"},
///      "mtime": "2024-05-01T12:00:00Z"}
///
/// Only `url` is required; a bare URL string is short for `{"url": …}`. A file served by
/// several mirrors gives `"urls": ["https://best/a.iso", "https://other/a.iso"]` instead,
/// best first (never both, so which URL comes first is never a guess). Unknown fields
/// are errors, so a misspelt `"szie"` cannot silently drop a size check.
struct StructuredEntryReader {
    static let fieldNames = ["url", "urls", "path", "size", "sha256", "headers", "mtime"]
    /// Sizes are kept well inside `off_t` so offset arithmetic can never overflow.
    static let maxSize: UInt64 = 1 << 62
    /// 9999-12-31T23:59:59Z, the last instant ISO 8601's four-digit years can write.
    static let maxUnixSeconds = 253_402_300_799.0

    /// Headers for every entry, already validated; an entry's own headers override them.
    let sharedHeaders: [String: String]
    let vocabulary: DocumentVocabulary

    func entry(from value: DocumentValue) throws(LocatedProblem) -> ManifestEntry {
        let members: [DocumentMember]
        switch value.kind {
        case .map(let fields):
            members = fields
        case .string(let text), .plainScalar(let text):
            let url = try LocatedProblem.at(value.line) { () throws(ManifestProblem) in try RemoteURLParser.parse(text) }
            let path = try LocatedProblem.at(value.line) { () throws(ManifestProblem) in try Self.name(from: url) }
            return ManifestEntry(path: path, url: url, headers: sharedHeaders, line: value.line)
        default:
            throw LocatedProblem(line: value.line, reason: "expected \(vocabulary.aMap) with \"url\", or a URL string (got \(value.kindDescription(vocabulary)))")
        }
        let fields = try Self.fieldsByName(members)

        let (urls, urlMember) = try sources(fields, entryLine: value.line)
        let url = urls[0]

        let path: EntryPath
        if let member = fields["path"], !member.value.isNull {
            let pathText = try text(of: member, expected: "a string")
            path = try LocatedProblem.at(member.value.line) { () throws(ManifestProblem) in
                do throws(EntryPathError) {
                    return try EntryPath(validating: pathText)
                } catch {
                    throw ManifestProblem(reason: error.reason)
                }
            }
        } else {
            path = try LocatedProblem.at(urlMember.value.line) { () throws(ManifestProblem) in try Self.name(from: url) }
        }

        var entry = ManifestEntry(path: path, url: url, headers: sharedHeaders, line: value.line)
        entry.mirrors = Array(urls.dropFirst())
        if let member = fields["size"], !member.value.isNull { entry.size = try size(member) }
        if let member = fields["sha256"], !member.value.isNull { entry.sha256 = try sha256(member) }
        if let member = fields["mtime"], !member.value.isNull { entry.modified = try modified(member) }
        if let member = fields["headers"], !member.value.isNull {
            let own = try HeaderMapReader(vocabulary: vocabulary).headers(member.value, field: "\"headers\"")
            entry.headers = HeaderMapReader.merging(own, over: sharedHeaders)
        }
        return entry
    }

    /// The file's URLs, best first, from `url` or `urls`, and the member that gave them.
    private func sources(_ fields: [String: DocumentMember], entryLine: Int) throws(LocatedProblem) -> ([URL], DocumentMember) {
        let single = fields["url"].flatMap { $0.value.isNull ? nil : $0 }
        let list = fields["urls"].flatMap { $0.value.isNull ? nil : $0 }
        if let single, let list {
            throw LocatedProblem(line: max(single.line, list.line), reason: "give either \"url\" or \"urls\", not both")
        }
        if let single {
            let text = try text(of: single, expected: "a string")
            return ([try LocatedProblem.at(single.value.line) { () throws(ManifestProblem) in try RemoteURLParser.parse(text) }], single)
        }
        guard let list else { throw LocatedProblem(line: entryLine, reason: "missing \"url\"") }
        guard case .list(let values) = list.value.kind else { throw wrongKind(list, expected: "a list of URL strings") }
        guard !values.isEmpty else { throw LocatedProblem(line: list.value.line, reason: "\"urls\" is empty (give at least one URL)") }
        var urls: [URL] = []
        var seen = Set<String>()
        for value in values {
            guard let text = value.text else {
                throw LocatedProblem(line: value.line, reason: "\"urls\" must hold URL strings (got \(value.kindDescription(vocabulary)))")
            }
            let url = try LocatedProblem.at(value.line) { () throws(ManifestProblem) in try RemoteURLParser.parse(text) }
            guard seen.insert(url.absoluteString).inserted else {
                throw LocatedProblem(line: value.line, reason: "\"urls\" lists \(DisplayText.quoted(url.redactedForDisplay)) twice")
            }
            urls.append(url)
        }
        return (urls, list)
    }

    /// Members by name, rejecting unknown and repeated ones.
    private static func fieldsByName(_ members: [DocumentMember]) throws(LocatedProblem) -> [String: DocumentMember] {
        var fields: [String: DocumentMember] = [:]
        for member in members {
            guard fieldNames.contains(member.key) else {
                throw LocatedProblem(line: member.line, reason: UnknownFieldMessage.text(member.key, expected: fieldNames))
            }
            guard fields[member.key] == nil else {
                throw LocatedProblem(line: member.line, reason: "duplicate field \(DisplayText.doubleQuoted(member.key))")
            }
            fields[member.key] = member
        }
        return fields
    }

    /// Named after the URL like a plain-text line, with advice that fits this format.
    private static func name(from url: URL) throws(ManifestProblem) -> EntryPath {
        do throws(ManifestProblem) {
            return try EntryNameFromURL.path(for: url)
        } catch {
            // EntryNameFromURL's advice is worded for plain text; here the path is a field.
            let plainTextAdvice = " (give a path: path<TAB>url)"
            guard error.reason.hasSuffix(plainTextAdvice) else { throw error }
            throw ManifestProblem(reason: error.reason.dropLast(plainTextAdvice.count) + " (give a \"path\")")
        }
    }

    // MARK: Fields

    private func text(of member: DocumentMember, expected: String) throws(LocatedProblem) -> String {
        guard let text = member.value.text else {
            throw wrongKind(member, expected: expected)
        }
        return text
    }

    private func size(_ member: DocumentMember) throws(LocatedProblem) -> UInt64 {
        let literal: String
        switch member.value.kind {
        case .number(let text), .plainScalar(let text): literal = text
        default: throw wrongKind(member, expected: "a non-negative integer")
        }
        let mustBe = LocatedProblem(line: member.value.line, reason: "\"size\" must be a non-negative integer")
        guard !literal.isEmpty, literal.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else { throw mustBe }
        guard let size = UInt64(literal), size <= Self.maxSize else {
            throw LocatedProblem(line: member.value.line, reason: "\"size\" must be at most \(Self.maxSize) (2^62)")
        }
        return size
    }

    private func sha256(_ member: DocumentMember) throws(LocatedProblem) -> String {
        let digest = try text(of: member, expected: "a string of 64 hexadecimal digits")
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ $0.isHexDigit }) else {
            throw LocatedProblem(line: member.value.line, reason: "\"sha256\" must be 64 hexadecimal digits")
        }
        return digest.lowercased()
    }

    private func modified(_ member: DocumentMember) throws(LocatedProblem) -> Date {
        let written: String
        switch member.value.kind {
        case .number(let text), .string(let text), .plainScalar(let text): written = text
        default: throw wrongKind(member, expected: "an ISO 8601 date-time or unix seconds")
        }
        let mustBe = LocatedProblem(line: member.value.line,
                                    reason: "\"mtime\" must be an ISO 8601 date-time (2024-05-01T12:00:00Z) or unix seconds")
        if written.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) || $0 == "." }), let seconds = Double(written) {
            guard seconds <= Self.maxUnixSeconds else { throw mustBe }
            return Date(timeIntervalSince1970: seconds)
        }
        guard let timestamp = ISO8601Timestamp.parse(written) else { throw mustBe }
        return timestamp.date
    }

    private func wrongKind(_ member: DocumentMember, expected: String) -> LocatedProblem {
        LocatedProblem(line: member.value.line,
                       reason: "\(DisplayText.doubleQuoted(member.key)) must be \(expected) (got \(member.value.kindDescription(vocabulary)))")
    }
}

extension DocumentValue {
    /// JSON `null` or an empty YAML value: read as "not given" for optional fields.
    var isNull: Bool {
        if case .null = kind { return true }
        return false
    }
}

private extension UInt8 {
    var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}
