import Foundation

/// Whether a private key file is encrypted (its passphrase must then be asked), read as OpenSSH
/// writes keys: its own format (`openssh-key-v1`, whose cipher name is `none` for a plain key)
/// or PEM (`Proc-Type: 4,ENCRYPTED`, or PKCS#8's `ENCRYPTED PRIVATE KEY`). Pure but for the read.
public enum SSHKeyFile {
    /// A key file is a few kilobytes; a bigger one is not read to decide.
    static let maxBytes = 64 << 10

    public static func isEncrypted(atPath path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maxBytes), let text = String(data: data, encoding: .utf8) else { return false }
        return isEncrypted(text)
    }

    public static func isEncrypted(_ text: String) -> Bool {
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") || text.contains("Proc-Type: 4,ENCRYPTED") { return true }
        let begin = "-----BEGIN OPENSSH PRIVATE KEY-----", end = "-----END OPENSSH PRIVATE KEY-----"
        guard let start = text.range(of: begin), let stop = text.range(of: end, range: start.upperBound..<text.endIndex),
              let blob = Data(base64Encoded: text[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }) else { return false }
        // "openssh-key-v1\0", then the cipher name as a 32-bit big-endian length and its bytes.
        let magic = Data("openssh-key-v1\u{0}".utf8)
        guard blob.count >= magic.count + 4, blob.prefix(magic.count) == magic else { return false }
        let lengthBytes = blob.dropFirst(magic.count).prefix(4)
        let length = lengthBytes.reduce(0) { $0 << 8 | Int($1) }
        let name = blob.dropFirst(magic.count + 4).prefix(length)
        return name.count == length && name != Data("none".utf8)
    }
}
