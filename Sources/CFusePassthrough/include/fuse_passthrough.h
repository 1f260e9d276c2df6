#ifndef RANGEFS_FUSE_PASSTHROUGH_H
#define RANGEFS_FUSE_PASSTHROUGH_H

/* Kernel FUSE passthrough (Linux 6.9 and later): the kernel serves the reads of an open file
   straight from a backing file, here the cache file of a complete download, without a round
   trip to this process for each read.

   libfuse 3.14 predates passthrough, so this module adds it from outside: libfuse's custom-io
   hooks see every request and reply, and two replies are amended on their way to the kernel
   (INIT: passthrough wanted; OPEN: the backing file's id). Everything else passes unchanged. */

#include <stdbool.h>
#include <stdint.h>

struct fuse_session;
struct fuse_file_info;
typedef struct fuse_req *fuse_req_t;

/* Routes the mounted session's device traffic through the hooks. Call after
   fuse_session_mount and before the session loop. Returns 0, or -errno. */
int rangefs_passthrough_install(struct fuse_session *se);

/* Whether the kernel agreed to passthrough at INIT (known once the first request is served). */
bool rangefs_passthrough_enabled(void);

/* Registers an open descriptor as a backing file; returns its id (> 0), or -errno
   (-EPERM without CAP_SYS_ADMIN). The descriptor may be closed afterwards. */
int32_t rangefs_passthrough_register(int fd);

/* Drops a backing id; files opened with it keep reading until they are released. */
void rangefs_passthrough_unregister(int32_t backing_id);

/* fuse_reply_open, with the kernel told to read this open file from `backing_id`. */
int rangefs_reply_open_passthrough(fuse_req_t req, const struct fuse_file_info *fi, int32_t backing_id);

#endif
