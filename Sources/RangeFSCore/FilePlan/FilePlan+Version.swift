import Foundation

/// A file made from the size a listing states (`LoadedFiles`) was not probed: its first range
/// request goes out at once, one round trip sooner, without a validator. The first reply names
/// the version, which later requests send as `If-Range`; a reply to a request that went out
/// before that is checked here against the version named first, before its bytes are used.
extension FilePlan {
    /// No reply has named the file's version yet and nothing of it is cached: the next reply's
    /// validator (and where a redirect led it) becomes the file's.
    var learnsVersion: Bool {
        sources.isSingle && source.validator.isEmpty && source.location == nil
            && available.presentCount == 0 && partial.isEmpty
    }

    /// The reply to a request sent to `asked` without the file's validator named `info` (its
    /// size already checked). Returns why the reply must not fill the cache, if it must not,
    /// and the actions (the version learned is saved with the file's record).
    mutating func versionReplied(_ info: RemoteFileInfo, asked: URL) -> (refused: RemoteError?, [Action]) {
        if learnsVersion {
            guard !info.validator.isEmpty || info.finalURL != nil else { return (nil, []) }
            source = FetchSource(location: info.finalURL, validator: info.validator)
            return (nil, [.saveSource(source)])
        }
        switch source.verdict(on: info, probedURL: asked, origin: url, size: layout.fileSize) {
        case .same:
            return (nil, [])
        case .moved(let elsewhere):
            // Another place answered than the first reply's: the transfer asks where the file is now.
            return (.servedElsewhere("answered from \(elsewhere.location?.redactedForDisplay ?? name)"), [])
        case .changed(let why):
            return (.changed(why), [])
        }
    }
}
