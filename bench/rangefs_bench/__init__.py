"""The RangeFS benchmark suite, run by bench/bench.py (through bench/run.sh).

Where things are:
- config: paths, ports, the files and sizes each group reads.
- process: commands under a timeout, BenchError, the log.
- context: Context (the run's state), Mount and `with mounted(...)`.
- data: generating bench/data once (the Subsonic library too), and the RangeFS manifests.
- tls: the https twins' link names and ports, the run's throwaway CA and certificate.
- servers: nginx, the latency proxies, the mirrors (each with its https twin), LogMark (nginx's access log).
- bucket_server: moto's S3 server and its bucket (and their https twin), MotoMark.
- sources: the WebDAV (Apache mod_dav), SFTP (OpenSSH's sshd, its keys made for the run) and Subsonic
  (Supysonic) servers, their TLS front and proxies, SftpLogMark (what sshd's sftp-server read).
- results: Row, the merge of the --prefetch none figures, measure_cell.
- primitives: the measurements rows share (timed reads, curl, fio, Range GETs).
- rows: one module per group or family of groups, each returning its Rows.
- report and chart: the printed table, docs/benchmarks.md and docs/benchmarks.png.
- cli: the command line, and main, which runs the groups.
"""
