/* libtlblab version string. */
#include "tlblab/version.h"

const char *tlblab_version(void) { return "0.1"; }
