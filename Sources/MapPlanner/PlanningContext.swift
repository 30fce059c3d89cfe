package import MapModel

/// What planning reads: the accepted catalog, the manifest planned against, the installed
/// state, the user's settings and the groups they select.
package struct PlanningContext: Sendable {
    /// The accepted catalog.
    package var catalog: Catalog
    /// The manifest of the version planned against.
    package var manifest: Manifest
    /// What is installed now.
    package var state: InstalledState
    /// The user's settings.
    package var settings: Settings
    /// The data groups selected under `manifest`.
    package var selection: Set<String>

    /// A context.
    /// - Parameter decodes: the optional codecs this client decodes (`PatchCodecs.available`):
    ///   patch edges that need another are left out of `manifest`, so no plan downloads a
    ///   patch the client cannot apply.
    package init(
        catalog: Catalog, manifest: Manifest, state: InstalledState, settings: Settings, selection: Set<String>,
        decodes: Set<String>
    ) {
        self.catalog = catalog
        var manifest = manifest
        manifest.root = manifest.root.keepingPatchEdges { ($0.codecs ?? []).allSatisfy(decodes.contains) }
        self.manifest = manifest
        self.state = state
        self.settings = settings
        self.selection = selection
    }
}
