import MapLoader

extension MapLoaderError {
    /// What to type, which the command adds to the library's message (the library speaks
    /// of what to do, the command of its flags and subcommands).
    var commandLineHint: String? {
        switch self {
        case .unknownPackage: return "run 'maploader list' to see package ids"
        case .notInstalled(let id): return "run 'maploader install \(id)'"
        case .noServer: return "pass --server URL or set MAPLOADER_SERVER"
        case .versionUnavailable: return "run 'maploader update'"
        case .networkNotAllowed: return "--network any allows every network"
        case .quotaExceeded: return "'maploader config set quota SIZE' sets the quota"
        case .signatureRefused:
            return "--trust-key KEY trusts a publisher key (--add-trust-key beside those trusted, "
                + "'maploader forget-keys' forgets them); --allow-unsigned accepts a site you control"
        default: return nil
        }
    }
}
