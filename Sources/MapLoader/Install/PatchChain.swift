extension MapLoader {
    /// Applies a step's patch chain to the installed files (replaced once the patch codec lands).
    func applyChain(_ step: GroupStep, item: Int, of items: Int, into builder: GenerationBuilder,
                    operation: MapLoaderOperation, transfer: inout Transfer) async throws -> [FileEntry] {
        throw MapLoaderError.invalidMetadata(what: step.name, detail: "patches are not supported by this build")
    }
}
