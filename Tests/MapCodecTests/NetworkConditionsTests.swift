import Foundation
import MapTestSupport
import Testing

/// Which network downloads would leave through, read from a route table and interface
/// folders in the kernel's forms. A cellular modem is a fault this machine cannot cause, so
/// the files are fakes written by the test (as `/proc/net/route` and `/sys/class/net` show them).
@Suite struct NetworkConditionsTests {
    static let header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"

    /// A fake `/proc/net/route` and `/sys/class/net` with `routes` (interface, destination,
    /// metric) and `devtypes` (interface → `DEVTYPE` of its uevent).
    static func fakeSystem(_ routes: [(String, String, Int)], devtypes: [String: String] = [:], in dir: TemporaryDirectory) throws -> (String, String)
    {
        let table =
            header
            + routes.map { "\($0.0)\t\($0.1)\t010200C0\t0003\t0\t0\t\($0.2)\t\($0.1 == "00000000" ? "00000000" : "00FFFFFF")\t0\t0\t0" }
            .joined(separator: "\n") + "\n"
        try Data(table.utf8).write(to: dir.path("route"))
        for (name, devtype) in devtypes {
            let folder = dir.path("net/\(name)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("INTERFACE=\(name)\nIFINDEX=3\nDEVTYPE=\(devtype)\n".utf8).write(to: folder.appendingPathComponent("uevent"))
        }
        return (dir.path("route").path, dir.path("net").path)
    }

    @Test func aDefaultRouteThroughAFakeCellularModemIsExpensive() throws {
        let dir = TemporaryDirectory()
        let (routes, interfaces) = try Self.fakeSystem([("wwan0", "00000000", 0), ("wwan0", "000200C0", 0)], devtypes: ["wwan0": "wwan"], in: dir)
        #expect(NetworkConditions.read(routes: routes, interfaces: interfaces) == NetworkConditions(interface: "wwan0", expensive: true))
        // A modem under another name, told by its DEVTYPE.
        let (routes2, interfaces2) = try Self.fakeSystem([("usb0", "00000000", 0)], devtypes: ["usb0": "wwan"], in: dir)
        #expect(NetworkConditions.read(routes: routes2, interfaces: interfaces2)?.expensive == true)
        // An Android radio interface by its name alone.
        let (routes3, interfaces3) = try Self.fakeSystem([("rmnet_data0", "00000000", 0)], in: dir)
        #expect(NetworkConditions.read(routes: routes3, interfaces: interfaces3)?.expensive == true)
    }

    @Test func wiredAndWiFiAreNotExpensiveAndTheLowestMetricWins() throws {
        let dir = TemporaryDirectory()
        let (routes, interfaces) = try Self.fakeSystem(
            [("wwan0", "00000000", 700), ("eth0", "00000000", 100), ("wlan0", "000200C0", 0)], devtypes: ["wwan0": "wwan", "wlan0": "wlan"], in: dir)
        #expect(NetworkConditions.read(routes: routes, interfaces: interfaces) == NetworkConditions(interface: "eth0", expensive: false))
        let (routes2, interfaces2) = try Self.fakeSystem([("wlan0", "00000000", 600)], devtypes: ["wlan0": "wlan"], in: dir)
        #expect(NetworkConditions.read(routes: routes2, interfaces: interfaces2)?.expensive == false)
    }

    /// The kernel prints a metric of 2^31 or more as a negative number: it is large, not small.
    @Test func aMetricPrintedNegativeIsLargeAndRejectRoutesCarryNothing() throws {
        let dir = TemporaryDirectory()
        let (routes, interfaces) = try Self.fakeSystem([("wwan0", "00000000", -2), ("eth0", "00000000", 1000)], devtypes: ["wwan0": "wwan"], in: dir)
        #expect(NetworkConditions.read(routes: routes, interfaces: interfaces)?.interface == "eth0")
        let table =
            Self.header
            + "wwan0\t00000000\t00000000\t0201\t0\t0\t0\t00000000\t0\t0\t0\neth0\t00000000\t010200C0\t0003\t0\t0\t500\t00000000\t0\t0\t0\n"
        try Data(table.utf8).write(to: dir.path("route"))
        #expect(NetworkConditions.read(routes: routes, interfaces: interfaces)?.interface == "eth0", "a reject route is passed over")
    }

    @Test func noDefaultRouteOrAStrangeNameIsUnknown() throws {
        let dir = TemporaryDirectory()
        let (routes, interfaces) = try Self.fakeSystem([("eth0", "000200C0", 0)], in: dir)
        #expect(NetworkConditions.read(routes: routes, interfaces: interfaces) == nil)
        let (routes2, interfaces2) = try Self.fakeSystem([("../../etc", "00000000", 0)], in: dir)
        #expect(NetworkConditions.read(routes: routes2, interfaces: interfaces2) == nil)
        #expect(NetworkConditions.read(routes: "/nonexistent/route", interfaces: "/nonexistent") == nil)
    }

    @Test func thePolicyRefusesOnlyWhatItLeavesOut() {
        let cellular = NetworkConditions(interface: "wwan0", expensive: true)
        let lowData = NetworkConditions(interface: "wlan0", expensive: false, constrained: true)
        let wifi = NetworkConditions(interface: "wlan0", expensive: false)
        let unmetered = NetworkPolicy(allowsExpensive: false, allowsConstrained: false)
        #expect(unmetered.refusal(cellular)?.contains("wwan0") == true)
        #expect(unmetered.refusal(lowData)?.contains("low-data") == true)
        #expect(unmetered.refusal(wifi) == nil)
        #expect(unmetered.refusal(nil) == nil, "unknown conditions are the transport's to enforce")
        #expect(NetworkPolicy.any.refusal(cellular) == nil)
        #expect(NetworkPolicy(allowsExpensive: true, allowsConstrained: false).refusal(cellular) == nil)
    }
}
