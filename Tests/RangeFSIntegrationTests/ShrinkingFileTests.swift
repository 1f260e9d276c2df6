import FaultServer
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A file cut short on the server while a handle reads it at random offsets: every read gives
/// all the bytes asked for of the version the handle opened (up to its end) or fails with EIO,
/// never fewer bytes without an error, which every program takes for the end of the file.
extension RangeFSIntegrationTests {
    static let shrinkingOldSize = 20_983_865
    static let shrinkingNewSize = 10_492_709

    @Test("fault: a file shrinks on the server under an open handle: random reads get the old bytes in full or EIO, never a short read; a new open reads the new version to its end",
          arguments: 1...3)
    func faultFileShrinksUnderRandomReads(round: Int) throws {
        let server = try FaultServer()
        let old = RandomBytes.make(count: Self.shrinkingOldSize, seed: 0x5A10 + UInt64(round))
        let new = RandomBytes.make(count: Self.shrinkingNewSize, seed: 0x5A20 + UInt64(round))
        server.publish("shrinking.bin", bytes: old)
        // Past the new end the server says so (416 with the new length), as nginx does.
        let mount = try fx.mount(server: server, names: ["shrinking.bin"])
        let path = mount.path("shrinking.bin")
        let descriptor = open(path, O_RDONLY)
        try #require(descriptor >= 0, "open: \(String(cString: strerror(errno)))\(Check.daemonLog(mount))")
        var closed = false
        defer { if !closed { close(descriptor) } }

        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let first = buffer.withUnsafeMutableBytes { Glibc.pread(descriptor, $0.baseAddress, 65_536, 0) }
        #expect(first == 65_536 && Array(buffer[0..<65_536]) == Array(old[0..<65_536]), "the first read gives the old version: \(first)")
        #expect(mount.transfersEnded(), "the first read's transfers never ended\(Check.daemonLog(mount))")
        server.publish("shrinking.bin", bytes: new)

        var generator = SeededRandom(seed: 0x5A30 + UInt64(round))
        var outcomes = (whole: 0, failed: 0)
        for attempt in 1...16 {
            // The first few stay in the bytes cached before the change, which the handle may still get.
            let span = attempt <= 4 ? 60_000 : old.count - 1
            let offset = Int(generator.next() % UInt64(span))
            let length = 1 + Int(generator.next() % UInt64(attempt <= 4 ? 4096 : buffer.count - 1))
            let got = buffer.withUnsafeMutableBytes { Glibc.pread(descriptor, $0.baseAddress, length, off_t(offset)) }
            let code = errno
            if got < 0 {
                #expect(code == EIO, "read \(attempt) (\(length) bytes at \(offset)) failed with \(String(cString: strerror(code))), not EIO")
                outcomes.failed += 1
                continue
            }
            let expected = min(length, old.count - offset)
            #expect(got == expected, """
                read \(attempt): \(length) bytes at \(offset) returned \(got) bytes and no error, \
                where the version the handle opened has \(expected) there\(Check.daemonLog(mount))
                """)
            #expect(Array(buffer[0..<got]) == Array(old[offset..<(offset + got)]),
                    "read \(attempt): \(got) bytes at \(offset) are not the old version's (first difference at \(Reading.firstDifference(Data(buffer[0..<got]), old, at: offset) ?? -1))")
            outcomes.whole += 1
        }
        print("a file shrank under an open handle, round \(round): \(outcomes.whole) reads whole, \(outcomes.failed) failed with EIO")

        close(descriptor)
        closed = true
        let reopened = Reading.whole(path)
        #expect(reopened.succeeded && reopened.bytes == Data(new),
                "a new open reads the new version to its new end: \(reopened)\(Check.daemonLog(mount))")
    }
}
