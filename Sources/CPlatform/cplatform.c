// CPlatform's functions that need headers its module map must not show Swift.
#include "cplatform.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <unistd.h>

int cplatform_lower_thread_priority(void) { return setpriority(PRIO_PROCESS, (id_t)gettid(), 19); }
#endif
