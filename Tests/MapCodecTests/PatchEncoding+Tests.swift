import MapDelta

extension PatchEncoding {
    /// This encoding with a see-through expansion sent as a zstd frame whatever codec won
    /// (``PatchEncoding/suffixDeflateDelta`` → ``PatchEncoding/deflateDelta``): for tests of
    /// how a container is seen through, not of which delta of its content is smaller.
    var withFrameExpansion: PatchEncoding {
        guard parts.view.seesThrough, parts.codec.suffixForm != nil else { return self }
        return PatchEncoding(seeThrough: parts.view, layout: .whole, suffix: false)
    }
}
