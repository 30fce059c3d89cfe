import Foundation
import MapLoader
import MapPlatform
import Testing

/// The default data directory of each platform, from what the platform gives a process.
@Suite struct StandardFoldersTests {
    @Test func linuxFollowsTheXDGBaseDirectories() {
        #expect(
            StandardFolders.xdgData("maploader", environment: ["XDG_DATA_HOME": "/srv/data", "HOME": "/home/ann"]).path
                == "/srv/data/maploader")
        #expect(StandardFolders.xdgData("maploader", environment: ["HOME": "/home/ann"]).path == "/home/ann/.local/share/maploader")
        // The XDG rules: an empty or relative XDG_DATA_HOME is ignored.
        #expect(
            StandardFolders.xdgData("maploader", environment: ["XDG_DATA_HOME": "data", "HOME": "/home/ann"]).path
                == "/home/ann/.local/share/maploader")
        #expect(
            StandardFolders.xdgData("maploader", environment: ["XDG_DATA_HOME": "", "HOME": "/home/ann"]).path
                == "/home/ann/.local/share/maploader")
        // What a loader uses when the app names no folder, on this machine.
        #if !canImport(Darwin)
            #expect(
                MapLoader.Configuration.defaultDataDirectory.path
                    == StandardFolders.xdgData("maploader", environment: ProcessInfo.processInfo.environment).path)
        #endif
        #expect(MapLoader.Configuration(server: nil).dataDirectory == MapLoader.Configuration.defaultDataDirectory)
    }

    /// Android: the app's `no_backup` folder, from its process name and uid, for the main
    /// user and a work profile (user 10), and for a secondary process (`:sync`).
    @Test(arguments: [
        ("com.example.maps\0", UInt32(10_123), "/data/user/0/com.example.maps/no_backup"),
        ("com.example.maps:sync\0", UInt32(1_010_123), "/data/user/10/com.example.maps/no_backup"),
        ("org.organic_maps2.app\0--flag\0", UInt32(10_200), "/data/user/0/org.organic_maps2.app/no_backup"),
    ])
    func androidUsesTheAppsNoBackupFolder(commandLine: String, uid: UInt32, expected: String) {
        #expect(StandardFolders.androidNoBackup(commandLine: Data(commandLine.utf8), uid: uid)?.path == expected)
    }

    /// A process that is not an app (a shell, a path, a name with `..`) gets no Android folder.
    @Test(arguments: [
        "sh\0", "/system/bin/app_process\0", "com..maps\0", "com.example/../x\0", "1com.maps\0", "", String(repeating: "a.", count: 200),
    ])
    func aProcessThatIsNotAnAppGetsNone(commandLine: String) {
        #expect(StandardFolders.androidNoBackup(commandLine: Data(commandLine.utf8), uid: 10_123) == nil)
    }
}
