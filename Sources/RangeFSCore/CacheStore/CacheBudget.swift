import Foundation
import Synchronization

/// How much the cache may hold: at most `maxBytes` of cached data, and at least
/// `minFreeBytes` left free on the cache's filesystem. Either may be absent.
public struct CacheLimits: Sendable, Equatable {
    public var maxBytes: UInt64?
    public var minFreeBytes: UInt64?

    public init(maxBytes: UInt64? = nil, minFreeBytes: UInt64? = nil) {
        self.maxBytes = maxBytes
        self.minFreeBytes = minFreeBytes
    }

    public var isUnlimited: Bool { maxBytes == nil && minFreeBytes == nil }
}

/// Counts the cached bytes of a mount as blocks arrive and leave, and says how much must go
/// to get back within the limits.
public final class CacheBudget: Sendable {
    public let limits: CacheLimits
    private let directory: String
    private let cached: Mutex<UInt64>

    public init(limits: CacheLimits, directory: String, initialBytes: UInt64) {
        self.limits = limits
        self.directory = directory
        cached = Mutex(initialBytes)
    }

    public var cachedBytes: UInt64 {
        cached.withLock { $0 }
    }

    func add(_ delta: Int64) {
        cached.withLock { bytes in
            bytes = delta >= 0 ? bytes + UInt64(delta) : bytes - min(bytes, UInt64(-delta))
        }
    }

    /// Bytes to evict now; 0 when within the limits.
    public var excess: UInt64 {
        var excess: UInt64 = 0
        if let maxBytes = limits.maxBytes {
            let bytes = cachedBytes
            if bytes > maxBytes { excess = bytes - maxBytes }
        }
        if let minFree = limits.minFreeBytes, let free = freeBytes, free < minFree {
            excess = max(excess, minFree - free)
        }
        return excess
    }

    /// Whether `bytes` more fit without evicting anything: background work never makes room by
    /// evicting, or it would chase its own tail.
    public func hasRoom(for bytes: UInt64) -> Bool {
        if let maxBytes = limits.maxBytes, cachedBytes + bytes > maxBytes { return false }
        if let minFree = limits.minFreeBytes, let free = freeBytes, free < minFree + bytes { return false }
        return true
    }

    /// Free space for unprivileged users on the cache's filesystem.
    private var freeBytes: UInt64? {
        var info = statvfs()
        guard statvfs(directory, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
