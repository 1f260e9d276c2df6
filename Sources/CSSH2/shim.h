#ifndef RANGEFS_CSSH2_SHIM_H
#define RANGEFS_CSSH2_SHIM_H

#include <libssh2.h>
#include <libssh2_sftp.h>
#include <string.h>

/* libssh2 spells many of its calls as function-like macros over an _ex function, which Swift
   cannot see: these are the same calls under names it can. */

static inline LIBSSH2_SESSION *rangefs_ssh_session_new(void) {
    return libssh2_session_init_ex(NULL, NULL, NULL, NULL);
}
static inline int rangefs_ssh_disconnect(LIBSSH2_SESSION *s, const char *why) {
    return libssh2_session_disconnect_ex(s, SSH_DISCONNECT_BY_APPLICATION, why, "");
}
static inline int rangefs_ssh_last_errno(LIBSSH2_SESSION *s) { return libssh2_session_last_errno(s); }
static inline int rangefs_ssh_auth_key_file(LIBSSH2_SESSION *s, const char *user, const char *privateKey,
                                            const char *passphrase) {
    return libssh2_userauth_publickey_fromfile_ex(s, user, (unsigned int)strlen(user), NULL, privateKey, passphrase);
}
static inline int rangefs_ssh_auth_password(LIBSSH2_SESSION *s, const char *user, const char *password) {
    return libssh2_userauth_password_ex(s, user, (unsigned int)strlen(user), password, (unsigned int)strlen(password), NULL);
}
static inline char *rangefs_ssh_auth_list(LIBSSH2_SESSION *s, const char *user) {
    return libssh2_userauth_list(s, user, (unsigned int)strlen(user));
}
static inline int rangefs_knownhost_read_file(LIBSSH2_KNOWNHOSTS *h, const char *path) {
    return libssh2_knownhost_readfile(h, path, LIBSSH2_KNOWNHOST_FILE_OPENSSH);
}
static inline LIBSSH2_SFTP_HANDLE *rangefs_sftp_opendir(LIBSSH2_SFTP *sftp, const char *path) {
    return libssh2_sftp_open_ex(sftp, path, (unsigned int)strlen(path), 0, 0, LIBSSH2_SFTP_OPENDIR);
}
static inline int rangefs_sftp_closedir(LIBSSH2_SFTP_HANDLE *h) { return libssh2_sftp_close_handle(h); }
static inline int rangefs_sftp_readdir(LIBSSH2_SFTP_HANDLE *h, char *name, size_t nameSize,
                                       LIBSSH2_SFTP_ATTRIBUTES *attrs) {
    return libssh2_sftp_readdir_ex(h, name, nameSize, NULL, 0, attrs);
}
/* stat follows a symbolic link; lstat does not. */
static inline int rangefs_sftp_stat(LIBSSH2_SFTP *sftp, const char *path, int follow, LIBSSH2_SFTP_ATTRIBUTES *attrs) {
    return libssh2_sftp_stat_ex(sftp, path, (unsigned int)strlen(path), follow ? LIBSSH2_SFTP_STAT : LIBSSH2_SFTP_LSTAT, attrs);
}
static inline int rangefs_sftp_realpath(LIBSSH2_SFTP *sftp, const char *path, char *target, unsigned int targetSize) {
    return libssh2_sftp_symlink_ex(sftp, path, (unsigned int)strlen(path), target, targetSize, LIBSSH2_SFTP_REALPATH);
}
static inline int rangefs_sftp_is_directory(const LIBSSH2_SFTP_ATTRIBUTES *a) {
    return (a->flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) && LIBSSH2_SFTP_S_ISDIR(a->permissions);
}
static inline int rangefs_sftp_is_regular(const LIBSSH2_SFTP_ATTRIBUTES *a) {
    return (a->flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) && LIBSSH2_SFTP_S_ISREG(a->permissions);
}
static inline int rangefs_sftp_is_link(const LIBSSH2_SFTP_ATTRIBUTES *a) {
    return (a->flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) && LIBSSH2_SFTP_S_ISLNK(a->permissions);
}

/* The known-hosts key type bit for a host key type of libssh2_session_hostkey. */
static inline int rangefs_knownhost_key_type(int hostkeyType) {
    switch (hostkeyType) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_DSS: return LIBSSH2_KNOWNHOST_KEY_SSHDSS;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
    default: return -1;
    }
}
/* LIBSSH2_KNOWNHOST_CHECK_MATCH, _MISMATCH, _NOTFOUND or _FAILURE for the session's host key;
   checkp writes a port other than 22 as [host]:port, as OpenSSH does. */
static inline int rangefs_knownhost_check(LIBSSH2_KNOWNHOSTS *h, LIBSSH2_SESSION *s, const char *host, int port) {
    size_t length = 0;
    int type = 0;
    const char *key = libssh2_session_hostkey(s, &length, &type);
    int keyType = rangefs_knownhost_key_type(type);
    if (!key || keyType < 0) return LIBSSH2_KNOWNHOST_CHECK_FAILURE;
    struct libssh2_knownhost *found = NULL;
    return libssh2_knownhost_checkp(h, host, port, key, length,
                                    LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | keyType, &found);
}

#endif
