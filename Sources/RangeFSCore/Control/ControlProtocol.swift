import Foundation

/// What a client may ask a running mount over its control socket.
public enum ControlCommand: String, Codable, Sendable, CaseIterable {
    case status
    case pause
    case resume
    /// Drop the cached data of `paths` (all files when empty) that nobody is using.
    case evict
    /// Fetch `paths` now and keep them whatever the cache limits.
    case pin
    /// Let `paths` be evicted again.
    case unpin
    /// Ask the server whether cached files changed; discard the ones that did.
    case verify
    /// Read the manifest again: add, remove and update entries without unmounting.
    case refresh
}

/// The one request line a client sends: `{"command":"status"}`, `{"command":"pin","paths":["a.mp3"]}`.
public struct ControlRequest: Codable, Sendable, Equatable {
    public var command: ControlCommand
    /// Paths inside the mount, for the commands that take them.
    public var paths: [String]?

    public init(command: ControlCommand, paths: [String]? = nil) {
        self.command = command
        self.paths = paths
    }
}

/// The one reply line the server sends: `{"ok":true,"status":{…}}` or `{"ok":false,"error":"…"}`.
/// Every successful command answers with the status as it stands afterwards.
public struct ControlReply: Codable, Sendable, Equatable {
    public var ok: Bool
    public var status: MountStatus?
    public var error: String?
    /// What a command did, in a sentence for the user (evict, pin, unpin).
    public var message: String?

    public init(ok: Bool, status: MountStatus?, error: String?, message: String? = nil) {
        self.ok = ok
        self.status = status
        self.error = error
        self.message = message
    }

    public static func success(_ status: MountStatus, message: String? = nil) -> ControlReply {
        ControlReply(ok: true, status: status, error: nil, message: message)
    }

    public static func failure(_ message: String) -> ControlReply {
        ControlReply(ok: false, status: nil, error: message)
    }

    /// The mount's status, or the mount's own reason for refusing.
    public func requireStatus() throws(ControlError) -> MountStatus {
        guard ok else { throw .refused(error ?? "the mount refused without saying why") }
        guard let status else { throw .malformedReply(detail: "the reply carries no status") }
        return status
    }
}

/// How requests and replies travel: one compact JSON document per line, within fixed limits.
enum ControlWire {
    /// A request is a few dozen bytes; anything near this is not a rangefs client.
    static let maxRequestBytes = 64 << 10
    /// A reply lists every file of the manifest; this still bounds a confused server.
    static let maxReplyBytes = 64 << 20
    /// How long the server gives one connection to send its request, and then to take the reply.
    static let serverTimeout: Duration = .seconds(5)

    static func line(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own plain structs cannot fail; if it somehow did, say so on the wire.
        let data = (try? encoder.encode(value)) ?? Data(#"{"ok":false,"error":"cannot encode the reply"}"#.utf8)
        return Array(data) + [UInt8(ascii: "\n")]
    }

    /// The request of a request line, or the error message to answer with.
    static func request(fromLine line: [UInt8]) -> Result<ControlRequest, ControlRequestError> {
        command(fromRequest: line).flatMap { command in
            struct WithPaths: Decodable { var paths: [String]? }
            guard let extra = try? JSONDecoder().decode(WithPaths.self, from: Data(line)) else {
                return .failure(ControlRequestError("malformed request: \"paths\" must be a list of strings"))
            }
            return .success(ControlRequest(command: command, paths: extra.paths))
        }
    }

    /// The command of a request line, or the error message to answer with.
    static func command(fromRequest line: [UInt8]) -> Result<ControlCommand, ControlRequestError> {
        // Decoded as a string first so that an unknown command gets its own message.
        struct Loose: Decodable { var command: String }
        guard let loose = try? JSONDecoder().decode(Loose.self, from: Data(line)) else {
            return .failure(ControlRequestError(#"malformed request: expected one JSON line such as {"command":"status"}"#))
        }
        guard let command = ControlCommand(rawValue: loose.command) else {
            let known = ControlCommand.allCases.map(\.rawValue).joined(separator: ", ")
            return .failure(ControlRequestError("unknown command \(StatusText.sanitized(loose.command, limit: 40)); expected one of \(known)"))
        }
        return .success(command)
    }

    static func reply(fromLine line: [UInt8]) throws(ControlError) -> ControlReply {
        do {
            return try JSONDecoder().decode(ControlReply.self, from: Data(line))
        } catch {
            throw .malformedReply(detail: "not a rangefs control reply (\(error))")
        }
    }
}

/// Why the server refused a request; its message goes back to the client.
struct ControlRequestError: Error {
    var message: String

    init(_ message: String) {
        self.message = message
    }
}
