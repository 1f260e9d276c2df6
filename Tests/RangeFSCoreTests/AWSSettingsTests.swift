import Foundation
import Testing
@testable import RangeFSCore

/// A home directory of its own in the temporary folder, with the AWS files a test writes.
private final class TemporaryHome {
    let url: URL
    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("aws-home-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url.appendingPathComponent(".aws"), withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }

    var credentialsPath: String { url.appendingPathComponent(".aws/credentials").path }
    var configPath: String { url.appendingPathComponent(".aws/config").path }

    func write(credentials: String? = nil, config: String? = nil) throws {
        if let credentials { try credentials.write(toFile: credentialsPath, atomically: true, encoding: .utf8) }
        if let config { try config.write(toFile: configPath, atomically: true, encoding: .utf8) }
    }

    func resolve(profile: String? = nil, region: String? = nil,
                 environment: [String: String] = [:]) throws(AWSSettingsError) -> AWSSettings {
        try AWSSettings.resolve(profile: profile, region: region, environment: environment, home: url)
    }
}

private let credentialsText = """
    # keys of two profiles
    [default]
    aws_access_key_id = DEFAULTKEY
    aws_secret_access_key = default/secret

    ; the media profile has a session token
    [media]
    aws_access_key_id=MEDIAKEY
    aws_secret_access_key=media+secret=
    aws_session_token = media-token
    """

private let configText = """
    [default]
    region = eu-west-1
    s3 =
      addressing_style = path
      region = not-a-region

    [profile media]
    region = eu-central-1

    [profile inconfig]
    AWS_ACCESS_KEY_ID = CONFIGKEY
    aws_secret_access_key = config-secret
    region = ap-south-1
    """

private let environmentKeys = ["AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "env-secret"]

@Suite("AWS settings: credentials and region from the environment and the AWS files")
struct AWSSettingsTests {
    @Test func nothingAnywhereIsNoCredentialsAndNoRegion() throws {
        let home = try TemporaryHome()
        #expect(try home.resolve() == AWSSettings())
    }

    @Test func theDefaultProfileGivesKeysAndItsRegion() throws {
        let home = try TemporaryHome()
        try home.write(credentials: credentialsText, config: configText)
        let settings = try home.resolve()
        #expect(settings.credentials == AWSCredentials(accessKeyID: "DEFAULTKEY", secretAccessKey: "default/secret"))
        #expect(settings.region == "eu-west-1", "the nested s3 region must not count")
        #expect(settings.profile == "default")
        #expect(settings.credentialsSource == "profile 'default'")
    }

    @Test func environmentKeysComeBeforeAnyProfileFromTheEnvironment() throws {
        let home = try TemporaryHome()
        try home.write(credentials: credentialsText, config: configText)
        var environment = environmentKeys
        environment["AWS_SESSION_TOKEN"] = "env-token"
        environment["AWS_PROFILE"] = "media"
        let settings = try home.resolve(environment: environment)
        #expect(settings.credentials == AWSCredentials(accessKeyID: "ENVKEY", secretAccessKey: "env-secret", sessionToken: "env-token"))
        #expect(settings.credentialsSource == "environment")
        #expect(settings.region == "eu-central-1", "the region still comes from AWS_PROFILE's profile")
    }

    @Test func anExplicitProfileComesBeforeEnvironmentKeys() throws {
        let home = try TemporaryHome()
        try home.write(credentials: credentialsText, config: configText)
        let settings = try home.resolve(profile: "media", environment: environmentKeys)
        #expect(settings.credentials == AWSCredentials(accessKeyID: "MEDIAKEY", secretAccessKey: "media+secret=",
                                                       sessionToken: "media-token"))
        #expect(settings.credentialsSource == "profile 'media'")
        #expect(settings.region == "eu-central-1")
    }

    @Test func awsProfileThenAwsDefaultProfileNameTheProfile() throws {
        let home = try TemporaryHome()
        try home.write(credentials: credentialsText, config: configText)
        #expect(try home.resolve(environment: ["AWS_PROFILE": "media", "AWS_DEFAULT_PROFILE": "inconfig"]).profile == "media")
        let fromDefaultProfile = try home.resolve(environment: ["AWS_DEFAULT_PROFILE": "inconfig"])
        #expect(fromDefaultProfile.profile == "inconfig")
        #expect(fromDefaultProfile.credentials?.accessKeyID == "CONFIGKEY", "keys in the config file, key names in any case")
        #expect(fromDefaultProfile.region == "ap-south-1")
    }

    @Test func regionOrder() throws {
        let home = try TemporaryHome()
        try home.write(config: configText)
        let both = ["AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "us-east-2"]
        #expect(try home.resolve(region: "sa-east-1", environment: both).region == "sa-east-1")
        #expect(try home.resolve(environment: both).region == "us-west-2")
        #expect(try home.resolve(environment: ["AWS_DEFAULT_REGION": "us-east-2"]).region == "us-east-2")
        #expect(try home.resolve(environment: ["AWS_REGION": ""]).region == "eu-west-1", "an empty variable is unset")
    }

    @Test func filesNamedByTheEnvironmentReplaceTheHomeOnes() throws {
        let home = try TemporaryHome()
        try home.write(credentials: credentialsText, config: configText)
        let elsewhere = try TemporaryHome()
        let credentials = elsewhere.url.appendingPathComponent("creds.ini")
        let config = elsewhere.url.appendingPathComponent("conf.ini")
        try "[default]\naws_access_key_id = OTHER\naws_secret_access_key = other\n".write(to: credentials, atomically: true, encoding: .utf8)
        try "[default]\nregion = af-south-1\n".write(to: config, atomically: true, encoding: .utf8)
        let settings = try home.resolve(environment: ["AWS_SHARED_CREDENTIALS_FILE": credentials.path, "AWS_CONFIG_FILE": config.path])
        #expect(settings.credentials?.accessKeyID == "OTHER")
        #expect(settings.region == "af-south-1")
    }

    @Test func aNamedProfileThatIsNowhereIsAnError() throws {
        let home = try TemporaryHome()
        try home.write(credentials: credentialsText, config: configText)
        let expected = AWSSettingsError("profile 'nope' not found in \(home.credentialsPath) or \(home.configPath)")
        #expect(throws: expected) { try home.resolve(profile: "nope") }
        #expect(throws: expected) { try home.resolve(environment: ["AWS_PROFILE": "nope"]) }
    }

    @Test func halfAKeyPairIsAnError() throws {
        let home = try TemporaryHome()
        #expect(throws: AWSSettingsError("the environment has AWS_ACCESS_KEY_ID but no AWS_SECRET_ACCESS_KEY")) {
            try home.resolve(environment: ["AWS_ACCESS_KEY_ID": "ENVKEY"])
        }
        #expect(throws: AWSSettingsError("the environment has AWS_SECRET_ACCESS_KEY but no AWS_ACCESS_KEY_ID")) {
            try home.resolve(environment: ["AWS_SECRET_ACCESS_KEY": "env-secret"])
        }
        try home.write(credentials: "[default]\naws_access_key_id = HALF\n")
        #expect(throws: AWSSettingsError("profile 'default' of \(home.credentialsPath) has aws_access_key_id but no aws_secret_access_key")) {
            try home.resolve()
        }
    }

    @Test func aMalformedLineIsAnErrorWithFileAndLine() throws {
        let home = try TemporaryHome()
        try home.write(config: "[default]\nregion = eu-west-1\n\nthis is not a setting\n")
        #expect(throws: AWSSettingsError("\(home.configPath):4: expected [section] or key = value")) { try home.resolve() }
        try home.write(config: "[default\n")
        #expect(throws: AWSSettingsError("\(home.configPath):1: a section header must be [name]: [default")) { try home.resolve() }
        try home.write(config: "# settings\nregion = eu-west-1\n")
        #expect(throws: AWSSettingsError("\(home.configPath):2: 'region' comes before any [section]")) { try home.resolve() }
    }

    @Test func anUnreadableFileIsAnError() throws {
        let home = try TemporaryHome()
        // A directory where the file should be: unreadable as a file even for root.
        try FileManager.default.createDirectory(atPath: home.credentialsPath, withIntermediateDirectories: true)
        #expect(throws: AWSSettingsError("cannot read \(home.credentialsPath): Is a directory")) { try home.resolve() }
        try FileManager.default.removeItem(atPath: home.credentialsPath)
        try Data([0x5B, 0x64, 0x5D, 0x0A, 0xFF, 0xFE]).write(to: URL(fileURLWithPath: home.credentialsPath))
        #expect(throws: AWSSettingsError("cannot read \(home.credentialsPath): not UTF-8 text")) { try home.resolve() }
    }
}
