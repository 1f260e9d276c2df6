#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import Synchronization

/// A swift-log handler that writes to the system log (syslog, and so the systemd journal when
/// journald owns `/dev/log`), for a mount running in the background with no terminal.
///
/// Each record is one syslog message tagged `rangefs[PID]` in the `daemon` facility:
/// the message, then the metadata as ` key=value` pairs in key order. Levels map to
/// syslog priorities: trace and debug → `LOG_DEBUG`, info → `LOG_INFO`, notice → `LOG_NOTICE`,
/// warning → `LOG_WARNING`, error → `LOG_ERR`, critical → `LOG_CRIT`.
///
/// Use it beside the stream handler, e.g.
/// `LoggingSystem.bootstrap { MultiplexLogHandler([StreamLogHandler.standardError(label: $0), SyslogLogHandler(label: $0)]) }`.
/// When no syslog daemon listens, messages are dropped (the C library retries on the next one).
public struct SyslogLogHandler: LogHandler {
    /// The syslog identifier (`SYSLOG_IDENTIFIER` in the journal). Fixed for the process:
    /// `openlog` keeps the pointer, so the first handler's identifier is the one used.
    public let identifier: String
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    /// - Parameters:
    ///   - label: the logger's label; not part of the message (the identifier names the program).
    ///   - identifier: the tag of every message, `rangefs` by default.
    public init(label: String, identifier: String = "rangefs",
                metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider) {
        self.identifier = identifier
        self.metadataProvider = metadataProvider
        SyslogConnection.open(identifier: identifier)
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() {
            merged.merge(provided) { _, new in new }
        }
        if let explicit = event.metadata {
            merged.merge(explicit) { _, new in new }
        }
        let text = Self.format(message: event.message.description, metadata: merged)
        let priority = Self.priority(of: event.level)
        // syslog(3) is variadic and not callable from Swift; vsyslog with a "%s" format is, and
        // keeps a '%' in the message from being read as a conversion.
        text.withCString { line in
            withVaList([line]) { arguments in
                vsyslog(priority, "%s", arguments)
            }
        }
    }

    /// The syslog priority (severity only; the facility comes from `openlog`) of a level.
    public static func priority(of level: Logger.Level) -> Int32 {
        switch level {
        case .trace, .debug: LOG_DEBUG
        case .info: LOG_INFO
        case .notice: LOG_NOTICE
        case .warning: LOG_WARNING
        case .error: LOG_ERR
        case .critical: LOG_CRIT
        }
    }

    /// One line: the message, then ` key=value` for each metadata entry in key order.
    /// Line breaks become spaces, so one record stays one syslog message.
    public static func format(message: String, metadata: Logger.Metadata) -> String {
        var line = message
        for key in metadata.keys.sorted() {
            line += " \(key)=\(metadata[key]!)"
        }
        guard line.contains(where: \.isNewline) else { return line }
        return String(line.map { $0.isNewline ? " " : $0 })
    }
}

/// The process's one `openlog`: the C library keeps the identifier pointer, so it is copied
/// once and never freed.
private enum SyslogConnection {
    private static let opened = Mutex(false)

    static func open(identifier: String) {
        opened.withLock { done in
            guard !done else { return }
            done = true
            // LOG_PID: messages read rangefs[PID]; LOG_NDELAY: connect now rather than at the
            // first message; no LOG_CONS (never write to the console).
            openlog(strdup(identifier), LOG_PID | LOG_NDELAY, LOG_DAEMON)
        }
    }
}
