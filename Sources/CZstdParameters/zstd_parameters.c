#ifndef ZSTD_STATIC_LINKING_ONLY
#define ZSTD_STATIC_LINKING_ONLY
#endif
#include <zstd.h>
#include "zstd_parameters.h"

maploader_zstd_parameters maploader_zstd_get_parameters(int level, unsigned long long size, size_t dictionarySize) {
    ZSTD_compressionParameters p = ZSTD_getCParams(level, size, dictionarySize);
    maploader_zstd_parameters out = {
        (int)p.windowLog, (int)p.chainLog, (int)p.hashLog, (int)p.searchLog,
        (int)p.minMatch, (int)p.targetLength, (int)p.strategy,
    };
    return out;
}
