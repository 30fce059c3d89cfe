// Everything CPlatform offers is inline in include/cplatform.h; SwiftPM needs one source.
#include "cplatform.h"
