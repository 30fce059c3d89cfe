// The value types an app reads live in the layers below the actor; an app imports only
// MapLoader and sees them as part of it.
@_exported import MapModel
@_exported import MapPlanner
@_exported import MapTransfer
