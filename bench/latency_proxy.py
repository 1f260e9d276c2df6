#!/usr/bin/env python3
"""A TCP proxy on loopback that adds round-trip latency, in order, to every connection.

Usage: latency_proxy.py --listen 127.0.0.1:PORT --upstream 127.0.0.1:PORT [--rtt-ms 40] [--rate BYTES]

Each chunk read from one side is delivered to the other side half a round trip after it
arrived, never before the chunks ahead of it. A new connection also pays the handshake: its
first bytes reach the server no earlier than one round trip after the client connected, so
a fresh `curl` sees 1.5 RTT before its request arrives and 2 RTT before the first byte,
like on a real link. With `--rate` each connection's replies (server to client) leave at
that many bytes per second, paced in small slices like a link that serializes them, and the
proxy holds little of a reply ahead of the client, so the server feels the link's pace as TCP
flow control. nginx's `limit_rate` is no substitute: it lets each request's first second's
worth through at once, so many short requests on one connection go far faster than its rate.
Loopback only; it stops on SIGTERM or SIGINT.
"""
import argparse
import asyncio
import signal
import socket

CHUNK = 64 * 1024
QUEUE_CHUNKS = 256  # at most 16 MiB in flight per direction before the reader waits
PACED_QUEUE_CHUNKS = 4  # with a rate: about what a link's send buffer would hold
SLICE = 16 * 1024  # a paced link delivers in slices of this size


def parse_address(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def pump(reader, writer, delay, not_before, rate=None):
    """Copies reader to writer, each chunk `delay` seconds after it arrived (in order); with
    `rate` (bytes per second), each slice also waits until the link has sent the ones before."""
    queue = asyncio.Queue(PACED_QUEUE_CHUNKS if rate else QUEUE_CHUNKS)
    loop = asyncio.get_running_loop()

    async def receive():
        try:
            while True:
                data = await reader.read(CHUNK)
                await queue.put((loop.time(), data))
                if not data:
                    return
        except (ConnectionError, OSError):
            await queue.put((loop.time(), b""))

    async def deliver():
        sent_until = 0.0  # when the paced link finishes sending what it was given so far
        try:
            while True:
                arrived, data = await queue.get()
                start = max(arrived, not_before)
                if not data:
                    wait = max(start, sent_until) + delay - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                step = SLICE if rate else len(data)
                for offset in range(0, len(data), step):
                    piece = data[offset:offset + step]
                    if rate:
                        sent_until = max(start, sent_until) + len(piece) / rate
                        due = sent_until + delay
                    else:
                        due = start + delay
                    wait = due - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    writer.write(piece)
                    await writer.drain()
        except (ConnectionError, OSError):
            return

    receiving = asyncio.ensure_future(receive())
    try:
        await deliver()
    finally:
        receiving.cancel()


async def handle(client_reader, client_writer, upstream, delay, rate):
    loop = asyncio.get_running_loop()
    accepted = loop.time()
    try:
        server_reader, server_writer = await asyncio.open_connection(*upstream)
    except OSError:
        client_writer.close()
        return
    for w in (client_writer, server_writer):
        sock = w.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # Handshake: SYN and SYN-ACK take one round trip before the request can leave.
    upward = pump(client_reader, server_writer, delay, accepted + 2 * delay)
    downward = pump(server_reader, client_writer, delay, 0.0, rate)
    try:
        await asyncio.gather(upward, downward)
    finally:
        for w in (client_writer, server_writer):
            try:
                w.close()
            except Exception:
                pass


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--rtt-ms", type=float, default=40.0)
    parser.add_argument("--rate", type=float, default=None,
                        help="bytes per second each connection's replies are limited to (none by default)")
    args = parser.parse_args()
    listen, upstream = parse_address(args.listen), parse_address(args.upstream)
    for host, _ in (listen, upstream):
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise SystemExit("latency_proxy: loopback addresses only")
    delay = args.rtt_ms / 2000.0
    server = await asyncio.start_server(lambda r, w: handle(r, w, upstream, delay, args.rate), *listen,
                                        reuse_address=True, backlog=256)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    limit = f", {args.rate:g} B/s per connection" if args.rate else ""
    print(f"latency_proxy: {args.listen} -> {args.upstream}, RTT {args.rtt_ms:g} ms{limit}", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
