import Foundation
import MapPlatform
import MapTestSupport
import Testing

/// `FileSystem.makeDirectories`, the store's and the publisher's `mkdir -p`, on real
/// folders: what exists costs no error, what is in the way is refused.
@Suite struct MakeDirectoriesTests {
    @Test func makesMissingParentsAndAcceptsWhatExists() throws {
        let dir = TemporaryDirectory("mkdir")
        let deep = dir.path("a/b/c").path
        try FileSystem.makeDirectories(deep + "/")
        #expect(FileStatus.of(deep)?.kind == .directory)
        try FileSystem.makeDirectories(deep)
        try FileSystem.makeDirectories(dir.path("a/b/d").path)
        #expect(FileStatus.of(dir.path("a/b/d").path)?.kind == .directory)
        try FileSystem.makeDirectories("")
    }

    @Test func refusesAFileInTheWay() throws {
        let dir = TemporaryDirectory("mkdir")
        try Data("x".utf8).write(to: dir.path("file"))
        #expect(throws: SystemError.self) { try FileSystem.makeDirectories(dir.path("file").path) }
        #expect(throws: SystemError.self) { try FileSystem.makeDirectories(dir.path("file/sub").path) }
    }

    /// A link among the parents is followed, as `mkdir -p` does (macOS's `/var` is one);
    /// a link where the folder itself should be is refused.
    @Test func followsALinkedParentButRefusesALinkedFolder() throws {
        let dir = TemporaryDirectory("mkdir")
        try FileSystem.makeDirectories(dir.path("real").path)
        try FileSystem.symbolicLink(dir.path("link").path, to: dir.path("real").path)
        try FileSystem.makeDirectories(dir.path("link/sub/deeper").path)
        #expect(FileStatus.of(dir.path("real/sub/deeper").path)?.kind == .directory)
        #expect(throws: SystemError.self) { try FileSystem.makeDirectories(dir.path("link").path) }
    }
}
