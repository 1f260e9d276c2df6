import ArgumentParser
import Logging
import RangeFSCore

/// The typed values of `rangefs mount`'s options, parsed once, when the command line is. A
/// value that does not parse is refused by the argument parser with the option's name and the
/// kind of value it takes (`<size>`, `<duration>`) or the values it may be.

/// A size as people write it (`262144`, `256K`, `2M`, `20G`: `ByteSize`), kept as written:
/// that is what the background mount process is given.
struct SizeValue: ExpressibleByArgument, Sendable, Equatable {
    let bytes: UInt64
    let argument: String

    init?(argument: String) {
        guard let bytes = ByteSize.parse(argument) else { return nil }
        self.init(bytes: bytes, argument: argument)
    }

    private init(bytes: UInt64, argument: String) {
        self.bytes = bytes
        self.argument = argument
    }

    /// `count` KiB, written `<count>K`.
    static func kibibytes(_ count: UInt64) -> SizeValue {
        SizeValue(bytes: count << 10, argument: "\(count)K")
    }

    var defaultValueDescription: String { argument }
}

/// A duration as people write it (`30s`, `5m`, `1h`: `DurationText`), kept as written.
struct DurationValue: ExpressibleByArgument, Sendable, Equatable {
    let duration: Duration
    let argument: String

    init?(argument: String) {
        guard let duration = DurationText.parse(argument) else { return nil }
        self.init(duration: duration, argument: argument)
    }

    private init(duration: Duration, argument: String) {
        self.duration = duration
        self.argument = argument
    }

    static func minutes(_ count: Int64) -> DurationValue {
        DurationValue(duration: .seconds(count * 60), argument: "\(count)m")
    }

    var defaultValueDescription: String { argument }
}

// Enumerations taken as they are written (`--prefetch opened`, `--log-level debug`), their
// values listed in the help and in the error for any other. RangeFSCore does not know the
// argument parser, so its types conform here; so does swift-log's level (`@retroactive`: that
// package will not conform it itself, as it does not depend on the argument parser either).
extension PrefetchPolicy: ExpressibleByArgument {}
extension SubsonicAddress.Layout: ExpressibleByArgument {}
extension Logger.Level: @retroactive ExpressibleByArgument {}

extension MetricsAddress {
    /// `--metrics-address`'s parse, whose error says what is wrong with the address (a transform,
    /// not `ExpressibleByArgument`, which could only say that it is).
    @Sendable static func parsedArgument(_ text: String) throws -> MetricsAddress {
        try MetricsAddress(parsing: text)
    }
}
