#define _GNU_SOURCE
#define FUSE_USE_VERSION 314
#include "fuse_passthrough.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

/* From the kernel's <linux/fuse.h> (protocol 7.40), which Debian 12's headers predate. */
#define INIT_OPCODE 26
#define INIT_EXT (1u << 30)           /* fuse_init_in/out.flags: flags2 is valid */
#define INIT2_PASSTHROUGH (1u << 5)   /* FUSE_PASSTHROUGH is bit 37: bit 5 of flags2 */
#define FOPEN_PASSTHROUGH_FLAG (1u << 7)
struct backing_map { int32_t fd; uint32_t flags; uint64_t padding; };
#define DEV_IOC_BACKING_OPEN _IOW(229, 1, struct backing_map)
#define DEV_IOC_BACKING_CLOSE _IOW(229, 2, uint32_t)

/* Byte offsets in the kernel's structures, all fixed by the protocol. */
enum {
    IN_HEADER_SIZE = 40,       /* fuse_in_header: len, opcode, unique, nodeid, uid, gid, pid, ... */
    IN_OPCODE = 4,
    IN_UNIQUE = 8,
    INIT_IN_FLAGS = 12,        /* fuse_init_in: major, minor, max_readahead, flags, flags2 */
    INIT_IN_FLAGS2 = 16,
    OUT_HEADER_SIZE = 16,      /* fuse_out_header: len, error, unique */
    OUT_ERROR = 4,
    OUT_UNIQUE = 8,
    INIT_OUT_FLAGS = 12,       /* fuse_init_out: ..., flags2 at 32, max_stack_depth at 36 */
    INIT_OUT_FLAGS2 = 32,
    INIT_OUT_MAX_STACK_DEPTH = 36,
    INIT_OUT_MIN_SIZE = 40,
    OPEN_OUT_FLAGS = 8,        /* fuse_open_out: fh, open_flags, backing_id */
    OPEN_OUT_BACKING_ID = 12,
    OPEN_OUT_SIZE = 16,
};

/* One session per process: the mount this process serves. */
static int device_fd = -1;
static _Atomic bool kernel_offers;
static _Atomic uint64_t init_unique;
static _Atomic bool enabled;
/* Set by rangefs_reply_open_passthrough for the reply it sends on this thread. */
static __thread int32_t pending_backing_id;

static uint32_t load32(const void *base, size_t offset) {
    uint32_t value;
    memcpy(&value, (const char *)base + offset, sizeof value);
    return value;
}

static uint64_t load64(const void *base, size_t offset) {
    uint64_t value;
    memcpy(&value, (const char *)base + offset, sizeof value);
    return value;
}

static void store32(void *base, size_t offset, uint32_t value) {
    memcpy((char *)base + offset, &value, sizeof value);
}

static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata) {
    (void)userdata;
    ssize_t n = read(fd, buf, len);
    if (n >= IN_HEADER_SIZE + INIT_IN_FLAGS2 + 4 && load32(buf, IN_OPCODE) == INIT_OPCODE) {
        const char *init = (const char *)buf + IN_HEADER_SIZE;
        bool offers = (load32(init, INIT_IN_FLAGS) & INIT_EXT) && (load32(init, INIT_IN_FLAGS2) & INIT2_PASSTHROUGH);
        atomic_store(&kernel_offers, offers);
        atomic_store(&init_unique, load64(buf, IN_UNIQUE));
    }
    return n;
}

/* Sends the reply with a copy of its argument amended by `amend`. */
static ssize_t writev_amended(int fd, struct iovec *iov, int count, size_t min_size,
                              void (*amend)(char *arg, size_t size)) {
    char arg[256];
    if (count != 2 || iov[1].iov_len < min_size || iov[1].iov_len > sizeof arg) return writev(fd, iov, count);
    memcpy(arg, iov[1].iov_base, iov[1].iov_len);
    amend(arg, iov[1].iov_len);
    struct iovec amended[2] = { iov[0], { arg, iov[1].iov_len } };
    return writev(fd, amended, 2);
}

static void amend_init(char *arg, size_t size) {
    (void)size;
    store32(arg, INIT_OUT_FLAGS, load32(arg, INIT_OUT_FLAGS) | INIT_EXT);
    store32(arg, INIT_OUT_FLAGS2, load32(arg, INIT_OUT_FLAGS2) | INIT2_PASSTHROUGH);
    /* The kernel's limit (FILESYSTEM_MAX_STACK_DEPTH), so that a cache directory on a stacked
       filesystem such as overlayfs (containers) still qualifies; the price is that nothing
       stacks on top of this mount in turn. */
    store32(arg, INIT_OUT_MAX_STACK_DEPTH, 2);
    atomic_store(&enabled, true);
}

static void amend_open(char *arg, size_t size) {
    (void)size;
    store32(arg, OPEN_OUT_FLAGS, load32(arg, OPEN_OUT_FLAGS) | FOPEN_PASSTHROUGH_FLAG);
    store32(arg, OPEN_OUT_BACKING_ID, (uint32_t)pending_backing_id);
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata) {
    (void)userdata;
    if (count >= 1 && iov[0].iov_len >= OUT_HEADER_SIZE) {
        const void *header = iov[0].iov_base;
        bool ok = (int32_t)load32(header, OUT_ERROR) == 0;
        if (pending_backing_id > 0 && ok) {
            return writev_amended(fd, iov, count, OPEN_OUT_SIZE, amend_open);
        }
        if (ok && atomic_load(&kernel_offers) && !atomic_load(&enabled)
            && load64(header, OUT_UNIQUE) == atomic_load(&init_unique)) {
            return writev_amended(fd, iov, count, INIT_OUT_MIN_SIZE, amend_init);
        }
    }
    return writev(fd, iov, count);
}

static ssize_t hook_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                                unsigned int flags, void *userdata) {
    (void)userdata;
    return splice(fdin, offin, fdout, offout, len, flags);
}

int rangefs_passthrough_install(struct fuse_session *se) {
    static const struct fuse_custom_io io = {
        .writev = hook_writev,
        .read = hook_read,
        .splice_send = hook_splice_send,
    };
    int fd = fuse_session_fd(se);
    if (fd < 0) return -EBADF;
    int result = fuse_session_custom_io(se, &io, fd);
    if (result == 0) device_fd = fd;
    return result;
}

bool rangefs_passthrough_enabled(void) {
    return atomic_load(&enabled);
}

int32_t rangefs_passthrough_register(int fd) {
    if (device_fd < 0 || !atomic_load(&enabled)) return -ENOTSUP;
    struct backing_map map = { .fd = fd, .flags = 0, .padding = 0 };
    int id = ioctl(device_fd, DEV_IOC_BACKING_OPEN, &map);
    if (id > 0) return id;
    return id == 0 ? -EIO : -errno;
}

void rangefs_passthrough_unregister(int32_t backing_id) {
    uint32_t id = (uint32_t)backing_id;
    if (device_fd >= 0) ioctl(device_fd, DEV_IOC_BACKING_CLOSE, &id);
}

int rangefs_reply_open_passthrough(fuse_req_t req, const struct fuse_file_info *fi, int32_t backing_id) {
    pending_backing_id = backing_id;
    int result = fuse_reply_open(req, fi);
    pending_backing_id = 0;
    return result;
}
