/// Reads a `headers` object of name → value strings, validating each header.
struct HeaderMapReader {
    let vocabulary: DocumentVocabulary

    /// `field` names the object in messages, such as `"headers"`.
    func headers(_ value: DocumentValue, field: String) throws(LocatedProblem) -> [String: String] {
        guard case .map(let members) = value.kind else {
            throw LocatedProblem(line: value.line,
                                 reason: "\(field) must be \(vocabulary.aMap) of header names to values (got \(value.kindDescription(vocabulary)))")
        }
        var headers: [String: String] = [:]
        // Header names ignore case: "accept" and "Accept" given together would both be sent.
        var seen: Set<String> = []
        for member in members {
            let shownName = DisplayText.doubleQuoted(member.key)
            guard let text = member.value.text else {
                throw LocatedProblem(line: member.value.line,
                                     reason: "header \(shownName) must be a string (got \(member.value.kindDescription(vocabulary)))")
            }
            try LocatedProblem.at(member.line) { () throws(ManifestProblem) in
                try HeaderFieldValidator.validate(name: member.key, value: text)
            }
            guard seen.insert(member.key.lowercased()).inserted else {
                throw LocatedProblem(line: member.line, reason: "header \(shownName) is given twice (header names ignore case)")
            }
            headers[member.key] = text
        }
        return headers
    }

    /// `own` over `shared`, matching names without regard to case.
    static func merging(_ own: [String: String], over shared: [String: String]) -> [String: String] {
        let overridden = Set(own.keys.map { $0.lowercased() })
        return shared.filter { !overridden.contains($0.key.lowercased()) }.merging(own) { _, mine in mine }
    }
}
