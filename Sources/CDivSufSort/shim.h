#include <divsufsort.h>
