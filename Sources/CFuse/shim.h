#ifndef RANGEFS_CFUSE_SHIM_H
#define RANGEFS_CFUSE_SHIM_H

/* 314: with 35, fuse_session_loop_mt is a macro Swift cannot see. */
#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <string.h>

/* Replies to a read with bytes taken straight from a cache file descriptor, so the
   data never passes through Swift buffers (libfuse may splice it). */
static inline int rangefs_reply_fd(fuse_req_t req, int fd, off_t pos, size_t size) {
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
    buf.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    buf.buf[0].fd = fd;
    buf.buf[0].pos = pos;
    return fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static inline struct fuse_file_info rangefs_file_info_zero(void) {
    struct fuse_file_info fi;
    memset(&fi, 0, sizeof fi);
    return fi;
}

/* fuse_file_info's flags are bitfields, which Swift cannot set. */
static inline void rangefs_file_info_set_keep_cache(struct fuse_file_info *fi, int on) { fi->keep_cache = on ? 1 : 0; }
static inline void rangefs_file_info_set_direct_io(struct fuse_file_info *fi, int on) { fi->direct_io = on ? 1 : 0; }

static inline struct fuse_args rangefs_args_empty(void) {
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    return args;
}

/* fuse_session_loop_mt is a macro whose target depends on how libfuse was built. */
static inline int rangefs_session_loop_mt(struct fuse_session *se, struct fuse_loop_config *config) {
    return fuse_session_loop_mt(se, config);
}

/* The capability flags are macros Swift may not see. */
static inline void rangefs_conn_want_splice(struct fuse_conn_info *conn) {
    if (conn->capable & FUSE_CAP_SPLICE_WRITE) conn->want |= FUSE_CAP_SPLICE_WRITE;
    if (conn->capable & FUSE_CAP_SPLICE_MOVE) conn->want |= FUSE_CAP_SPLICE_MOVE;
}

#endif
