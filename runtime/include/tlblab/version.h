/* libtlblab version. */
#ifndef TLBLAB_VERSION_H
#define TLBLAB_VERSION_H

#define TLBLAB_VERSION_MAJOR 0
#define TLBLAB_VERSION_MINOR 1

/* The library version as "MAJOR.MINOR". O(1); never fails. */
const char *tlblab_version(void);

#endif
