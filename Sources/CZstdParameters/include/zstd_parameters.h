// The compression parameters zstd derives for a level (ZSTD_getCParams), for the
// publisher's delta encoder. ZSTD_getCParams is in zstd's experimental API, which a Clang
// module of zstd.h (the zstd package's, in app builds) does not expose to Swift; this C
// file includes zstd.h with ZSTD_STATIC_LINKING_ONLY itself and hands the numbers on.
#ifndef MAPLOADER_ZSTD_PARAMETERS_H
#define MAPLOADER_ZSTD_PARAMETERS_H

#include <stddef.h>

typedef struct {
    int windowLog;
    int chainLog;
    int hashLog;
    int searchLog;
    int minMatch;
    int targetLength;
    /// A `ZSTD_strategy` value (1 = ZSTD_fast … 9 = ZSTD_btultra2).
    int strategy;
} maploader_zstd_parameters;

/// What zstd uses at `level` for `size` bytes of input against a `dictionarySize`-byte prefix.
maploader_zstd_parameters maploader_zstd_get_parameters(int level, unsigned long long size, size_t dictionarySize);

#endif
