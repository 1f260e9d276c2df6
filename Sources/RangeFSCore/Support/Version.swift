public enum RangeFSVersion {
    public static let current = "0.1.0"
}
