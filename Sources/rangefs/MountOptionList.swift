import ArgumentParser

/// The comma-separated `-o` lists that mount(8), mount.fuse3 and /etc/fstab hand to a FUSE
/// program, sorted into RangeFS's own settings (`cache_dir=DIR`, `prefetch=none`, …), options
/// for FUSE (`allow_other`, `default_permissions`, …), and options that were meant for mount(8)
/// itself and that FUSE would reject (`rw`, `noauto`, `_netdev`, `x-systemd.…`, …), dropped.
struct MountOptionList: Equatable {
    /// A RangeFS setting given as `-o key=value` (or `-o foreground`), as the `mount` flag
    /// it stands for.
    struct Setting: Equatable {
        /// As written, e.g. `prefetch=none`.
        var option: String
        var key: String
        var value: String?
        /// The `rangefs mount` flag, e.g. `--prefetch`.
        var flag: String
    }

    /// Options mount(8) or fstab may pass that are not FUSE's business. `ro` goes too: a
    /// RangeFS mount is always read-only and says so itself.
    static let droppedOptions: Set<String> = [
        "", "rw", "ro", "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group",
        "_netdev", "nofail", "drop_privileges",
    ]
    static let droppedPrefixes = ["x-", "comment=", "setuid="]

    private(set) var settings: [Setting] = []
    private(set) var fuseOptions: [String] = []
    private(set) var dropped: [String] = []

    init() {}

    /// Sorts the options of one or more `-o` arguments (each comma-separated).
    init(parsing lists: [String]) throws(ValidationError) {
        for list in lists {
            for option in list.split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                try add(option)
            }
        }
    }

    private mutating func add(_ option: String) throws(ValidationError) {
        let trimmed = option.trimmingCharacters(in: .whitespaces)
        let (name, value) = Self.split(trimmed)
        if let setting = MountSettings.setting(forKey: name) {
            if setting.isSwitch {
                guard value == nil else {
                    throw ValidationError("-o \(name) takes no value (got '\(trimmed)')")
                }
            } else if (value ?? "").isEmpty {
                throw ValidationError("-o \(name) needs a value, e.g. -o \(setting.example)")
            }
            settings.append(Setting(option: trimmed, key: setting.key, value: value, flag: setting.flag))
            return
        }
        if Self.droppedOptions.contains(trimmed) || Self.droppedPrefixes.contains(where: trimmed.hasPrefix) {
            dropped.append(trimmed)
            return
        }
        if let value, ["uid", "gid"].contains(name), UInt32(value) == nil {
            throw ValidationError("-o \(name) must be a number, e.g. \(name)=1000 (got '\(trimmed)')")
        }
        if let value, name == "umask", UInt16(value, radix: 8).map({ $0 <= 0o777 }) != true {
            throw ValidationError("-o umask must be an octal number such as 022 (got '\(trimmed)')")
        }
        if !fuseOptions.contains(trimmed) {
            fuseOptions.append(trimmed)
        }
    }

    private static func split(_ option: String) -> (name: String, value: String?) {
        guard let equals = option.firstIndex(of: "=") else { return (option, nil) }
        return (String(option[..<equals]), String(option[option.index(after: equals)...]))
    }
}

/// `uid=N`, `gid=N` and `umask=M` among FUSE options: high-level libfuse options that the
/// low-level session RangeFS uses rejects, so the filesystem applies them to the attributes it
/// reports itself.
struct AttributeOverrides: Equatable {
    var uid: UInt32?
    var gid: UInt32?
    /// Permission bits to clear from every mode.
    var umask: UInt16?

    /// The overrides among `options` and the options left for libfuse. Values were checked
    /// when the `-o` list was read.
    static func extract(from options: [String]) -> (overrides: AttributeOverrides, remaining: [String]) {
        var overrides = AttributeOverrides()
        var remaining: [String] = []
        for option in options {
            if option.hasPrefix("uid="), let uid = UInt32(option.dropFirst(4)) {
                overrides.uid = uid
            } else if option.hasPrefix("gid="), let gid = UInt32(option.dropFirst(4)) {
                overrides.gid = gid
            } else if option.hasPrefix("umask="), let mask = UInt16(option.dropFirst(6), radix: 8) {
                overrides.umask = mask & 0o777
            } else {
                remaining.append(option)
            }
        }
        return (overrides, remaining)
    }
}

/// Turns the command line into the form the argument parser reads:
///
/// - `rangefs MANIFEST MOUNTPOINT [-o OPTIONS]`, which is how mount.fuse3 (and so
///   `mount -t fuse.rangefs` and /etc/fstab) starts a FUSE program, means `rangefs mount …`;
/// - in a `mount`, RangeFS settings inside `-o` lists become the flags they stand for, placed
///   before every other argument so that flags given on the command line win; the FUSE options
///   stay in `-o`, and options meant for mount(8) are dropped.
///
/// A bad `-o` setting is reported naming the option as written.
enum MountInvocation {
    static func normalize(_ arguments: [String], subcommands: Set<String>) throws(ValidationError) -> [String] {
        guard let first = arguments.first else { return arguments }
        var arguments = arguments
        if !first.hasPrefix("-"), !subcommands.contains(first) {
            arguments.insert("mount", at: 0)
        }
        guard arguments.first == "mount" else { return arguments }

        var derived: [String] = []
        var rest: [String] = []
        var index = 1
        var explicitForeground = false
        var foregroundFromOptions = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                rest += arguments[(index - 1)...]
                break
            }
            if argument == "-f" || argument == "--foreground" { explicitForeground = true }
            let list: String
            if argument == "-o" {
                guard index < arguments.count else {
                    rest.append(argument)   // the parser reports the missing value
                    break
                }
                list = arguments[index]
                index += 1
            } else if argument.hasPrefix("-o"), !argument.hasPrefix("--") {
                list = String(argument.dropFirst(2))
            } else {
                rest.append(argument)
                continue
            }
            let parsed = try MountOptionList(parsing: [list])
            for setting in parsed.settings {
                try check(setting)
                if setting.key == "foreground" {
                    foregroundFromOptions = true
                } else if let value = setting.value {
                    derived += [setting.flag, value]
                } else {
                    derived.append(setting.flag)
                }
            }
            if !parsed.fuseOptions.isEmpty {
                rest += ["-o", parsed.fuseOptions.joined(separator: ",")]
            }
        }
        if foregroundFromOptions, !explicitForeground {
            derived.append("--foreground")
        }
        return ["mount"] + derived + rest
    }

    /// Checks a setting's value with the mount command's own rules, so the message is the same
    /// as for the flag, but names the `-o` option that was given.
    private static func check(_ setting: MountOptionList.Setting) throws(ValidationError) {
        guard let value = setting.value else { return }
        let placeholders = ["/manifest", "/mountpoint"]
        // Only when the command parses without the setting can a failure be blamed on it.
        guard (try? MountCommand.parse(placeholders)) != nil else { return }
        do {
            _ = try MountCommand.parse(placeholders + [setting.flag, value])
        } catch {
            var message = MountCommand.message(for: error)
            if message.hasPrefix(setting.flag + " ") {
                message = "-o \(setting.key)" + message.dropFirst(setting.flag.count)
            } else {
                message = "-o \(setting.option): \(message)"
            }
            throw ValidationError(message)
        }
    }
}
