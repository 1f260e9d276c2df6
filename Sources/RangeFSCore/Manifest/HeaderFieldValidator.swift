/// Checks the extra request headers a manifest gives, so that nothing in a manifest can
/// inject a header line or take over the headers RangeFS's own correctness depends on.
/// Messages name the header but never show its value, which is often a credential.
enum HeaderFieldValidator {
    /// Headers RangeFS sets or must control itself: a manifest's `Range` or `If-Range`
    /// would change which bytes arrive, a compressed encoding would shift every offset,
    /// and a conditional request could answer 304 with no bytes at all.
    static let reservedNames: Set<String> = [
        "range", "if-range", "accept-encoding", "te",
        "if-match", "if-none-match", "if-modified-since", "if-unmodified-since",
        "content-length", "transfer-encoding", "connection",
    ]

    static func validate(name: String, value: String) throws(ManifestProblem) {
        try validateName(name)
        let shown = DisplayText.doubleQuoted(name)
        for scalar in value.unicodeScalars {
            if scalar == "\r" || scalar == "\n" {
                throw ManifestProblem(reason: "header \(shown) has a line break (CR or LF) in its value")
            }
            // Field values are visible characters, spaces and tabs (RFC 9110 §5.5).
            if scalar != "\t", DisplayText.isControl(scalar) {
                throw ManifestProblem(reason: "header \(shown) has a control character (\(DisplayText.hex(scalar))) in its value")
            }
        }
    }

    private static func validateName(_ name: String) throws(ManifestProblem) {
        guard !name.isEmpty else { throw ManifestProblem(reason: "header name is empty") }
        let shown = DisplayText.doubleQuoted(name)
        for scalar in name.unicodeScalars where !isTokenCharacter(scalar) {
            let what = scalar == "\r" || scalar == "\n" ? "a line break (CR or LF)"
                : DisplayText.isControl(scalar) || scalar == " " ? "the character \(DisplayText.hex(scalar))"
                : "the character \(DisplayText.quoted(String(scalar)))"
            throw ManifestProblem(reason: "header name \(shown) contains \(what) (allowed: letters, digits and !#$%&'*+-.^_`|~)")
        }
        if reservedNames.contains(name.lowercased()) {
            throw ManifestProblem(reason: "header \(shown) is set by RangeFS itself and cannot be given")
        }
    }

    /// RFC 9110 `tchar`.
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.isASCII else { return false }
        return scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "!#$%&'*+-.^_`|~".unicodeScalars.contains(scalar)
    }
}
