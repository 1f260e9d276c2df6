import Foundation

/// Reads a podcast RSS feed: one file per `<item>` that has an `<enclosure>`, in feed order,
/// named `2024-10-01 Title.mp3` from its `<pubDate>` and `<title>`. The date is the day as
/// the feed writes it, so names do not change with the reader's time zone; it also becomes
/// the file's modification time. Items without an enclosure (announcements) are skipped.
struct RSSManifestParser {
    let source: String

    func parse(_ text: String) throws(ManifestError) -> Manifest {
        let feed = try Manifest.document(source: source) { () throws(DocumentSyntaxError) in try RSSFeedScan.scan(text) }
        let items = feed.items.filter { $0.enclosure != nil }
        guard !items.isEmpty else { throw noEnclosures(feed) }

        var collector = ManifestEntryCollector(expectedCount: items.count)
        var namer = UniqueFileNamer()
        for item in items {
            let line = item.enclosure?.line ?? item.line
            do throws(ManifestProblem) {
                try collector.add(try Self.entry(for: item, namer: &namer))
            } catch {
                throw ManifestError(source: source, line: line, reason: "item \(item.number): \(error.reason)")
            }
        }
        return Manifest(source: source, entries: collector.entries)
    }

    private static func entry(for item: RSSItem, namer: inout UniqueFileNamer) throws(ManifestProblem) -> ManifestEntry {
        guard let enclosure = item.enclosure,
              let urlText = enclosure.url.map({ String(TextTrimming.trimmed($0)) }), !urlText.isEmpty
        else { throw ManifestProblem(reason: "<enclosure> has no url attribute") }
        // Feeds put raw spaces in enclosure URLs; the attribute holds nothing else, so they are part of it.
        let url = try RemoteURLParser.parse(urlText.contains(" ") ? urlText.replacingOccurrences(of: " ", with: "%20") : urlText)
        let published = item.pubDate.flatMap { RFC822Date.parse($0) ?? ISO8601Timestamp.parse(TextTrimming.trimmed($0)) }
        let fileExtension = URLFileName.fileExtension(of: url) ?? enclosure.type.flatMap(MediaTypeExtension.fileExtension(forMediaType:))
        let parts = try nameParts(item: item, url: url, day: published?.day, fileExtension: fileExtension)
        var entry = ManifestEntry(path: try namer.name(for: parts), url: url, line: enclosure.line)
        entry.size = enclosure.length.flatMap(Self.size)
        entry.modified = published?.date
        return entry
    }

    /// `date title.ext`, falling back to the URL's file name when the item has no title.
    private static func nameParts(item: RSSItem, url: URL, day: CivilDate?, fileExtension: String?) throws(ManifestProblem) -> FileNameParts {
        let datePrefix = day?.isoText
        if let title = (item.title ?? item.itunesTitle).flatMap(FileNameText.sanitized) {
            let named = [datePrefix, title].compactMap { $0 }.joined(separator: " ")
            return FileNameParts(title: named, fileExtension: fileExtension)
        }
        if let fileName = URLFileName.sanitizedLastSegment(of: url) {
            var parts = FileNameParts(fileName: fileName)
            parts.stem = [datePrefix, parts.stem].compactMap { $0 }.joined(separator: " ")
            if parts.fileExtension == nil { parts.fileExtension = fileExtension }
            return parts
        }
        if let datePrefix { return FileNameParts(title: datePrefix, fileExtension: fileExtension) }
        throw ManifestProblem(reason: "cannot name the file for \(DisplayText.quoted(url.redactedForDisplay)): the item has no title and the URL has no file name")
    }

    /// Many feeds write `length="0"` or junk: only a positive whole number is a size.
    private static func size(_ length: String) -> UInt64? {
        let digits = TextTrimming.trimmed(length)
        guard !digits.isEmpty, digits.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }),
              let size = UInt64(digits), size > 0, size <= StructuredEntryReader.maxSize
        else { return nil }
        return size
    }

    private func noEnclosures(_ feed: RSSFeedScan) -> ManifestError {
        var reason = feed.items.isEmpty ? "the feed has no <item>" : "no <item> in the feed has an <enclosure>"
        reason += " (nothing to mount)"
        if let root = feed.rootElement, root != "rss", root != "rdf:RDF" {
            reason += "; the root element is <\(root)>, and only RSS feeds are read"
        }
        return ManifestError(source: source, line: 0, reason: reason)
    }
}
