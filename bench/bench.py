#!/usr/bin/env python3
"""RangeFS benchmark suite: RangeFS, the link (curl), the local disk, rclone, httpdirfs and aria2c.

Run it through bench/run.sh, which installs the tools and builds RangeFS first. It serves
bench/data/www with its own nginx on 127.0.0.1 (a plain port, and slow links: a TCP proxy
that adds latency and limits each connection's rate; each with an https twin, TLS and HTTP/2
with a CA made for the run), measures every row, prints a table and
writes docs/benchmarks.md and docs/benchmarks.png. Every command runs under a timeout;
every mount and server it started is stopped on exit, also on failure or Ctrl-C.

Standard library only (matplotlib for the chart). The code is the package rangefs_bench next to
this file; its __init__ says which module holds what.
"""
from rangefs_bench.cli import main

if __name__ == "__main__":
    main()
