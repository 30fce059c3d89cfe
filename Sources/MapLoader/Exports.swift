@_exported import struct MapModel.BoundingBox
@_exported import struct MapModel.CleanupReport
@_exported import struct MapModel.DataGroup
@_exported import struct MapModel.DiskUsage
@_exported import struct MapModel.ExportReport
// The public API, symbol by symbol: the value types an app reads live in the layers below
// the actor, and an app that imports MapLoader sees these and nothing else of them. The
// whole list, with the types this module declares itself, is in the Architecture article
// of the documentation; scripts/docs.sh builds the documentation from the same lines.
@_exported import enum MapModel.MapLoaderError
@_exported import struct MapModel.NetworkPolicy
@_exported import struct MapModel.TrustPolicy
@_exported import struct MapPlanner.Coverage
@_exported import struct MapPlanner.DataGroupStatus
@_exported import struct MapPlanner.PackageStatus
@_exported import struct MapPlanner.PackageTree
@_exported import struct MapPlanner.Plan
@_exported import struct MapPlanner.UpdateCheck
@_exported import struct MapPlanner.UpdateReport
@_exported import struct MapPlanner.VerifyReport
