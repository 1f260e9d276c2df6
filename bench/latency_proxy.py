#!/usr/bin/env python3
"""A TCP proxy on loopback that adds round-trip latency, in order, to every connection.

Usage: latency_proxy.py --listen 127.0.0.1:PORT --upstream 127.0.0.1:PORT [--rtt-ms 40]

Each chunk read from one side is delivered to the other side half a round trip after it
arrived, never before the chunks ahead of it. A new connection also pays the handshake: its
first bytes reach the server no earlier than one round trip after the client connected, so
a fresh `curl` sees 1.5 RTT before its request arrives and 2 RTT before the first byte,
like on a real link. Bandwidth is not limited here (nginx's `limit_rate` does that behind
the proxy). Loopback only; it stops on SIGTERM or SIGINT.
"""
import argparse
import asyncio
import signal
import socket

CHUNK = 64 * 1024
QUEUE_CHUNKS = 256  # at most 16 MiB in flight per direction before the reader waits


def parse_address(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def pump(reader, writer, delay, not_before):
    """Copies reader to writer, each chunk `delay` seconds after it arrived (in order)."""
    queue = asyncio.Queue(QUEUE_CHUNKS)
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
        try:
            while True:
                arrived, data = await queue.get()
                due = max(arrived, not_before) + delay
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            return

    receiving = asyncio.ensure_future(receive())
    try:
        await deliver()
    finally:
        receiving.cancel()


async def handle(client_reader, client_writer, upstream, delay):
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
    downward = pump(server_reader, client_writer, delay, 0.0)
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
    args = parser.parse_args()
    listen, upstream = parse_address(args.listen), parse_address(args.upstream)
    for host, _ in (listen, upstream):
        if not (host.startswith("127.") or host in ("localhost", "::1")):
            raise SystemExit("latency_proxy: loopback addresses only")
    delay = args.rtt_ms / 2000.0
    server = await asyncio.start_server(lambda r, w: handle(r, w, upstream, delay), *listen,
                                        reuse_address=True, backlog=256)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"latency_proxy: {args.listen} -> {args.upstream}, RTT {args.rtt_ms:g} ms", flush=True)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
