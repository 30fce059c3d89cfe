// System calls Swift's Linux C-library module does not expose, for MapPlatform only.
#ifndef CPLATFORM_H
#define CPLATFORM_H

#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <unistd.h>

/// syncfs(2): flushes the one file system holding `fd` (sync(2) would flush every file
/// system of the machine).
static inline int cplatform_syncfs(int fd) { return syncfs(fd); }
#endif

#endif
