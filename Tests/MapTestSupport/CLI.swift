import Foundation

/// Runs the real `maploader` binary (built next to the test bundle by
/// `swift build --build-tests`) and captures what it prints.
package enum CLI {
    package struct Result {
        package let status: Int32
        package let stdout: String
        package let stderr: String
    }

    /// The CLI built next to the test bundle by `swift build --build-tests`.
    package static let binary: URL = {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: folder.appendingPathComponent("maploader").path), folder.path != "/" {
            folder.deleteLastPathComponent()
        }
        return folder.appendingPathComponent("maploader")
    }()

    /// Starts the CLI; the caller waits for it (`finish`) or kills it.
    /// - Parameter parent: a command (found on `PATH`) that runs the CLI as its child, given
    ///   the CLI's path and arguments after its own.
    package static func start(
        _ arguments: [String], environment: [String: String] = [:],
        directory: URL? = nil, parent: [String] = []
    ) throws -> (Process, output: URL, errors: URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("maploader-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let output = folder.appendingPathComponent("stdout")
        let errors = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let process = Process()
        if parent.isEmpty {
            process.executableURL = binary
            process.arguments = arguments
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = parent + [binary.path] + arguments
        }
        var env = ProcessInfo.processInfo.environment
        // The test run's settings stay out of the CLI's way, but for the transport a run
        // tests (scripts/test.sh runs the network suites again with MAPLOADER_TRANSPORT=foundation).
        for key in env.keys where key.hasPrefix("MAPLOADER_") && key != "MAPLOADER_TRANSPORT" { env[key] = nil }
        env.merge(environment) { _, new in new }
        process.environment = env
        if let directory { process.currentDirectoryURL = directory }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        return (process, output, errors)
    }

    /// Waits for a started CLI and reads what it printed.
    package static func finish(_ started: (Process, output: URL, errors: URL)) throws -> Result {
        started.0.waitUntilExit()
        defer { try? FileManager.default.removeItem(at: started.output.deletingLastPathComponent()) }
        return Result(
            status: started.0.terminationStatus,
            stdout: try String(contentsOf: started.output, encoding: .utf8),
            stderr: try String(contentsOf: started.errors, encoding: .utf8))
    }

    /// Runs the CLI to completion.
    package static func run(_ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws -> Result {
        try finish(start(arguments, environment: environment, directory: directory))
    }

    /// Runs a client command against `site` with `data` as the data directory.
    package static func run(_ arguments: [String], site: TestSite, data: URL) throws -> Result {
        try run(arguments + ["--server", site.url, "--data-dir", data.path, "--trust-key", site.publicKey.base64])
    }

    /// The arguments that point a client command at `site` and `data`.
    package static func client(_ site: TestSite, _ data: URL) -> [String] {
        ["--server", site.url, "--data-dir", data.path, "--trust-key", site.publicKey.base64]
    }
}

extension CLI {
    /// ``run(_:environment:directory:)`` on a thread of its own: an async test waiting for
    /// the CLI never holds a thread of Swift's cooperative pool (two on a two-core machine),
    /// which the operations of tests running beside it need.
    package static func run(_ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) async throws -> Result {
        try await RawThread.value { try run(arguments, environment: environment, directory: directory) }
    }

    /// ``run(_:site:data:)`` on a thread of its own.
    package static func run(_ arguments: [String], site: TestSite, data: URL) async throws -> Result {
        try await RawThread.value { try run(arguments, site: site, data: data) }
    }
}

/// Runs blocking work on a thread of its own, so it is not held up when other tests keep
/// Swift's cooperative pool busy.
package enum RawThread {
    package static func run(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await value(work)
    }

    /// The result of `work`, computed on a thread of its own.
    package static func value<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

extension CLI {
    /// Runs the CLI as the child of a `python3` that reports its peak resident memory
    /// (`ru_maxrss`), on a thread of its own: what the kernel saw, whatever the CLI did.
    package static func runMeasuringMemory(_ arguments: [String]) async throws -> (result: Result, peakBytes: Int64) {
        let script = """
            import resource, subprocess, sys
            code = subprocess.run(sys.argv[1:]).returncode
            sys.stderr.write("\\nmaxrss-kib=%d\\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
            sys.exit(code if code >= 0 else 128 - code)
            """
        let raw = try await RawThread.value { try finish(start(arguments, parent: ["python3", "-c", script])) }
        let marker = raw.stderr.range(of: "\nmaxrss-kib=", options: .backwards)
        let peak = marker.flatMap { Int64(raw.stderr[$0.upperBound...].trimmingCharacters(in: .whitespacesAndNewlines)) } ?? -1
        let stderr = marker.map { String(raw.stderr[..<$0.lowerBound]) } ?? raw.stderr
        return (Result(status: raw.status, stdout: raw.stdout, stderr: stderr), peak * 1024)
    }
}
