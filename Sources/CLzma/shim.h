#include <lzma.h>

// Constants liblzma defines with function-like macros, which Swift does not import.
static const lzma_vli ml_lzma_filter_lzma2 = LZMA_FILTER_LZMA2;
static const lzma_vli ml_lzma_vli_unknown = LZMA_VLI_UNKNOWN;
static const uint32_t ml_lzma_dict_size_min = LZMA_DICT_SIZE_MIN;
