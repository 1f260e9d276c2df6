import Foundation

/// Turns one scanned Metalink `<file>` into a `ManifestEntry`, or says precisely what is wrong
/// with it and on which line.
struct MetalinkFileReader {
    let version: MetalinkManifestParser.Version

    /// RFC 5854: priorities run from 1 (best) to 999999; a `<url>` without one comes last.
    static let priorities: ClosedRange<UInt64> = 1...999_999
    /// Metalink 3.0: preferences run from 0 to 100 (best); a `<url>` without one comes last.
    static let preferences: ClosedRange<UInt64> = 0...100

    func entry(for file: MetalinkFileScan) throws(LocatedProblem) -> ManifestEntry {
        guard let name = file.name else {
            throw LocatedProblem(line: file.line, reason: "<file> has no name attribute")
        }
        let path = try LocatedProblem.at(file.line) { () throws(ManifestProblem) in
            do throws(EntryPathError) {
                return try EntryPath(validating: name)
            } catch {
                throw ManifestProblem(reason: error.reason)
            }
        }
        let urls = try sources(file.urls)
        guard let best = urls.first else {
            throw LocatedProblem(line: file.line, reason: "no http or https <url> (other sources, such as ftp and torrents, are not used)")
        }
        var entry = ManifestEntry(path: path, url: best, line: file.line)
        entry.mirrors = Array(urls.dropFirst())
        entry.size = try size(file.sizes)
        entry.sha256 = try sha256(file.hashes)
        entry.pieces = try pieces(file.pieces, size: entry.size, fileLine: file.line)
        return entry
    }

    // MARK: URLs

    /// The http(s) URLs, best first; equal priorities keep the document's order.
    private func sources(_ urls: [MetalinkText]) throws(LocatedProblem) -> [URL] {
        var ranked: [(rank: UInt64, url: URL)] = []
        var lines: [String: Int] = [:]
        for element in urls {
            // A 3.0 `type="bittorrent"` URL names a .torrent file, even over http.
            if let type = element.attributes["type"], !RemoteURLParser.supportedSchemes.contains(Self.trimmed(type).lowercased()) {
                continue
            }
            let text = Self.trimmed(element.text)
            guard Self.scheme(of: text).map({ RemoteURLParser.supportedSchemes.contains($0.lowercased()) }) ?? true else { continue }
            let url = try LocatedProblem.at(element.line) { () throws(ManifestProblem) in try RemoteURLParser.parse(text) }
            if let earlier = lines.updateValue(element.line, forKey: url.absoluteString) {
                throw LocatedProblem(line: element.line,
                                     reason: "URL \(DisplayText.quoted(url.redactedForDisplay)) is listed twice (first on line \(earlier))")
            }
            ranked.append((try rank(element), url))
        }
        return ranked.enumerated()
            .sorted { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }
            .map(\.element.url)
    }

    /// Lower ranks first: a 4 priority as it is, a 3.0 preference turned around.
    private func rank(_ element: MetalinkText) throws(LocatedProblem) -> UInt64 {
        switch version {
        case .v4:
            guard let written = element.attributes["priority"] else { return Self.priorities.upperBound + 1 }
            return try number(written, in: Self.priorities, what: "priority", line: element.line)
        case .v3:
            guard let written = element.attributes["preference"] else { return Self.preferences.upperBound + 1 }
            return Self.preferences.upperBound - (try number(written, in: Self.preferences, what: "preference", line: element.line))
        }
    }

    /// `http` for `http://h/a`; nil when the text does not start with a scheme (RFC 3986:
    /// a letter, then letters, digits, "+", "-" or ".", then ":").
    private static func scheme(of text: String) -> Substring? {
        guard let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon]
        let isLetter = { (byte: UInt8) in (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        guard let first = scheme.utf8.first, isLetter(first),
              scheme.utf8.allSatisfy({ isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || "+-.".utf8.contains($0) })
        else { return nil }
        return scheme
    }

    // MARK: Size and hashes

    private func size(_ sizes: [MetalinkText]) throws(LocatedProblem) -> UInt64? {
        guard let element = sizes.first else { return nil }
        if sizes.count > 1 { throw LocatedProblem(line: sizes[1].line, reason: "<size> is given twice") }
        return try number(element.text, in: 0...StructuredEntryReader.maxSize, what: "<size>", line: element.line)
    }

    /// The `sha-256` hash; other types (md5, sha-1, sha-512…) are ignored.
    private func sha256(_ hashes: [MetalinkText]) throws(LocatedProblem) -> String? {
        var found: (digest: String, line: Int)?
        for element in hashes where Self.isSHA256(element.attributes["type"]) {
            let digest = try Self.hexDigest(element)
            if let found, found.digest != digest {
                throw LocatedProblem(line: element.line, reason: "a second, different sha-256 <hash> (the first is on line \(found.line))")
            }
            found = found ?? (digest, element.line)
        }
        return found?.digest
    }

    /// The `sha-256` `<pieces>`, whose hashes must cover the whole file.
    private func pieces(_ all: [MetalinkPiecesScan], size: UInt64?, fileLine: Int) throws(LocatedProblem) -> PieceHashes? {
        let usable = all.filter { Self.isSHA256($0.attributes["type"]) }
        guard let pieces = usable.first else { return nil }
        if usable.count > 1 { throw LocatedProblem(line: usable[1].line, reason: "a second sha-256 <pieces>") }
        let length = try number(pieces.attributes["length"] ?? "", in: 1...StructuredEntryReader.maxSize,
                                what: "<pieces length>", line: pieces.line)
        guard let size else {
            throw LocatedProblem(line: pieces.line, reason: "<pieces> needs the file's <size> (to know how many pieces there are)")
        }
        var digests: [String] = []
        digests.reserveCapacity(pieces.hashes.count)
        for (index, element) in pieces.hashes.enumerated() {
            // Metalink 3.0 numbers its piece hashes; they must come in order.
            if let piece = element.attributes["piece"], Self.trimmed(piece) != String(index) {
                throw LocatedProblem(line: element.line, reason: "<hash piece=\"\(piece)\"> is out of order (expected piece \(index))")
            }
            digests.append(try Self.hexDigest(element))
        }
        let expected = PieceHashes.count(forSize: size, pieceLength: length)
        guard UInt64(digests.count) == expected else {
            throw LocatedProblem(line: pieces.line, reason: "<pieces> has \(digests.count) \(digests.count == 1 ? "hash" : "hashes"), but \(size) bytes in pieces of \(length) need \(expected)")
        }
        return PieceHashes(pieceLength: length, hexDigests: digests)
    }

    /// Metalink 4 writes `sha-256` (IANA's name), 3.0 writes `sha256`.
    private static func isSHA256(_ type: String?) -> Bool {
        guard let type else { return false }
        let name = trimmed(type).lowercased()
        return name == "sha-256" || name == "sha256"
    }

    private static func hexDigest(_ element: MetalinkText) throws(LocatedProblem) -> String {
        let digest = trimmed(element.text)
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ PercentDecoding.hexValue($0) != nil }) else {
            throw LocatedProblem(line: element.line, reason: "a sha-256 <hash> must be 64 hexadecimal digits")
        }
        return digest.lowercased()
    }

    private func number(_ written: String, in range: ClosedRange<UInt64>, what: String, line: Int) throws(LocatedProblem) -> UInt64 {
        let digits = Self.trimmed(written)
        guard !digits.isEmpty, digits.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }),
              let value = UInt64(digits), range.contains(value)
        else {
            throw LocatedProblem(line: line, reason: "\(what) must be a whole number from \(range.lowerBound) to \(range.upperBound) (got \(DisplayText.quoted(digits)))")
        }
        return value
    }

    private static func trimmed(_ text: String) -> String {
        String(TextTrimming.trimmed(text))
    }
}
