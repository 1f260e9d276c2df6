/// A setting of `rangefs mount` that may also be given as `-o key=value` (fstab, mount.fuse3)
/// and that the background mount process receives on its command line.
///
/// The flag itself (type, default, help) is the `@Option` or `@Flag` in `MountCommand`; its row
/// in `MountSettings.all` is the one other place the setting is named. The `-o` key, the `-o`
/// error examples, the list of keys in the help, and the background process's arguments all
/// come from that row.
struct MountSetting: Sendable {
    enum Kind: Sendable {
        /// Takes a value; `example` is a typical one, shown when `-o key` is given without it.
        case value(example: String)
        /// Given alone, without a value.
        case switchFlag
    }

    /// As on the command line, e.g. `--cache-dir`.
    let flag: String
    let kind: Kind
    /// The arguments that hand a parsed command's value to the background mount process; empty
    /// when the setting is left unset. Paths are made absolute here, as the process resolves
    /// nothing against a directory of its own.
    let backgroundArguments: @Sendable (MountCommand) -> [String]

    /// The `-o` name, e.g. `cache_dir`. In `-o` it may also be written with `-` (`cache-dir`).
    var key: String {
        String(flag.dropFirst(2)).replacingOccurrences(of: "-", with: "_")
    }

    var isSwitch: Bool {
        if case .switchFlag = kind { true } else { false }
    }

    /// A complete `-o` option, e.g. `cache_dir=/var/cache/rangefs/media`.
    var example: String {
        switch kind {
        case .value(let example): "\(key)=\(example)"
        case .switchFlag: key
        }
    }

    static func value(_ flag: String, example: String,
                      _ value: @escaping @Sendable (MountCommand) -> String?) -> MountSetting {
        MountSetting(flag: flag, kind: .value(example: example)) { command in
            value(command).map { [flag, $0] } ?? []
        }
    }

    static func switchFlag(_ flag: String, isOn: @escaping @Sendable (MountCommand) -> Bool) -> MountSetting {
        MountSetting(flag: flag, kind: .switchFlag) { command in isOn(command) ? [flag] : [] }
    }
}

enum MountSettings {
    /// Every setting of `rangefs mount`, in the order the help lists their `-o` keys. To add
    /// one: declare its `@Option` in `MountCommand` and add its row here.
    static let all: [MountSetting] = [
        .value("--format", example: "m3u") { $0.format == .auto ? nil : $0.format.argument },
        .value("--cache-dir", example: "/var/cache/rangefs/media") { $0.cachePath },
        .value("--block-size", example: "1M") { $0.blockSize.argument },
        .value("--prefetch", example: "opened") { $0.prefetch.rawValue },
        .value("--max-downloads", example: "3") { String($0.maxDownloads) },
        .value("--max-rate", example: "2M") { $0.maxRate?.argument },
        .value("--ca-file", example: "/etc/rangefs/ca.pem") { $0.caFile.map(absolutePath) },
        .value("--cache-max-size", example: "2M") { $0.cacheMaxSize?.argument },
        .value("--cache-min-free", example: "2M") { $0.cacheMinFree?.argument },
        .value("--proxy", example: "http://proxy:3128") { $0.proxy },
        .switchFlag("--netrc") { $0.signIn.netrc && $0.signIn.netrcFile == nil },
        .value("--netrc-file", example: "/etc/rangefs/netrc") { $0.signIn.netrcFile.map(absolutePath) },
        .value("--metrics-address", example: "127.0.0.1:9464") { $0.metricsAddress?.description },
        .value("--dir-cache-time", example: "10m") { $0.dirCacheTime.argument },
        .value("--max-listed-entries", example: "500000") { String($0.maxListedEntries) },
        .value("--endpoint", example: "http://127.0.0.1:9000") { $0.bucketOptions.endpoint },
        .switchFlag("--path-style") { $0.bucketOptions.pathStyle },
        .value("--region", example: "eu-west-1") { $0.bucketOptions.region },
        .value("--profile", example: "media") { $0.bucketOptions.profile },
        .switchFlag("--no-sign-request") { $0.bucketOptions.noSignRequest },
        .value("--subsonic-layout", example: "folders") { $0.subsonicOptions.subsonicLayout == .id3 ? nil : $0.subsonicOptions.subsonicLayout.rawValue },
        .value("--identity", example: "/etc/rangefs/id_ed25519") { $0.sshOptions.identity.map(absolutePath) },
        .value("--known-hosts", example: "/etc/rangefs/known_hosts") { $0.sshOptions.knownHosts.map(absolutePath) },
        .value("--log-level", example: "debug") { $0.logLevel.rawValue },
        .switchFlag("--no-passthrough") { !$0.passthrough },
        // The background process is the mount that runs in the background: never in front.
        MountSetting(flag: "--foreground", kind: .switchFlag) { _ in [] },
    ]

    /// The setting given as `-o key` or `-o key=value`; `key` may be written with `-` for `_`.
    static func setting(forKey key: String) -> MountSetting? {
        let key = key.replacingOccurrences(of: "-", with: "_")
        return all.first { $0.key == key }
    }

    /// The `-o` keys for the help, e.g. `format, cache_dir, … and foreground`.
    static var keyList: String {
        let keys = all.map(\.key)
        return keys.dropLast().joined(separator: ", ") + " and " + keys[keys.count - 1]
    }

    /// `command`'s settings as the background mount process's arguments.
    static func backgroundArguments(of command: MountCommand) -> [String] {
        all.flatMap { $0.backgroundArguments(command) }
    }
}
