import Foundation

/// What the system says about the network downloads would go over, where it says anything
/// a file can show.
///
/// - Linux: the interface of the IPv4 default route (`/proc/net/route`, the lowest metric)
///   and what the kernel calls it (`/sys/class/net/<interface>/uevent`): `DEVTYPE=wwan` is a
///   cellular modem (the qmi_wwan and cdc_mbim drivers name it so), and an interface named
///   `wwan…`, `rmnet…`, `ccmni…` (Android radios) or `ppp…` (a dial-up modem, though PPPoE
///   DSL is named so too) is taken for one. No file tells Low Data Mode, so a network is
///   never constrained here. Unknown (`nil`) without an IPv4 default route, behind a VPN
///   that hides the link, and on Android 10 and later, which keeps `/proc/net` from apps.
/// - Apple platforms: unknown here (`nil`); URLSession enforces the policy itself
///   (`allowsExpensiveNetworkAccess`, `allowsConstrainedNetworkAccess`).
package struct NetworkConditions: Sendable, Equatable {
    /// The interface downloads leave through.
    package var interface: String
    /// A cellular (metered) network.
    package var expensive: Bool
    /// A network in a low-data mode.
    package var constrained: Bool

    package init(interface: String, expensive: Bool, constrained: Bool = false) {
        self.interface = interface
        self.expensive = expensive
        self.constrained = constrained
    }

    /// The conditions now, or `nil` where no file tells them (Apple platforms, no default route).
    package static func current() -> NetworkConditions? {
        #if canImport(Darwin)
            return nil
        #else
            return read(routes: "/proc/net/route", interfaces: "/sys/class/net")
        #endif
    }

    /// The conditions from a route table in `/proc/net/route` form and a folder of
    /// interfaces in `/sys/class/net` form (a test passes folders of its own).
    package static func read(routes: String, interfaces: String) -> NetworkConditions? {
        guard let table = FileSystem.contents(routes).map({ String(decoding: $0, as: UTF8.self) }) else { return nil }
        // Columns: Iface Destination Gateway Flags RefCnt Use Metric Mask …; the default
        // route has destination and mask 00000000; the lowest metric wins.
        var best: (name: String, metric: Int)?
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            // The kernel prints the unsigned metric with %d; a reject route (flag 0x0200) carries nothing.
            guard fields.count >= 8, fields[1] == "00000000", fields[7] == "00000000", fields[0] != "*",
                let flags = Int(fields[3], radix: 16), flags & 0x0200 == 0,
                let signed = Int32(fields[6]), best.map({ Int(UInt32(bitPattern: signed)) < $0.metric }) ?? true
            else { continue }
            let metric = Int(UInt32(bitPattern: signed))
            best = (String(fields[0]), metric)
        }
        guard let name = best?.name, !name.contains("/"), !name.contains("..") else { return nil }
        let uevent = FileSystem.contents("\(interfaces)/\(name)/uevent").map { String(decoding: $0, as: UTF8.self) } ?? ""
        let cellular =
            uevent.split(separator: "\n").contains("DEVTYPE=wwan")
            || ["wwan", "rmnet", "ccmni", "ppp"].contains(where: name.hasPrefix)
        return NetworkConditions(interface: name, expensive: cellular)
    }
}
