import Foundation
import Testing

/// Many machines, one origin: mounts share an ordinary caching proxy (nginx `proxy_cache`
/// with the slice module) through `--proxy`, and the origin serves each byte once.
extension RangeFSIntegrationTests {
    @Test("two mounts with separate caches behind one caching nginx: both read every file right, the origin serves each byte once")
    func sharedCachingProxy() throws {
        let origin = fx.nginx
        let proxy = try NginxServer(docRoot: fx.data.dir) { prefix, port in
            CachingProxyConfig.text(prefix: prefix, port: port, origin: origin.port)
        }
        defer { proxy.stop() }
        let files = fx.standardLayout.filter { $0.file.size > 0 }
        let entries = files.map { ManifestLine(path: $0.path, url: origin.url($0.file.name)) }
        let mark = origin.accessLog.mark()

        for machine in 1...2 {
            let mount = try fx.mount(entries, options: ["--proxy", proxy.baseURL, "--prefetch", "none"])
            for placed in files {
                #expect(SHA256.of(mount.path(placed.path)).hash == placed.file.sha256,
                        "mount \(machine): sha256 of \(placed.path) through the proxy")
            }
            #expect(mount.unmount().succeeded, "mount \(machine): rangefs unmount")
        }

        origin.accessLog.waitUntilQuiet()
        let served = origin.accessLog.entries(since: mark)
        for placed in files {
            let uri = "/" + placed.file.name
            let bodies = served.filter { $0.path == uri && $0.method == "GET" }
            let bytes = bodies.reduce(0) { $0 + $1.bodyBytesSent }
            let ranges = bodies.compactMap { $0.servedRange(fileSize: placed.file.size) }
            print("proxy tier: \(placed.path): origin sent \(bytes) body bytes for a file of \(placed.file.size) bytes in \(bodies.count) requests")
            #expect(ByteRanges.overlaps(ranges).isEmpty, "\(placed.path): the origin served some bytes twice: \(bodies)")
            #expect(bytes == placed.file.size, "\(placed.path): the origin sent \(bytes) bytes, not each of \(placed.file.size) once: \(bodies)")
        }
    }
}

/// nginx as a shared caching tier: it fetches 1 MiB slices from the origin once (concurrent
/// misses of a slice wait for the first: `proxy_cache_lock`) and serves any range from them.
enum CachingProxyConfig {
    static func text(prefix: URL, port: UInt16, origin: UInt16) -> String {
        let p = prefix.path
        return """
        \(NginxServer.mainContext(p, connections: 512))
        http {
            log_format rangefs '\(AccessLog.format)';
            access_log \(p)/access.log rangefs;
            \(NginxServer.temporaryPaths(p))
            proxy_cache_path \(p)/cache levels=1:2 keys_zone=rangefs:10m max_size=2g inactive=1h use_temp_path=off;
            server {
                listen 127.0.0.1:\(port);
                location / {
                    slice 1m;
                    proxy_cache rangefs;
                    proxy_cache_key $uri$is_args$args$slice_range;
                    proxy_set_header Range $slice_range;
                    proxy_cache_valid 200 206 1h;
                    proxy_cache_lock on;
                    proxy_cache_lock_timeout 60s;
                    proxy_http_version 1.1;
                    proxy_set_header Connection "";
                    proxy_pass http://127.0.0.1:\(origin);
                }
            }
        }

        """
    }
}
