package import Foundation

#if canImport(Darwin)
    import Darwin
#elseif canImport(Android)
    import Android
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Where a program's own data goes on each platform: the default data directory.
///
/// - Apple platforms: Application Support (inside the app's container on iOS and iPadOS).
/// - Android: the app's `no_backup` folder, `/data/user/<user>/<package>/no_backup`, which
///   `Context.getNoBackupFilesDir()` names and Auto Backup skips.
/// - Linux and the rest: `$XDG_DATA_HOME`, else `~/.local/share`.
package enum StandardFolders {
    /// The folder `name` inside the platform's folder for a program's own data.
    package static func applicationData(_ name: String) -> URL {
        #if canImport(Darwin)
            if let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first {
                return support.appendingPathComponent(name, isDirectory: true)
            }
        #elseif canImport(Android)
            if let command = FileSystem.contents("/proc/self/cmdline"),
                let folder = androidNoBackup(commandLine: command, uid: UInt32(getuid()))
            {
                return folder.appendingPathComponent(name, isDirectory: true)
            }
        #endif
        let environment = ProcessInfo.processInfo.environment
        return xdgData(name, environment: environment)
    }

    /// `$XDG_DATA_HOME/<name>`, else `$HOME/.local/share/<name>` (`$HOME` first: Foundation's
    /// own lookup asks the password database when running as root).
    package static func xdgData(_ name: String, environment: [String: String]) -> URL {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent(name, isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/share/\(name)", isDirectory: true)
    }

    /// An Android app's `no_backup` folder from its process's command line (the package
    /// name, with `:<process>` for a secondary process) and its uid (user × 100000 + app
    /// id); `nil` when the command line is not a package name.
    package static func androidNoBackup(commandLine: Data, uid: UInt32) -> URL? {
        let first = commandLine.prefix { $0 != 0 }
        guard first.count <= 256 else { return nil }
        let process = String(decoding: first, as: UTF8.self)
        let package = process.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let parts = package.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2,
            parts.allSatisfy({ part in
                guard let head = part.first, head.isASCII, head.isLetter else { return false }
                return part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            })
        else { return nil }
        return URL(fileURLWithPath: "/data/user/\(uid / 100_000)/\(package)/no_backup", isDirectory: true)
    }

    /// Keeps the folder at `url` and everything in it out of the device's backups: on Apple
    /// platforms it is marked `isExcludedFromBackup` (maps can be downloaded again; Apple's
    /// storage guidelines keep such data out of iCloud and computer backups). Elsewhere
    /// nothing is marked: Android's default folder is one Auto Backup skips, and Linux has
    /// no such mark. Returns whether the folder was marked.
    @discardableResult
    package static func excludeFromBackup(_ url: URL) -> Bool {
        #if canImport(Darwin)
            var folder = url
            var values = URLResourceValues()
            values.isExcludedFromBackup = true
            return (try? folder.setResourceValues(values)) != nil
        #else
            return false
        #endif
    }
}
