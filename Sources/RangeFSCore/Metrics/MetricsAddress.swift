import Foundation

/// Where `--metrics-address` listens: `HOST:PORT`, `[IPv6]:PORT`, or a bare `PORT` (loopback).
/// The host must be an IP address or `localhost`; any address is allowed when written out,
/// and `isLoopback` lets the mount warn when the metrics leave the machine.
public struct MetricsAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    public init(parsing text: String) throws(MetricsAddressError) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw MetricsAddressError(text, "write an IPv6 address as [ADDRESS]:PORT, e.g. [::1]:9464")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") {
                throw MetricsAddressError(text, "write an IPv6 address as [ADDRESS]:PORT, e.g. [::1]:9464")
            }
        } else {
            hostPart = "127.0.0.1"
            portPart = text[...]
        }
        guard let port = UInt16(portPart) else {
            throw MetricsAddressError(text, "the port must be a number from 0 to 65535, as in 127.0.0.1:9464")
        }
        let host = hostPart == "localhost" ? "127.0.0.1" : String(hostPart)
        guard Self.family(of: host) != nil else {
            throw MetricsAddressError(text, "the host must be an IP address or localhost, as in 127.0.0.1:9464")
        }
        self.init(host: host, port: port)
    }

    /// 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return host.hasPrefix("127.") }
        var v6 = in6_addr()
        return inet_pton(AF_INET6, host, &v6) == 1 && host == "::1"
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The address for `bind`, in `family` (which `family(of:)` found for the host).
    func socketAddress(family: Int32) -> (sockaddr_storage, socklen_t) {
        var storage = sockaddr_storage()
        func stored<Address>(_ address: Address) -> socklen_t {
            withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            return socklen_t(MemoryLayout<Address>.size)
        }
        let length: socklen_t
        if family == AF_INET {
            var v4 = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
            _ = inet_pton(AF_INET, host, &v4.sin_addr)
            length = stored(v4)
        } else {
            var v6 = sockaddr_in6()
            (v6.sin6_family, v6.sin6_port) = (sa_family_t(AF_INET6), port.bigEndian)
            _ = inet_pton(AF_INET6, host, &v6.sin6_addr)
            length = stored(v6)
        }
        return (storage, length)
    }

    static func family(of host: String) -> Int32? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return AF_INET }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return AF_INET6 }
        return nil
    }
}

public struct MetricsAddressError: Error, Sendable, CustomStringConvertible {
    public var description: String

    init(_ text: String, _ advice: String) {
        description = "invalid metrics address '\(text)': \(advice)"
    }
}
