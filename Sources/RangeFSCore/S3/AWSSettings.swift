import Foundation

/// What a bucket mount takes from the places the AWS CLI reads: credentials and region.
public struct AWSSettings: Sendable, Equatable {
    /// Nil when none are set anywhere (whether to go on unsigned is the caller's decision).
    public var credentials: AWSCredentials?
    /// Nil when none is set anywhere.
    public var region: String?
    /// Where the credentials came from, for messages: `environment` or `profile 'media'`.
    public var credentialsSource: String?
    /// The profile whose settings were read (nil when no file had it and none was named).
    public var profile: String?

    public init(credentials: AWSCredentials? = nil, region: String? = nil, credentialsSource: String? = nil,
                profile: String? = nil) {
        self.credentials = credentials
        self.region = region
        self.credentialsSource = credentialsSource
        self.profile = profile
    }

    /// Resolves settings in the AWS CLI's order. Credentials: the keys of `profile` when one is
    /// given (`--profile`); otherwise `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with
    /// `AWS_SESSION_TOKEN`), else the keys of the profile named by `AWS_PROFILE` (or
    /// `AWS_DEFAULT_PROFILE`), else of `default`. A profile's keys are read from the credentials
    /// file's `[name]`, else from the config file's `[profile name]` (`[default]` for default).
    /// Region: `region`, then `AWS_REGION`, `AWS_DEFAULT_REGION`, then the profile's `region` in
    /// the config file. The files are `AWS_SHARED_CREDENTIALS_FILE` and `AWS_CONFIG_FILE` when
    /// set, else `~/.aws/credentials` and `~/.aws/config` under `home`.
    public static func resolve(profile: String?, region: String?, environment: [String: String],
                               home: URL) throws(AWSSettingsError) -> AWSSettings {
        func variable(_ name: String) -> String? {
            environment[name].flatMap { $0.isEmpty ? nil : $0 }
        }
        func file(_ variableName: String, _ defaultName: String) -> URL {
            guard let path = variable(variableName) else {
                return home.appendingPathComponent(".aws").appendingPathComponent(defaultName)
            }
            if path == "~" || path.hasPrefix("~/") {
                return home.appendingPathComponent(String(path.dropFirst(path == "~" ? 1 : 2)))
            }
            return URL(fileURLWithPath: path)
        }
        let credentialsURL = file("AWS_SHARED_CREDENTIALS_FILE", "credentials")
        let configURL = file("AWS_CONFIG_FILE", "config")
        let credentialsFile = try AWSProfileFile.read(credentialsURL)
        let configFile = try AWSProfileFile.read(configURL)

        let namedProfile = profile ?? variable("AWS_PROFILE") ?? variable("AWS_DEFAULT_PROFILE")
        let profileName = namedProfile ?? "default"
        let credentialsSection = credentialsFile?.sections[profileName]
        let configSection = configFile?.sections[profileName == "default" ? "default" : "profile \(profileName)"]
            ?? (profileName == "default" ? configFile?.sections["profile default"] : nil)
        if let namedProfile, credentialsSection == nil, configSection == nil {
            throw AWSSettingsError("profile '\(namedProfile)' not found in \(credentialsURL.path) or \(configURL.path)")
        }

        var settings = AWSSettings()
        let environmentKeys = try keys(accessKeyID: variable("AWS_ACCESS_KEY_ID"),
                                       secret: variable("AWS_SECRET_ACCESS_KEY"),
                                       token: variable("AWS_SESSION_TOKEN"),
                                       names: ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), place: "the environment")
        if profile == nil, let environmentKeys {
            settings.credentials = environmentKeys
            settings.credentialsSource = "environment"
        } else {
            for (section, url) in [(credentialsSection, credentialsURL), (configSection, configURL)] {
                guard let section else { continue }
                let found = try keys(accessKeyID: section["aws_access_key_id"], secret: section["aws_secret_access_key"],
                                     token: section["aws_session_token"],
                                     names: ("aws_access_key_id", "aws_secret_access_key"),
                                     place: "profile '\(profileName)' of \(url.path)")
                if let found {
                    settings.credentials = found
                    settings.credentialsSource = "profile '\(profileName)'"
                    break
                }
            }
        }
        settings.region = region.flatMap { $0.isEmpty ? nil : $0 } ?? variable("AWS_REGION")
            ?? variable("AWS_DEFAULT_REGION") ?? configSection?["region"].flatMap { $0.isEmpty ? nil : $0 }
        if credentialsSection != nil || configSection != nil { settings.profile = profileName }
        return settings
    }

    /// Both keys, neither (nil), or an error naming the one that is missing.
    private static func keys(accessKeyID: String?, secret: String?, token: String?, names: (id: String, secret: String),
                             place: String) throws(AWSSettingsError) -> AWSCredentials? {
        let accessKeyID = accessKeyID.flatMap { $0.isEmpty ? nil : $0 }
        let secret = secret.flatMap { $0.isEmpty ? nil : $0 }
        switch (accessKeyID, secret) {
        case let (id?, secret?):
            return AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: token.flatMap { $0.isEmpty ? nil : $0 })
        case (nil, nil):
            return nil
        case (_?, nil):
            throw AWSSettingsError("\(place) has \(names.id) but no \(names.secret)")
        case (nil, _?):
            throw AWSSettingsError("\(place) has \(names.secret) but no \(names.id)")
        }
    }
}
