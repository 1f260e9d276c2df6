import Foundation

/// One object of a bucket listing, as the listing states it (no HEAD needed).
public struct BucketObject: Sendable, Equatable {
    /// The whole key, decoded (`photos/with space.jpg`).
    public var key: String
    public var size: UInt64
    /// As the server wrote it, quotes included (`"4e61…"`): it goes back verbatim in `If-Match`.
    public var etag: String?
    public var lastModified: Date?

    public init(key: String, size: UInt64, etag: String? = nil, lastModified: Date? = nil) {
        self.key = key
        self.size = size
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// One page of a ListObjectsV2 reply (`<ListBucketResult>`), keys and prefixes decoded. Pure:
/// the caller fetches the page and asks for the next one while `nextContinuationToken` is set.
public struct BucketListingPage: Sendable, Equatable {
    /// `<Name>`: the bucket.
    public var bucket: String?
    /// `<Prefix>`: the prefix listed, "" for the bucket's top.
    public var prefix = ""
    public var delimiter: String?
    public var startAfter: String?
    /// `<ContinuationToken>`: the token this page was asked with, if any.
    public var continuationToken: String?
    /// In the order of the reply (S3's: byte order of keys).
    public var objects: [BucketObject] = []
    /// `<CommonPrefixes><Prefix>`: the "directories", each ending in the delimiter.
    public var commonPrefixes: [String] = []
    public var isTruncated = false
    /// Set exactly when `isTruncated`: what the next request sends as `continuation-token`.
    public var nextContinuationToken: String?
    /// `<KeyCount>`: objects and common prefixes on this page, as the server counted them.
    public var keyCount: Int?
    /// True when the reply said `<EncodingType>url</EncodingType>` and the values were decoded.
    public var wasURLEncoded = false

    /// Reads one reply body.
    public static func parse(_ body: Data) throws(BucketListingError) -> BucketListingPage {
        let root: XMLElementTree
        do throws(DocumentSyntaxError) {
            root = try XMLElementTree.parseDocument(body)
        } catch {
            throw BucketListingError(.notXML, "the listing reply is not XML (line \(error.line): \(error.reason))")
        }
        switch root.name {
        case "ListBucketResult":
            return try BucketListingReader(root: root).page()
        case "Error":
            let reply = S3ErrorReply(root: root)
            throw BucketListingError(.serverError(reply), "the server answered the listing with an error: \(reply)")
        default:
            throw BucketListingError(.notAListing, "the reply is not a bucket listing: its root element is <\(root.name)>, not <ListBucketResult>")
        }
    }
}

/// Why a listing reply cannot be read.
public struct BucketListingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Not UTF-8, not well-formed XML, or XML that RangeFS never reads (DTDs).
        case notXML
        /// Well-formed XML of some other kind.
        case notAListing
        /// An S3 `<Error>` document where a listing was expected.
        case serverError(S3ErrorReply)
        /// A required field (an object's `Key` or `Size`) is missing.
        case missingField
        /// A field that must be a number, a boolean or a time is something else.
        case badValue
        /// `IsTruncated` true without a `NextContinuationToken` to ask for the rest.
        case truncatedWithoutToken
        /// An `EncodingType` other than `url`, or a value that is not valid URL encoding.
        case badEncoding
    }

    public var kind: Kind
    public var reason: String

    init(_ kind: Kind, _ reason: String) {
        self.kind = kind
        self.reason = reason
    }

    public var description: String { reason }
}

/// Turns a `<ListBucketResult>` element into a page, checking each field it uses.
private struct BucketListingReader {
    let root: XMLElementTree
    /// Whether Key, Prefix, Delimiter and StartAfter values are URL-encoded. `<EncodingType>`
    /// may come after the keys (moto writes it last), so it is read first.
    let isURLEncoded: Bool

    init(root: XMLElementTree) throws(BucketListingError) {
        self.root = root
        switch root.child("EncodingType")?.text.trimmingCharacters(in: .whitespacesAndNewlines) {
        case nil: isURLEncoded = false
        case "url"?: isURLEncoded = true
        case let other?:
            throw BucketListingError(.badEncoding, "the listing uses EncodingType \(DisplayText.quoted(other)); only 'url' is understood")
        }
    }

    func page() throws(BucketListingError) -> BucketListingPage {
        var objects: [BucketObject] = []
        for (index, contents) in root.children(named: "Contents").enumerated() {
            objects.append(try object(contents, number: index + 1))
        }
        var commonPrefixes: [String] = []
        for group in root.children(named: "CommonPrefixes") {
            for prefix in group.children(named: "Prefix") {
                commonPrefixes.append(try decoded(prefix.text, field: "CommonPrefixes/Prefix"))
            }
        }
        let token = root.child("NextContinuationToken")?.text
        let isTruncated = try truncation(hasToken: !(token ?? "").isEmpty)
        var keyCount: Int?
        if let element = root.child("KeyCount") {
            keyCount = Int(try wholeNumber(element, field: "KeyCount"))
        }
        return BucketListingPage(
            bucket: root.child("Name")?.text,
            prefix: try optionalDecoded("Prefix") ?? "",
            delimiter: try optionalDecoded("Delimiter"),
            startAfter: try optionalDecoded("StartAfter"),
            continuationToken: root.child("ContinuationToken")?.text,
            objects: objects,
            commonPrefixes: commonPrefixes,
            isTruncated: isTruncated,
            nextContinuationToken: isTruncated ? token : nil,
            keyCount: keyCount,
            wasURLEncoded: isURLEncoded)
    }

    private func object(_ contents: XMLElementTree, number: Int) throws(BucketListingError) -> BucketObject {
        guard let keyElement = contents.child("Key") else {
            throw BucketListingError(.missingField, "object \(number) of the listing has no Key")
        }
        let key = try decoded(keyElement.text, field: "Key")
        guard let sizeElement = contents.child("Size") else {
            throw BucketListingError(.missingField, "object \(DisplayText.quoted(key)) of the listing has no Size")
        }
        let size = try wholeNumber(sizeElement, field: "Size of \(DisplayText.quoted(key))")
        var modified: Date?
        if let element = contents.child("LastModified") {
            let text = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let time = ISO8601Timestamp.parse(text) else {
                throw BucketListingError(.badValue, "the LastModified of \(DisplayText.quoted(key)) is \(DisplayText.quoted(text)), not an ISO 8601 time")
            }
            modified = time.date
        }
        return BucketObject(key: key, size: size, etag: contents.child("ETag")?.text, lastModified: modified)
    }

    /// `IsTruncated` is "true" or "false"; a server that leaves it out is taken at its token.
    private func truncation(hasToken: Bool) throws(BucketListingError) -> Bool {
        let isTruncated: Bool
        switch root.child("IsTruncated")?.text.trimmingCharacters(in: .whitespacesAndNewlines) {
        case nil: isTruncated = hasToken
        case "true"?: isTruncated = true
        case "false"?: isTruncated = false
        case let other?:
            throw BucketListingError(.badValue, "the listing's IsTruncated is \(DisplayText.quoted(other)), not true or false")
        }
        if isTruncated, !hasToken {
            // A server that ignored list-type=2 answers with ListObjects (version 1) paging.
            let hint = root.child("NextMarker") != nil ? " (it pages with NextMarker: the server answered ListObjects version 1, not ListObjectsV2)" : ""
            throw BucketListingError(.truncatedWithoutToken, "the listing is truncated but gives no NextContinuationToken to ask for the rest\(hint)")
        }
        return isTruncated
    }

    /// A whole number written in decimal digits only (no sign, no spaces inside).
    private func wholeNumber(_ element: XMLElementTree, field: String) throws(BucketListingError) -> UInt64 {
        let text = element.text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = UInt64(text), value <= UInt64(Int.max) else {
            throw BucketListingError(.badValue, "the listing's \(field) is \(DisplayText.quoted(text)), not a whole number")
        }
        return value
    }

    private func optionalDecoded(_ field: String) throws(BucketListingError) -> String? {
        guard let element = root.child(field) else { return nil }
        return try decoded(element.text, field: field)
    }

    private func decoded(_ text: String, field: String) throws(BucketListingError) -> String {
        guard isURLEncoded else { return text }
        guard let value = S3URLDecoding.decode(text) else {
            throw BucketListingError(.badEncoding, "the listing's \(field) \(DisplayText.quoted(text)) is not valid URL encoding of UTF-8 text")
        }
        return value
    }
}

/// Decodes the values of a listing asked for with `encoding-type=url`: `%XX` escapes are
/// bytes of UTF-8, and `+` is a space (AWS writes `my file` as `my+file` and a real `+` as
/// `%2B`, which is how botocore reads it back, with `unquote_plus`).
enum S3URLDecoding {
    static func decode(_ text: String) -> String? {
        guard text.utf8.contains(UInt8(ascii: "+")) else { return PercentDecoding.decode(text) }
        let bytes = text.utf8.map { $0 == UInt8(ascii: "+") ? ASCII.space : $0 }
        return PercentDecoding.decode(String(decoding: bytes, as: UTF8.self))
    }
}
