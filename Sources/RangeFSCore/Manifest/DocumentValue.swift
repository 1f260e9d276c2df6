/// A JSON or YAML value with the line it starts on: both formats are turned into this
/// so that one reader applies one set of entry rules and words its errors one way.
struct DocumentValue: Sendable {
    enum Kind: Sendable {
        case null
        case bool(Bool)
        /// A JSON string or a quoted YAML scalar: always text, never a number.
        case string(String)
        /// A JSON number, kept as written so integers are read exactly.
        case number(String)
        /// An unquoted YAML scalar: its type depends on the field that reads it
        /// (`size: 12` is a number, `X-Api-Version: 2` a header value).
        case plainScalar(String)
        case list([DocumentValue])
        /// Members in document order; duplicate keys are kept for the reader to reject.
        case map([DocumentMember])
    }

    var kind: Kind
    /// 1-based line where the value starts, or 0 when unknown.
    var line: Int

    /// What the value is, for messages such as `"size" must be a non-negative integer (got a list)`.
    func kindDescription(_ vocabulary: DocumentVocabulary) -> String {
        switch kind {
        case .null: "null"
        case .bool: "a boolean"
        case .string: "a string"
        case .number: "a number"
        case .plainScalar: "a scalar"
        case .list: "a list"
        case .map: vocabulary.aMap
        }
    }

    /// The text of a string or unquoted scalar; nil for anything else.
    var text: String? {
        switch kind {
        case .string(let text), .plainScalar(let text): text
        default: nil
        }
    }
}

/// How a format names its key-value collections in messages.
struct DocumentVocabulary: Sendable {
    /// "an object" in JSON, "a mapping" in YAML.
    let aMap: String

    static let json = DocumentVocabulary(aMap: "an object")
    static let yaml = DocumentVocabulary(aMap: "a mapping")
}

struct DocumentMember: Sendable {
    var key: String
    var value: DocumentValue
    /// Line of the key, which is where an editor should jump for "unknown field".
    var line: Int
}

/// A document that is not well-formed, with the line the parser stopped at.
struct DocumentSyntaxError: Error {
    let line: Int
    let reason: String
}

/// A problem with a value of a well-formed document, at the value's line.
struct LocatedProblem: Error {
    let line: Int
    let reason: String

    init(line: Int, reason: String) {
        self.line = line
        self.reason = reason
    }

    /// Runs `body` and locates the problem it reports at `line`.
    static func at<T>(_ line: Int, _ body: () throws(ManifestProblem) -> T) throws(LocatedProblem) -> T {
        do throws(ManifestProblem) {
            return try body()
        } catch {
            throw LocatedProblem(line: line, reason: error.reason)
        }
    }
}

extension DisplayText {
    /// `"text"`, for field and header names, written as they appear in JSON.
    static func doubleQuoted(_ text: some StringProtocol) -> String {
        "\"" + quoted(text).dropFirst().dropLast() + "\""
    }
}
