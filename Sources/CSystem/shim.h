#ifndef RANGEFS_CSYSTEM_SHIM_H
#define RANGEFS_CSYSTEM_SHIM_H

/* System calls the Glibc module does not bring into Swift. */
#include <sys/xattr.h>

#endif
