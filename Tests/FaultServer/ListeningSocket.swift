#if canImport(Glibc)
import Glibc
#endif

/// The server's TCP socket on 127.0.0.1, on a port the kernel picks.
struct ListeningSocket: Sendable {
    let fd: Int32
    let port: Int

    init() throws(SocketError) {
        // Non-blocking: accept runs only after poll said readable, and a peer that went
        // away in between must not leave accept blocked.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                        | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket", errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            Glibc.close(fd)
            throw SocketError("bind/listen on 127.0.0.1", code)
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Waits for a connection until `stop` fires; nil once stopped.
    func accept(stop: StopSignal) -> ConnectionSocket? {
        while !stop.isFired {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: stop.wakeFD, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 1000) > 0, fds[0].revents != 0, !stop.isFired else { continue }
            let client = Self.accept4(fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
            if client >= 0 { return ConnectionSocket(fd: client) }
        }
        return nil
    }

    func close() { _ = Glibc.close(fd) }

    /// `accept4` with `SOCK_CLOEXEC` closes the window in which a child spawned by another
    /// thread (curl, the rangefs daemon) could inherit the new socket and keep the
    /// connection open after the server closed it. Glibc's Swift overlay does not export
    /// `accept4`, so it is looked up once; the fallback sets the flag right after accept.
    private typealias Accept4 = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?,
                                                UnsafeMutablePointer<socklen_t>?, Int32) -> Int32
    private static let accept4: Accept4 = {
        if let symbol = dlsym(nil, "accept4") { return unsafeBitCast(symbol, to: Accept4.self) }
        return { fd, address, length, _ in
            let client = Glibc.accept(fd, address, length)
            if client >= 0 { _ = fcntl(client, F_SETFD, FD_CLOEXEC) }
            return client
        }
    }()
}
