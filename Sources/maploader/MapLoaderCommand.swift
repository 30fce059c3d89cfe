import ArgumentParser
import Foundation

/// The `maploader` command: installs offline map packages and keeps them current.
@main
struct MapLoaderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "maploader",
        abstract: "Install offline map packages and keep them current with small binary patches.",
        discussion: """
            A publisher turns release folders into a static site (maploader publish) that any \
            HTTP server can host (maploader serve, nginx, a CDN). Devices install packages from \
            it and update with patches, falling back to full archives when needed.

            Quick start (in a folder holding a release folder, release-v1):
              maploader keygen publisher.key > publisher.pub
              maploader publish ./release-v1 --site ./site --version v1 --key publisher.key
              maploader serve ./site --port 8080 & sleep 1
              export MAPLOADER_SERVER=http://127.0.0.1:8080
              export MAPLOADER_TRUST_KEY=$(cat publisher.pub)
              maploader list
              maploader install de-berlin
              maploader check-update || [ $? -eq 3 ] && maploader update

            Options shared by the client commands (\(CommandLineFront.sharedOptionNames)) may \
            come before or after the command.

            Installed files are read at <data-dir>/current/<package>/<group>/<path>. On a \
            card without symbolic links (FAT, exFAT) current is a file naming the live \
            folder: read through 'maploader pin -- <command> {}' there (and anywhere, to \
            keep one version while updates run).

            Exit codes:
              0  success (check-update: up to date)
              1  storage or other failure
              3  check-update: an update is available
              4  unknown package or group, or package not installed
              5  network failure (server unreachable, HTTP error)
              6  integrity failure (hash, length, archive or manifest refused)
              7  signature or rollback refused
              8  not enough disk space
              9  installed version no longer on the server: update first
              10 another maploader is changing the data directory (with --no-wait)
              11 the network may not carry downloads (with --network unmetered)
              64 usage error;  130 cancelled
            """,
        version: MapLoaderVersion.current,
        subcommands: [
            ListCommand.self, InfoCommand.self, LocateCommand.self, InstallCommand.self, UninstallCommand.self,
            GroupsCommand.self, CheckUpdateCommand.self, UpdateCommand.self, VerifyCommand.self, RepairCommand.self,
            DiskUsageCommand.self, CollectGarbageCommand.self, TagCommand.self, CoverageCommand.self, ConfigCommand.self, ExportCommand.self,
            PinCommand.self, ForgetKeysCommand.self,
            PublishCommand.self, ShardCommand.self, PruneCommand.self, ServeCommand.self, KeygenCommand.self, SignCommand.self, RootCommand.self,
        ]
    )
}

/// The version `maploader --version` prints.
enum MapLoaderVersion {
    static let current = "0.3.0"
}
