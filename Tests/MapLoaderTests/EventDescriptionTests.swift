import Foundation
import MapTestSupport
import Testing

@testable import MapLoader

/// Events, plans and reports print as one readable line each: no module names, no raw
/// dumps of nested values.
@Suite struct EventDescriptionTests {
    @Test func everyEventOfAnInstallAndAPatchedUpdateReadsAsOneLine() async throws {
        let site = try TestSite()
        let loader = site.loader()
        let log = EventLog()
        let events = loader.events()
        let collector = Task { for await event in events { await log.append(event) } }
        try await loader.install(["de-berlin"])
        try site.publish(2)
        let report = try await loader.performUpdate()
        loader.closeEventStreams()
        await collector.value
        let lines = await log.events.map(\.description) + [report.description, "\(report.steps[0])"]
        #expect(lines.count > 10)
        for line in lines {
            #expect(!line.contains("\n") && line.count < 300, "\(line)")
            #expect(!line.contains("MapModel.") && !line.contains("MapPlanner.") && !line.contains("MapLoader."), "\(line)")
        }
        #expect(lines.contains { $0.hasPrefix("planned de-berlin/base: patch v1→v2") }, "\(lines)")
        #expect(report.description.hasPrefix("updated v1→v2: "))
    }
}
