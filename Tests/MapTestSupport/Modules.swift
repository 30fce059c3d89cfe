@_exported import ManifestServer
// Every test file that imports MapTestSupport sees every layer of the library, as the
// tests exercise each one.
@_exported import MapDelta
@_exported import MapLoader
@_exported import MapModel
@_exported import MapPlanner
@_exported import MapPlatform
@_exported import MapPublisher
@_exported import MapStore
@_exported import MapTransfer
