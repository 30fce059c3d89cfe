public import Foundation

/// What an app shows: a short description of what happened, why, and what the user can do,
/// as three sentences without URLs, paths, status names or process ids (those stay in
/// ``MapLoaderError/technicalDetail``, for logs). English ships in the library; an app
/// translates by adding a strings table named `MapLoader` to its main bundle
/// (`MapLoader.strings` in each `.lproj`, or a String Catalog `MapLoader.xcstrings`) with
/// the keys of ``MapLoaderError/englishTexts``, whose `{name}` placeholders it keeps.
extension MapLoaderError: LocalizedError {
    /// What happened, in one short sentence: the text of an alert's title.
    public var errorDescription: String? { text(.description) }
    /// Why it happened, in one sentence.
    public var failureReason: String? { text(.reason) }
    /// What the user can do about it, in one sentence.
    public var recoverySuggestion: String? { text(.suggestion) }
    /// The one-line technical message for logs and support: what failed, with the URL,
    /// path, status, `errno` or process id involved, and what a developer can do
    /// (``description``).
    public var technicalDetail: String { description }

    /// The three texts an error has.
    package enum Part: String, CaseIterable, Sendable {
        case description, reason, suggestion
    }

    /// This error's entry in the strings table (the case's name, with a variant where one
    /// case reads differently) and the values of its placeholders.
    package var entry: (name: String, values: [String: String]) {
        switch self {
        case .invalidParameters: return ("invalidParameters", [:])
        case .unknownPackage(let id, let suggestion):
            return suggestion.map { ("unknownPackage.suggested", ["package": id, "suggestion": $0]) } ?? ("unknownPackage", ["package": id])
        case .unknownGroup(let id, let known): return ("unknownGroup", ["group": id, "known": known.joined(separator: ", ")])
        case .requiredGroup(let id): return ("requiredGroup", ["group": id])
        case .notInstalled(let id): return ("notInstalled", ["package": id])
        case .cancelled: return ("cancelled", [:])
        case .noServer: return ("noServer", [:])
        case .connectionFailed: return ("connectionFailed", [:])
        case .httpStatus(_, let status): return (status == 404 ? "httpStatus.missing" : "httpStatus", ["status": "\(status)"])
        case .networkNotAllowed: return ("networkNotAllowed", [:])
        case .integrityFailed: return ("integrityFailed", [:])
        case .invalidMetadata: return ("invalidMetadata", [:])
        case .invalidArchive(let package, _, _): return ("invalidArchive", ["package": package])
        case .versionUnavailable(let installed, let current): return ("versionUnavailable", ["installed": installed, "current": current])
        case .insufficientSpace(let needed, _, _, _) where needed <= 0: return ("insufficientSpace.full", [:])
        case .insufficientSpace(let needed, let available, _, _):
            return (
                "insufficientSpace",
                [
                    "needed": ByteFormat.string(needed), "available": ByteFormat.string(available),
                    "missing": ByteFormat.string(needed - available),
                ]
            )
        case .quotaExceeded(let quota, let needed, _):
            return ("quotaExceeded", ["quota": ByteFormat.string(quota), "needed": ByteFormat.string(needed)])
        case .storageFailed: return ("storageFailed", [:])
        case .busy: return ("busy", [:])
        case .dataDirectoryRefused: return ("dataDirectoryRefused", [:])
        case .signatureRefused: return ("signatureRefused", [:])
        case .rollbackRefused: return ("rollbackRefused", [:])
        }
    }

    /// The text of `part`, from the app's `MapLoader` strings table where it has the key,
    /// else in English, with the placeholders filled.
    private func text(_ part: Part) -> String {
        let (name, values) = entry
        let key = "\(name).\(part.rawValue)"
        var text = Bundle.main.localizedString(forKey: key, value: Self.englishTexts[key] ?? key, table: "MapLoader")
        for (placeholder, value) in values { text = text.replacingOccurrences(of: "{\(placeholder)}", with: value) }
        return text
    }

    /// Every key of the strings table with its English text. `{name}` marks a placeholder.
    public static let englishTexts: [String: String] = [
        "invalidParameters.description": "The request could not be carried out.",
        "invalidParameters.reason": "The app asked for something with a value that is out of range or malformed.",
        "invalidParameters.suggestion": "Try again; if it keeps happening, contact the app's support.",
        "unknownPackage.description": "There is no map named “{package}”.",
        "unknownPackage.reason": "The map catalog does not list it.",
        "unknownPackage.suggestion": "Choose a map from the list.",
        "unknownPackage.suggested.description": "There is no map named “{package}”.",
        "unknownPackage.suggested.reason": "The map catalog does not list it.",
        "unknownPackage.suggested.suggestion": "Did you mean “{suggestion}”?",
        "unknownGroup.description": "There is no map data named “{group}”.",
        "unknownGroup.reason": "The maps offer {known}.",
        "unknownGroup.suggestion": "Choose one of the kinds of data the maps offer.",
        "requiredGroup.description": "“{group}” cannot be turned off.",
        "requiredGroup.reason": "Every map needs this data.",
        "requiredGroup.suggestion": "Keep it turned on.",
        "notInstalled.description": "The map “{package}” is not downloaded.",
        "notInstalled.reason": "A map has to be downloaded before it can be updated or removed.",
        "notInstalled.suggestion": "Download the map first.",
        "cancelled.description": "The operation was cancelled.",
        "cancelled.reason": "It stopped before it finished; your maps are as they were.",
        "cancelled.suggestion": "Start it again when you are ready.",
        "noServer.description": "No map server is set up.",
        "noServer.reason": "The app has no address to download maps from.",
        "noServer.suggestion": "Maps already downloaded still work; contact the app's support to get new ones.",
        "connectionFailed.description": "The map server could not be reached.",
        "connectionFailed.reason": "The network connection failed or was lost.",
        "connectionFailed.suggestion": "Check the internet connection and try again.",
        "httpStatus.description": "The map server could not send the maps.",
        "httpStatus.reason": "The server answered with error {status}.",
        "httpStatus.suggestion": "Try again later.",
        "httpStatus.missing.description": "The map server is missing a file.",
        "httpStatus.missing.reason": "The server answered with error {status}: the file is not there.",
        "httpStatus.missing.suggestion": "Try again later; if it keeps happening, contact the map provider.",
        "integrityFailed.description": "A download was damaged.",
        "integrityFailed.reason": "The data did not match what the map provider signed, so it was not used.",
        "integrityFailed.suggestion": "Try again; if it keeps happening, contact the map provider.",
        "invalidMetadata.description": "The list of maps could not be read.",
        "invalidMetadata.reason": "The map provider's files are malformed.",
        "invalidMetadata.suggestion": "Try again later; if it keeps happening, contact the map provider.",
        "invalidArchive.description": "The map “{package}” could not be installed.",
        "invalidArchive.reason": "Its download holds data that may not be installed.",
        "invalidArchive.suggestion": "Try again later; if it keeps happening, contact the map provider.",
        "versionUnavailable.description": "Your maps (version {installed}) are no longer offered.",
        "versionUnavailable.reason": "The map provider now offers version {current}.",
        "versionUnavailable.suggestion": "Update your maps.",
        "insufficientSpace.description": "There is not enough storage for this change.",
        "insufficientSpace.reason": "It needs {needed} and {available} is free.",
        "insufficientSpace.suggestion": "Free up {missing} or remove some maps, then try again.",
        "insufficientSpace.full.description": "The device ran out of storage.",
        "insufficientSpace.full.reason": "The storage filled up while maps were being saved; your maps are as they were.",
        "insufficientSpace.full.suggestion": "Free up some storage and try again.",
        "quotaExceeded.description": "This change needs more space than is set aside for maps.",
        "quotaExceeded.reason": "It needs {needed} and {quota} is set aside.",
        "quotaExceeded.suggestion": "Remove some maps or set aside more space.",
        "storageFailed.description": "Maps could not be saved on this device.",
        "storageFailed.reason": "Reading or writing the map storage failed.",
        "storageFailed.suggestion": "Check that the device has free storage and try again.",
        "networkNotAllowed.description": "Maps are not downloaded on this network.",
        "networkNotAllowed.reason": "The device is on a cellular or low-data network, which the app's settings leave out for downloads.",
        "networkNotAllowed.suggestion": "Connect to Wi-Fi, or allow downloads on this network in the settings.",
        "busy.description": "The maps are being changed right now.",
        "busy.reason": "Another download or update is working on the same maps.",
        "busy.suggestion": "Try again when it has finished.",
        "dataDirectoryRefused.description": "The map storage cannot be used.",
        "dataDirectoryRefused.reason": "The folder holds other files, or maps saved by a newer version of the app.",
        "dataDirectoryRefused.suggestion": "Choose another folder for maps, or update the app.",
        "signatureRefused.description": "The maps could not be verified.",
        "signatureRefused.reason": "The list of maps is not signed by a provider this app trusts.",
        "signatureRefused.suggestion": "Update the app; if it keeps happening, contact the app's support.",
        "rollbackRefused.description": "The list of maps is out of date.",
        "rollbackRefused.reason": "The server sent an older or expired list than the one already used.",
        "rollbackRefused.suggestion": "Try again later.",
    ]
}
