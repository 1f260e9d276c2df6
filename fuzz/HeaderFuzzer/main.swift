// libFuzzer harness for the response-header parsing RangeFS does itself: `Content-Range`
// (206 and the `bytes */total` of a 416), the strict header numbers behind
// `Content-Length`-like and `Retry-After` seconds, byte sizes given on the command line,
// and the whitespace trimming they share. Compiled into one module with those sources
// (see fuzz/run.sh). Each parse is checked against a property, not only for crashes.

@_cdecl("LLVMFuzzerTestOneInput")
public func rangefsHeaderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    if let parsed = ContentRange(headerValue: text) {
        guard !parsed.range.isEmpty else { fatalError("an empty Content-Range was accepted: \(text)") }
        if let total = parsed.total, parsed.range.upperBound > total {
            fatalError("a Content-Range past its total was accepted: \(text)")
        }
        // Printing it the canonical way and parsing again gives the same value.
        let canonical = "bytes \(parsed.range.lowerBound)-\(parsed.range.upperBound - 1)/\(parsed.total.map(String.init) ?? "*")"
        guard ContentRange(headerValue: canonical) == parsed else {
            fatalError("Content-Range \(text) → \(canonical) does not round-trip")
        }
    }
    if let total = ContentRange.unsatisfiedTotal(headerValue: text) {
        guard ContentRange.unsatisfiedTotal(headerValue: "bytes */\(total)") == total else {
            fatalError("bytes */total does not round-trip for \(text)")
        }
    }
    if let value = UInt64(decimalDigits: text) {
        guard String(value) == text.drop(while: { $0 == "0" }) || (value == 0 && text.allSatisfy { $0 == "0" }) else {
            fatalError("strict digits \(text) parsed as \(value)")
        }
    }
    if let bytes = ByteSize.parse(text) {
        guard ByteSize.parse(String(bytes)) == bytes else { fatalError("ByteSize \(text) → \(bytes) does not round-trip") }
    }
    let trimmed = text.trimmingASCIIWhitespace()
    let spaces: Set<UInt8> = [0x20, 0x09, 0x0D, 0x0A]
    if let first = trimmed.utf8.first, spaces.contains(first) { fatalError("trim left leading whitespace") }
    if let last = trimmed.utf8.last, spaces.contains(last) { fatalError("trim left trailing whitespace") }
    if trimmed.utf8.count > text.utf8.count { fatalError("trim grew the text") }
    return 0
}
