import Yams

/// Reads a YAML manifest through Yams into the same located values as JSON.
enum YAMLDocumentParser {
    /// YAML's null spellings. Only null needs recognising: every other unquoted scalar stays
    /// text until a field reads it, so `X-Api-Version: 2` is a header value and `size: "12"`
    /// is not a size. Checked here rather than by a Yams resolver, which runs a regular
    /// expression per scalar.
    private static let nullSpellings: Set<String> = ["", "~", "null", "Null", "NULL"]

    /// Below this depth nothing is valid in a manifest, so deeper values are not converted.
    private static let maxDepth = 16

    /// The document's root value, or nil when the document is empty.
    static func parse(_ text: String) throws(DocumentSyntaxError) -> DocumentValue? {
        // Yams composes (and frees) its nodes by recursion: a deep document is refused first.
        try NestingDepthGuard.checkYAML(Array(text.utf8))
        let root: Node?
        do {
            root = try Yams.compose(yaml: text, Resolver.basic)
        } catch let error as YamlError {
            throw syntaxError(error, in: text)
        } catch {
            throw DocumentSyntaxError(line: 0, reason: "malformed YAML: \(error)")
        }
        guard let root else { return nil }
        var converter = Converter(budget: max(10_000, 4 * text.utf8.count))
        return try converter.value(of: root, depth: 0)
    }

    /// Turns Yams nodes into located values within a budget of values: an alias stands
    /// for its whole anchored value, so ten lines of aliases to aliases can stand for
    /// billions of values (a "billion laughs"), which must be refused, not walked.
    private struct Converter {
        var budget: Int

        mutating func value(of node: Node, depth: Int) throws(DocumentSyntaxError) -> DocumentValue {
            let line = node.mark?.line ?? 0
            budget -= 1
            guard budget >= 0 else {
                throw DocumentSyntaxError(line: line, reason: "YAML aliases (*name) expand the document to too many values")
            }
            guard depth < maxDepth else {
                // Shown as "a list" in the message that rejects it, which is all that matters.
                return DocumentValue(kind: .list([]), line: line)
            }
            switch node {
            case .scalar(let scalar):
                return DocumentValue(kind: kind(of: scalar), line: line)
            case .sequence(let sequence):
                var elements: [DocumentValue] = []
                elements.reserveCapacity(sequence.count)
                for element in sequence {
                    elements.append(try value(of: element, depth: depth + 1))
                }
                return DocumentValue(kind: .list(elements), line: line)
            case .mapping(let mapping):
                var members: [DocumentMember] = []
                members.reserveCapacity(mapping.count)
                for pair in mapping {
                    let member = try value(of: pair.value, depth: depth + 1)
                    members.append(DocumentMember(key: keyText(pair.key), value: member, line: pair.key.mark?.line ?? line))
                }
                return DocumentValue(kind: .map(members), line: line)
            case .alias:
                // Yams replaces aliases with the nodes they name while composing.
                return DocumentValue(kind: .null, line: line)
            }
        }
    }

    private static func kind(of scalar: Node.Scalar) -> DocumentValue.Kind {
        // The tag as written: empty unless the document gives one, such as `!!str`.
        let tag = scalar.tag.rawValue
        if tag == Tag.Name.null.rawValue { return .null }
        switch scalar.style {
        case .plain, .any:
            if tag.isEmpty, nullSpellings.contains(scalar.string) { return .null }
            return .plainScalar(scalar.string)
        case .singleQuoted, .doubleQuoted, .literal, .folded:
            return .string(scalar.string)
        }
    }

    /// Keys are text; a list or mapping used as a key gets a name no field has, so it is reported as unknown.
    private static func keyText(_ key: Node) -> String {
        if case .scalar(let scalar) = key { return scalar.string }
        return "<\(key.sequence != nil ? "list" : "mapping") used as a key>"
    }

    /// libyaml's problem texts are fixed phrases, never pieces of the document, so they are
    /// safe to show: a credential in the text cannot leak through them.
    private static func syntaxError(_ error: YamlError, in text: String) -> DocumentSyntaxError {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return DocumentSyntaxError(line: mark.line, reason: "malformed YAML: \(problem)")
        case .reader(let problem, let offset, _, _):
            return DocumentSyntaxError(line: offset.map { lineNumber(atCharacterOffset: $0, in: text) } ?? 0,
                                       reason: "malformed YAML: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.map { DisplayText.doubleQuoted($0) }.joined(separator: ", ")
            return DocumentSyntaxError(line: context.mark.line, reason: "duplicate key \(keys) in one mapping")
        default:
            return DocumentSyntaxError(line: 0, reason: "malformed YAML")
        }
    }

    private static func lineNumber(atCharacterOffset offset: Int, in text: String) -> Int {
        1 + text.prefix(offset).reduce(0) { $0 + ($1 == "\n" || $1 == "\r\n" ? 1 : 0) }
    }
}
