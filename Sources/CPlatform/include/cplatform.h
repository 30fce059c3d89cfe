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

/// Gives the calling thread the lowest scheduling priority (nice 19): Linux keeps a nice
/// value per thread, and setpriority(2) on a thread id sets that thread's alone. (In
/// cplatform.c: <sys/resource.h> under _GNU_SOURCE clashes with Swift's Glibc module.)
int cplatform_lower_thread_priority(void);
#endif

#endif
