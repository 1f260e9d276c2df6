/// Reads a JSON or YAML manifest, in either of two shapes:
///
///     [ {"url": "https://h/a.mp3"}, … ]
///     {"headers": {"Authorization": "Bearer …"}, "entries": [ … ]}
///
/// Top-level headers go to every entry. Errors name the entry by its position and the
/// line of the offending value: `collection.json:12: entry 3: "size" must be …`.
struct StructuredManifestReader {
    static let topLevelFieldNames = ["entries", "headers"]

    let source: String
    let vocabulary: DocumentVocabulary

    static func json(source: String) -> StructuredManifestReader {
        StructuredManifestReader(source: source, vocabulary: .json)
    }

    static func yaml(source: String) -> StructuredManifestReader {
        StructuredManifestReader(source: source, vocabulary: .yaml)
    }

    /// `root` is nil for an empty YAML document.
    func read(_ root: DocumentValue?) throws(ManifestError) -> Manifest {
        let shapes = "a list of entries or \(vocabulary.aMap) with \"entries\""
        guard let root else {
            throw ManifestError(source: source, line: 0, reason: "the document is empty (expected \(shapes))")
        }
        let entries: [DocumentValue]
        let sharedHeaders: [String: String]
        do throws(LocatedProblem) {
            (entries, sharedHeaders) = try topLevel(root, shapes: shapes)
        } catch {
            throw ManifestError(source: source, line: error.line, reason: error.reason)
        }

        let reader = StructuredEntryReader(sharedHeaders: sharedHeaders, vocabulary: vocabulary)
        var collector = ManifestEntryCollector(expectedCount: entries.count)
        for (offset, value) in entries.enumerated() {
            do throws(LocatedProblem) {
                let entry = try reader.entry(from: value)
                try LocatedProblem.at(entry.line) { () throws(ManifestProblem) in try collector.add(entry) }
            } catch {
                throw ManifestError(source: source, line: error.line, reason: "entry \(offset + 1): \(error.reason)")
            }
        }
        return Manifest(source: source, entries: collector.entries)
    }

    private func topLevel(_ root: DocumentValue, shapes: String) throws(LocatedProblem) -> ([DocumentValue], [String: String]) {
        switch root.kind {
        case .list(let entries):
            return (entries, [:])
        case .map(let members):
            var entries: [DocumentValue]?
            var headers: [String: String]?
            for member in members {
                switch member.key {
                case "entries":
                    guard entries == nil else { throw duplicate(member) }
                    guard case .list(let list) = member.value.kind else {
                        throw LocatedProblem(line: member.value.line,
                                             reason: "\"entries\" must be a list (got \(member.value.kindDescription(vocabulary)))")
                    }
                    entries = list
                case "headers":
                    guard headers == nil else { throw duplicate(member) }
                    headers = try HeaderMapReader(vocabulary: vocabulary).headers(member.value, field: "top-level \"headers\"")
                default:
                    throw LocatedProblem(line: member.line,
                                         reason: UnknownFieldMessage.text(member.key, expected: Self.topLevelFieldNames, kind: "top-level field"))
                }
            }
            guard let entries else {
                throw LocatedProblem(line: root.line, reason: "missing \"entries\" (expected \(shapes))")
            }
            return (entries, headers ?? [:])
        default:
            throw LocatedProblem(line: root.line, reason: "expected \(shapes) (got \(root.kindDescription(vocabulary)))")
        }
    }

    private func duplicate(_ member: DocumentMember) -> LocatedProblem {
        LocatedProblem(line: member.line, reason: "duplicate top-level field \(DisplayText.doubleQuoted(member.key))")
    }
}
