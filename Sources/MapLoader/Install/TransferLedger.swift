import Foundation
import MapDelta
import MapModel
import MapPlanner
import MapPlatform
import MapStore
import MapTransfer
import Synchronization

/// Running totals of one operation's downloads, shared by the groups produced at once.
final class TransferLedger: Sendable {
    private struct State {
        var total: Int64
        var progress: [String: Int64] = [:]
        var downloaded: Int64 = 0
        var fetched: [URL] = []
    }

    private let state: Mutex<State>

    init(total: Int64) { state = Mutex(State(total: total)) }

    /// Bytes the operation expects to download (grows when a group falls back to full).
    var total: Int64 { state.withLock { $0.total } }
    /// Bytes fetched over the network now (resumed and reused parts excluded).
    var downloaded: Int64 { state.withLock { $0.downloaded } }
    /// Blob files to delete after the commit.
    var fetched: [URL] { state.withLock { $0.fetched } }

    func addToTotal(_ bytes: Int64) { state.withLock { $0.total = $0.total.plusSaturating(bytes) } }

    /// Records that blob `sha256` holds `bytes`; returns the operation's completed bytes.
    func record(_ sha256: String, bytes: Int64) -> Int64 {
        state.withLock { state in
            state.progress[sha256] = bytes
            return state.progress.values.saturatingSum { $0 }
        }
    }

    /// Records a finished blob: `new` bytes came over the network, `file` is deleted after commit.
    func finished(_ file: URL, new: Int64) {
        state.withLock {
            $0.downloaded += new
            $0.fetched.append(file)
        }
    }
}
