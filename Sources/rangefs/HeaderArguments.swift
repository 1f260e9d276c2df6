import ArgumentParser
import Foundation
import RangeFSCore

/// `--header 'Name: value'` arguments as a dictionary, checked by the rules manifest headers
/// follow. Messages name the header, never its value: it may be a token.
enum HeaderArguments {
    static func parse(_ arguments: [String]) throws(ValidationError) -> [String: String] {
        var headers: [String: String] = [:]
        var seen: Set<String> = []
        for argument in arguments {
            guard let colon = argument.firstIndex(of: ":") else {
                throw ValidationError("--header must look like 'Name: value'")
            }
            let name = argument[..<colon].trimmingCharacters(in: .whitespaces)
            let value = argument[argument.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if let problem = Manifest.headerProblem(name: name, value: value) {
                throw ValidationError("--header: \(problem)")
            }
            // Header names ignore case: two spellings of one name would both be sent.
            guard seen.insert(name.lowercased()).inserted else {
                throw ValidationError("--header '\(name)' is given twice (header names ignore case)")
            }
            headers[name] = value
        }
        return headers
    }

    /// One `Name: value` line a header: how the headers reach the background mount process.
    static func lines(_ headers: [String: String]) -> String {
        headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\n" }.joined()
    }
}
