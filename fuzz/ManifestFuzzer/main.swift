// libFuzzer harness for the manifest parsers. Compiled into one module together with
// Sources/RangeFSCore/Manifest/*.swift (see fuzz/run.sh), so internal types are reachable.
//
// The first byte of an input picks the entry point; the rest is the manifest text (or, for
// selector 10, the body of an S3 ListObjectsV2 reply or of a WebDAV PROPFIND's multistatus).
// Besides "no crash", every accepted manifest must obey the rules all formats promise
// (valid relative paths, http/https URLs with a host, no duplicate or clashing paths),
// and every rejection must name the source.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func rangefsManifestFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let body = UnsafeBufferPointer(start: data + 1, count: size - 1)
    let text = String(decoding: body, as: UTF8.self)
    let source = "fuzz-input"
    if selector % 11 == 10 {
        // An XML reply: an S3 listing page or error, or a WebDAV multistatus.
        checkBucketListing(Data(body))
        checkWebDAVListing(Data(body))
        return 0
    }
    do {
        let manifest: Manifest
        switch selector % 11 {
        case 0: manifest = try Manifest.parsePlainText(text, source: source)
        case 1: manifest = try Manifest.parse(text, source: source)                   // sniffed
        case 2: manifest = try Manifest.parse(text, source: source, format: .json)
        case 3: manifest = try Manifest.parse(text, source: source, format: .yaml)
        case 4: manifest = try Manifest.parse(text, source: source, format: .m3u)
        case 5: manifest = try Manifest.parse(text, source: source, format: .m3u,
                                              baseURL: URL(string: "http://example.com/dir/list.m3u8"))
        case 6: manifest = try Manifest.parse(text, source: source, format: .rss)
        case 7: manifest = try Manifest.parse(text, source: source, format: .text)
        case 9: manifest = try Manifest.parse(text, source: source, format: .metalink)
        default:
            // 8: single fields on their own.
            _ = try? RemoteURLParser.parse(text)
            _ = try? EntryPath(validating: text)
            _ = PercentDecoding.decode(text)
            _ = FileNameText.sanitized(text)
            _ = DisplayText.quoted(text)
            _ = CredentialRedactor.redactingLoosely(text)
            _ = CredentialRedactor.redactingAuthority(of: text)
            _ = ManifestFormat(sniffing: text)
            return 0
        }
        check(manifest, text: text)
    } catch {
        let message = error.description
        guard message.hasPrefix(source) else {
            fatalError("a manifest error that does not name its source: \(message)")
        }
        guard error.line >= 0, error.line <= text.utf8.count + 1 else {
            fatalError("a manifest error with an impossible line \(error.line): \(message)")
        }
    }
    return 0
}

/// The rules every accepted manifest must obey, whatever its format.
private func check(_ manifest: Manifest, text: String) {
    var files = Set<[String]>()
    var directories = Set<[String]>()
    for entry in manifest.entries {
        let components = entry.path.components
        guard !components.isEmpty else { fatalError("an entry with an empty path") }
        for component in components {
            let bytes = Array(component.utf8)
            guard !bytes.isEmpty, component != ".", component != "..",
                  !bytes.contains(UInt8(ascii: "/")), !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }),
                  bytes.count <= 255 else {
                fatalError("an accepted path with a bad component: \(components)")
            }
        }
        for url in entry.urls {
            guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
                fatalError("an accepted URL with scheme \(String(describing: url.scheme))")
            }
            guard let host = url.host, !host.isEmpty else {
                fatalError("an accepted URL without a host: \(url.absoluteString)")
            }
        }
        guard Set(entry.urls.map(\.absoluteString)).count == entry.urls.count else {
            fatalError("a file with the same URL twice was accepted: \(entry.urls)")
        }
        if let pieces = entry.pieces {
            guard let size = entry.size, UInt64(pieces.count) == PieceHashes.count(forSize: size, pieceLength: pieces.pieceLength) else {
                fatalError("piece hashes that do not cover the file were accepted")
            }
        }
        guard entry.line >= 1 else { fatalError("an entry on line \(entry.line)") }
        guard files.insert(components).inserted, !directories.contains(components) else {
            fatalError("a duplicate or clashing path was accepted: \(components)")
        }
        for depth in 1..<components.count {
            let ancestor = Array(components.prefix(depth))
            guard !files.contains(ancestor) else { fatalError("a file used as a directory was accepted: \(ancestor)") }
            directories.insert(ancestor)
        }
        if let size = entry.size, size > (1 << 62) { fatalError("an absurd size was accepted: \(size)") }
        if let sha = entry.sha256, sha.utf8.count != 64 { fatalError("a malformed sha256 was accepted: \(sha)") }
        for (name, value) in entry.headers {
            if name.isEmpty || name.utf8.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") }) {
                fatalError("a malformed header name was accepted: \(name)")
            }
            if value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) {
                fatalError("a header value with CR, LF or NUL was accepted (header injection)")
            }
        }
    }
}

/// Selector 10: a ListObjectsV2 reply, the directory made of it, and the same bytes read as an
/// S3 error document. A refused page must say why; an accepted one must give a directory whose
/// children are valid, distinct names in key byte order, with every key and prefix either a
/// child, left out once with a reason, or the listed prefix's own "folder" object.
private func checkBucketListing(_ body: Data) {
    if let reply = S3ErrorReply.parse(body) {
        let request = S3FailedRequest(bucket: "b", operation: .listing(prefix: "p/"), region: "us-east-1", isSigned: true)
        let sentence = S3Failure.explain(status: 403, reply: reply, bucketRegionHeader: nil, request: request).sentence
        if sentence.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            fatalError("a control character in an error sentence: \(sentence)")
        }
    }
    let page: BucketListingPage
    do {
        page = try BucketListingPage.parse(body)
    } catch {
        if error.reason.isEmpty { fatalError("a listing refused without a reason") }
        return
    }
    if page.isTruncated != (page.nextContinuationToken != nil) || page.nextContinuationToken == "" {
        fatalError("a truncated page without a token, or a token on a complete page, was accepted")
    }
    let directory = BucketDirectory(prefix: page.prefix, pages: [page])
    var names = Set<[UInt8]>()
    var accounted = Set<[UInt8]>(directory.leftOut.map { Array($0.key.utf8) })
    accounted.insert(Array(page.prefix.utf8))
    for child in directory.children {
        if (try? EntryPath(validatingComponent: child.name)) == nil { fatalError("an invalid name was shown: \(child.name)") }
        if !names.insert(Array(child.name.utf8)).inserted { fatalError("two children named \(child.name)") }
        let expected: [UInt8]
        switch child {
        case .file(let file): expected = Array(page.prefix.utf8) + Array(file.name.utf8)
        case .directory(let sub): expected = Array(page.prefix.utf8) + Array(sub.name.utf8) + [UInt8(ascii: "/")]
        }
        if Array(child.listedKey.utf8) != expected { fatalError("a child whose key is not the prefix and its name: \(child)") }
        accounted.insert(expected)
    }
    for (a, b) in zip(directory.children, directory.children.dropFirst()) where !a.listedKey.utf8.lexicographicallyPrecedes(b.listedKey.utf8) {
        fatalError("children out of key order: \(a.name), \(b.name)")
    }
    for key in page.objects.map(\.key) + page.commonPrefixes where !accounted.contains(Array(key.utf8)) {
        fatalError("a key neither shown nor left out: \(key)")
    }
}

/// A multistatus, read as the listing of http://127.0.0.1/d/: every entry shown is a valid name,
/// once, directly below the collection, and a refusal says why.
private func checkWebDAVListing(_ body: Data) {
    let collection = URL(string: "http://127.0.0.1/d/")!
    let listing: WebDAVListing
    do {
        listing = try WebDAVListing.parse(body, url: collection, maxEntries: 1_000)
    } catch {
        if error.reason.isEmpty { fatalError("a multistatus refused without a reason") }
        return
    }
    var names = Set<[UInt8]>()
    for entry in listing.entries {
        if (try? EntryPath(validatingComponent: entry.name)) == nil { fatalError("an invalid name was shown: \(entry.name)") }
        if !names.insert(Array(entry.name.utf8)).inserted { fatalError("two entries named \(entry.name)") }
        guard entry.url.absoluteString.hasPrefix(collection.absoluteString) else {
            fatalError("an entry outside the collection: \(entry.url.absoluteString)")
        }
        if entry.isDirectory && entry.size != nil { fatalError("a directory with a size") }
    }
}
