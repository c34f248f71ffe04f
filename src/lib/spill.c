/* spill.c — the spill journal: segment files, frames, append with fdatasync,
 * scanning with verification (see spill.h for the on-disk format).
 *
 * The appender writes whole frames with one write(2) per frame (looping on
 * short writes) and fdatasyncs before it returns: once eg_spill_append says
 * 0, the frame survives a crash. A new segment is created with O_EXCL and the
 * directory is fsync'd at once, so a durable frame never sits in a file
 * whose name is not durable. Segments are never appended to once sealed
 * (rotation, eg_spill_seal, an error, or closing the journal): a reopened
 * journal starts a fresh segment, and a torn tail left by a crash can only
 * end a sealed segment, where the scanner reports it.
 *
 * The scanner reads a segment frame by frame with pread(2) (or from a
 * memory buffer: the same code, for tests and fuzzers), verifying the magic,
 * the length and the CRC before it decodes the msgpack payload with
 * msgpack-c; decoded records point into the scanner's buffers (the payload
 * copy and a name arena for the NUL-terminated topic and header names).
 * After a bad frame it searches forward, in 64 KiB windows, for the next
 * offset where a whole good frame starts, and reports the bytes in between
 * as one damaged region: a bad frame never hides the good ones after it.
 *
 * Frames the drainer could not deliver for good are appended to a side file
 * per segment (eg_spill_set_aside), encoded like any frame.
 *
 * Counters (segments, bytes pending) are taken from the directory at open
 * and kept up to date by append and retire; only this process writes the
 * journal while it holds the lock.
 *
 * Nobody else steers what errgate writes: the directory must belong to the
 * running user and be writable by nobody else (eg_spill_open refuses it
 * otherwise), and every file errgate opens in it (LOCK, segments, their
 * .refused side files) is opened relative to the directory's descriptor
 * with O_NOFOLLOW (a planted symbolic link is refused, never written
 * through), O_NONBLOCK for reading (a planted FIFO cannot hang a scan) and
 * O_CLOEXEC, and fstat'ed to be a regular file; a file errgate writes must
 * also have a single link (a planted hard link to another file is
 * refused). */
#include "spill.h"
#include "mpcheck.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ CRC-32 */

static const uint32_t crc_table[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu, 0xe963a535u, 0x9e6495a3u, 0x0edb8832u,
    0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u, 0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
    0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u, 0x136c9856u, 0x646ba8c0u, 0xfd62f97au,
    0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u, 0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
    0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu, 0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u,
    0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u, 0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
    0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u, 0x2f6f7c87u, 0x58684c11u, 0xc1611dabu,
    0xb6662d3du, 0x76dc4190u, 0x01db7106u, 0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
    0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du, 0x91646c97u, 0xe6635c01u, 0x6b6b51f4u,
    0x1c6c6162u, 0x856530d8u, 0xf262004eu, 0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u, 0x4db26158u, 0x3ab551ceu, 0xa3bc0074u,
    0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u, 0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
    0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau, 0xbe0b1010u, 0xc90c2086u, 0x5768b525u,
    0x206f85b3u, 0xb966d409u, 0xce61e49fu, 0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
    0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au, 0xead54739u, 0x9dd277afu, 0x04db2615u,
    0x73dc1683u, 0xe3630b12u, 0x94643b84u, 0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
    0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu, 0x196c3671u, 0x6e6b06e7u, 0xfed41b76u,
    0x89d32be0u, 0x10da7a5au, 0x67dd4accu, 0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
    0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu, 0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u,
    0x41047a60u, 0xdf60efc3u, 0xa867df55u, 0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u, 0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u,
    0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du, 0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
    0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u, 0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u,
    0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u, 0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
    0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u, 0x616bffd3u, 0x166ccf45u, 0xa00ae278u,
    0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u, 0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
    0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u, 0xbdbdf21cu, 0xcabac28au, 0x53b39330u,
    0x24b4a3a6u, 0xbad03605u, 0xcdd70693u, 0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
    0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

uint32_t eg_crc32(uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    crc = ~crc;
    while (n--) crc = crc_table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return ~crc;
}

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* ------------------------------------------------------------ segment names */

#define SEG_PREFIX "spill-"
#define SEG_DIGITS 16
#define SEG_SUFFIX ".eg"
#define SEG_CORRUPT ".corrupt"
#define SEG_REFUSED ".refused"

static const char *const seg_kinds[] = {"", SEG_CORRUPT, SEG_REFUSED};

/* kind: 0 a segment, 1 a kept corrupt one, 2 a refused-frames side file. */
static void seg_name(uint64_t seq, int kind, char *out, size_t outlen) {
    snprintf(out, outlen, SEG_PREFIX "%016" PRIu64 SEG_SUFFIX "%s", seq, seg_kinds[kind]);
}

/* Parses a segment file name. Returns 1 and fills seq/kind, or 0 for any
 * other name (the directory may hold the lock file and foreign files). */
static int seg_parse(const char *name, uint64_t *seq, int *kind) {
    size_t pl = strlen(SEG_PREFIX);
    if (strncmp(name, SEG_PREFIX, pl) != 0) return 0;
    uint64_t v = 0;
    for (int i = 0; i < SEG_DIGITS; i++) {
        char c = name[pl + (size_t)i];
        if (c < '0' || c > '9') return 0;
        v = v * 10 + (uint64_t)(c - '0');
    }
    const char *rest = name + pl + SEG_DIGITS;
    if (strncmp(rest, SEG_SUFFIX, strlen(SEG_SUFFIX)) != 0) return 0;
    rest += strlen(SEG_SUFFIX);
    int k = 0;
    while (k < 3 && strcmp(rest, seg_kinds[k]) != 0) k++;
    if (k == 3 || v == 0) return 0;
    *kind = k;
    *seq = v;
    return 1;
}

static int seg_kind(const eg_spill_seg *s) { return s->refused ? 2 : s->corrupt ? 1 : 0; }

static int seg_cmp(const void *a, const void *b) {
    const eg_spill_seg *x = a, *y = b;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return seg_kind(x) - seg_kind(y);
}

int eg_spill_list(const char *dir, eg_spill_seg **out, size_t *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "spill journal %s: %s", dir, strerror(errno));
        return -1;
    }
    int dfd = dirfd(d);
    eg_spill_seg *v = NULL;
    size_t len = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t seq;
        int kind;
        if (!seg_parse(e->d_name, &seq, &kind)) continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone meanwhile */
        if (!S_ISREG(st.st_mode)) continue;
        if (len == cap) {
            cap = cap ? cap * 2 : 16;
            v = eg_xrealloc(v, cap * sizeof *v);
        }
        v[len].seq = seq;
        v[len].corrupt = kind == 1;
        v[len].refused = kind == 2;
        v[len].bytes = (uint64_t)st.st_size;
        eg_strlcpy(v[len].name, e->d_name, sizeof v[len].name);
        len++;
    }
    closedir(d);
    if (len) qsort(v, len, sizeof *v, seg_cmp);
    *out = v;
    *n = len;
    return 0;
}

/* ------------------------------------------------------------------- journal */

struct eg_spill {
    char *dir;
    int dirfd;
    int lockfd;
    int locked; /* this journal holds the flock */
    char role[32];
    size_t segment_bytes, max_frame;
    uint64_t next_seq;
    int fd; /* active segment, -1: none */
    uint64_t active_seq;
    uint64_t active_size, active_frames;
    int64_t active_since;
    msgpack_sbuffer buf; /* frame being built: header, then payload */
    eg_spill_stats st;
};

/* openat(dirfd, name) without following a symbolic link (O_NOFOLLOW,
 * O_CLOEXEC added to flags), then checks the result is a regular file and,
 * when opened for writing, has one link. Returns the fd, or -1 with a
 * message "NAME: why" in err (errno set). */
static int open_regular(int dirfd, const char *name, int flags, mode_t mode, char *err, size_t errlen) {
    int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP) snprintf(err, errlen, "%s: is a symbolic link (refused: never followed)", name);
        else snprintf(err, errlen, "%s: %s", name, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = "not a regular file (refused)";
    else if ((flags & O_ACCMODE) != O_RDONLY && st.st_nlink > 1) why = "has more than one link (refused)";
    if (why) {
        snprintf(err, errlen, "%s: %s", name, why);
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* Checks the opened journal directory: owned by the running user, not
 * writable by group or others. Returns 0, or -1 with err. */
static int dir_trusted(int dirfd, const char *dir, char *err, size_t errlen) {
    struct stat st;
    if (fstat(dirfd, &st) != 0) {
        snprintf(err, errlen, "spill journal %s: %s", dir, strerror(errno));
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "spill journal %s: owned by uid %u, not by this user (uid %u); "
                 "the journal directory must be the gateway's own",
                 dir, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen,
                 "spill journal %s: writable by %s (mode %04o); the journal directory must be writable by its "
                 "owner only (chmod go-w)",
                 dir, (st.st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

/* Rewrites the LOCK file's informational line (best effort). */
static void lock_note(eg_spill *j) {
    char line[160], name[48] = "-";
    if (j->fd >= 0) seg_name(j->active_seq, 0, name, sizeof name);
    int n = snprintf(line, sizeof line, "pid=%d role=%s active=%s\n", (int)getpid(), j->role, name);
    if (ftruncate(j->lockfd, 0) == 0 && pwrite(j->lockfd, line, (size_t)n, 0) < 0) { /* informational */
    }
}

/* Reads the LOCK line of an owner into owner/active (either may be NULL). */
static void lock_read(int fd, char *owner, size_t ownerlen, char *active, size_t activelen) {
    char line[160];
    ssize_t n = pread(fd, line, sizeof line - 1, 0);
    line[n > 0 ? n : 0] = '\0';
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *a = strstr(line, " active=");
    if (active && activelen) {
        active[0] = '\0';
        if (a && strcmp(a + 8, "-") != 0) eg_strlcpy(active, a + 8, activelen);
    }
    if (a) *a = '\0';
    if (owner && ownerlen) eg_strlcpy(owner, line[0] ? line : "an unknown process", ownerlen);
}

int eg_spill_lock_owner(const char *dir, char *owner, size_t ownerlen, char *active, size_t activelen) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return errno == ENOENT ? 0 : -1;
    char e[256];
    int fd = open_regular(dfd, "LOCK", O_RDONLY | O_NONBLOCK, 0, e, sizeof e);
    int missing = fd < 0 && errno == ENOENT;
    close(dfd);
    if (fd < 0) return missing ? 0 : -1;
    int rc;
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
        rc = 0;
    } else if (errno == EWOULDBLOCK) {
        lock_read(fd, owner, ownerlen, active, activelen);
        rc = 1;
    } else {
        rc = -1;
    }
    close(fd);
    return rc;
}

/* fsyncs the parent directory of path (after creating path in it). */
static void fsync_parent(const char *path) {
    char parent[4096];
    eg_strlcpy(parent, path, sizeof parent);
    char *slash = strrchr(parent, '/');
    if (slash == parent) slash[1] = '\0';
    else if (slash) *slash = '\0';
    else eg_strlcpy(parent, ".", sizeof parent);
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

eg_spill *eg_spill_open(const char *dir, const eg_spill_opts *opts, char *err, size_t errlen) {
    eg_spill_opts o = opts ? *opts : (eg_spill_opts){0};
    if (!dir || !*dir) {
        snprintf(err, errlen, "spill journal: no directory given");
        return NULL;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT || mkdir(dir, 0700) != 0) {
            snprintf(err, errlen, "spill journal %s: %s", dir, strerror(errno));
            return NULL;
        }
        fsync_parent(dir);
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "spill journal %s: not a directory", dir);
        return NULL;
    }
    eg_spill *j = eg_xcalloc(1, sizeof *j);
    j->dir = eg_xstrdup(dir);
    j->fd = j->lockfd = j->dirfd = -1;
    j->segment_bytes = o.segment_bytes ? o.segment_bytes : EG_SPILL_SEGMENT_BYTES;
    j->max_frame = o.max_frame_bytes && o.max_frame_bytes < EG_SPILL_FRAME_MAX ? o.max_frame_bytes : EG_SPILL_FRAME_MAX;
    eg_strlcpy(j->role, o.role ? o.role : "errgate", sizeof j->role);
    msgpack_sbuffer_init(&j->buf);
    j->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (j->dirfd < 0) {
        snprintf(err, errlen, "spill journal %s: %s", dir, strerror(errno));
        goto fail;
    }
    if (dir_trusted(j->dirfd, dir, err, errlen) != 0) goto fail;
    char why[256];
    j->lockfd = open_regular(j->dirfd, "LOCK", O_RDWR | O_CREAT, 0600, why, sizeof why);
    if (j->lockfd < 0) {
        snprintf(err, errlen, "spill journal %s: %s", dir, why);
        goto fail;
    }
    /* a `spill ls` probe holds a shared lock for a moment: retry briefly */
    int locked = -1;
    for (int i = 0; i < 20 && locked != 0; i++) {
        locked = flock(j->lockfd, LOCK_EX | LOCK_NB);
        if (locked != 0 && errno != EWOULDBLOCK) {
            snprintf(err, errlen, "spill journal %s: LOCK: %s", dir, strerror(errno));
            goto fail;
        }
        if (locked != 0) nanosleep(&(struct timespec){0, 10 * 1000000}, NULL);
    }
    if (locked != 0) {
        char owner[128];
        lock_read(j->lockfd, owner, sizeof owner, NULL, 0);
        snprintf(err, errlen, "spill journal %s is locked by another process (%s)", dir, owner);
        goto fail;
    }
    j->locked = 1;
    eg_spill_seg *segs;
    size_t n;
    if (eg_spill_list(dir, &segs, &n, err, errlen) != 0) goto fail;
    j->next_seq = 1;
    for (size_t i = 0; i < n; i++) {
        if (segs[i].seq >= j->next_seq) j->next_seq = segs[i].seq + 1;
        if (segs[i].corrupt) {
            j->st.segments_corrupt++;
        } else if (segs[i].refused) {
            j->st.segments_refused++;
        } else {
            j->st.segments++;
            j->st.bytes_pending += segs[i].bytes;
        }
    }
    free(segs);
    lock_note(j);
    return j;
fail:
    eg_spill_close(j);
    return NULL;
}

const char *eg_spill_dir(const eg_spill *j) { return j->dir; }
uint64_t eg_spill_active_seq(const eg_spill *j) { return j->fd >= 0 ? j->active_seq : 0; }
uint64_t eg_spill_active_frames(const eg_spill *j) { return j->fd >= 0 ? j->active_frames : 0; }
int64_t eg_spill_active_since_ms(const eg_spill *j) { return j->fd >= 0 ? j->active_since : 0; }
void eg_spill_stats_get(const eg_spill *j, eg_spill_stats *out) { *out = j->st; }

/* Creates the next segment and makes it active. */
static int seg_create(eg_spill *j, char *err, size_t errlen) {
    char name[48];
    for (int tries = 0; tries < 1000; tries++) {
        seg_name(j->next_seq, 0, name, sizeof name);
        /* O_EXCL: never through a link, never over a file someone left */
        int fd = openat(j->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST) { /* skip a number someone left */
            j->next_seq++;
            continue;
        }
        if (fd < 0) {
            snprintf(err, errlen, "spill journal %s: create %s: %s", j->dir, name, strerror(errno));
            return -1;
        }
        if (fsync(j->dirfd) != 0) {
            snprintf(err, errlen, "spill journal %s: fsync of the directory: %s", j->dir, strerror(errno));
            close(fd);
            unlinkat(j->dirfd, name, 0);
            return -1;
        }
        j->fd = fd;
        j->active_seq = j->next_seq++;
        j->active_size = j->active_frames = 0;
        j->active_since = 0;
        j->st.segments++;
        lock_note(j);
        return 0;
    }
    snprintf(err, errlen, "spill journal %s: no free segment name", j->dir);
    return -1;
}

int eg_spill_seal(eg_spill *j, char *err, size_t errlen) {
    if (j->fd < 0) return 0;
    int rc = close(j->fd);
    int e = errno;
    j->fd = -1;
    j->active_seq = j->active_size = j->active_frames = 0;
    j->active_since = 0;
    j->st.segments_sealed++;
    lock_note(j);
    if (rc != 0) {
        snprintf(err, errlen, "spill journal %s: close: %s", j->dir, strerror(e));
        return -1;
    }
    return 0;
}

static int pack_bytes(msgpack_packer *pk, const void *p, size_t n) {
    if (!p) return msgpack_pack_nil(pk);
    return msgpack_pack_bin(pk, n) || msgpack_pack_bin_body(pk, p, n);
}

static int pack_str(msgpack_packer *pk, const char *s) {
    size_t n = strlen(s);
    return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n);
}

static int pack_header(msgpack_packer *pk, const char *name, const void *v, size_t n) {
    return msgpack_pack_array(pk, 2) || pack_str(pk, name) || pack_bytes(pk, v, n);
}

/* Packs rec's payload after the 12 header bytes already in j->buf. */
static int pack_rec(eg_spill *j, const eg_spill_rec *r) {
    msgpack_packer pk;
    msgpack_packer_init(&pk, &j->buf, msgpack_sbuffer_write);
    size_t nk = r->kheaders ? rd_kafka_header_cnt(r->kheaders) : 0;
    if (msgpack_pack_map(&pk, 6) || pack_str(&pk, "topic") || pack_str(&pk, r->topic) || pack_str(&pk, "partition") ||
        msgpack_pack_int64(&pk, r->partition) || pack_str(&pk, "timestamp") ||
        msgpack_pack_int64(&pk, r->timestamp_ms < 0 ? -1 : r->timestamp_ms) || pack_str(&pk, "key") ||
        pack_bytes(&pk, r->key, r->key_len) || pack_str(&pk, "value") || pack_bytes(&pk, r->value, r->value_len) ||
        pack_str(&pk, "headers") || msgpack_pack_array(&pk, r->nheaders + nk))
        return -1;
    for (size_t i = 0; i < r->nheaders; i++)
        if (pack_header(&pk, r->headers[i].name, r->headers[i].value, r->headers[i].value_len)) return -1;
    for (size_t i = 0; i < nk; i++) {
        const char *name;
        const void *v;
        size_t n;
        if (rd_kafka_header_get_all(r->kheaders, i, &name, &v, &n) != 0 || pack_header(&pk, name, v, n)) return -1;
    }
    return 0;
}

/* A lower bound of the payload size, to refuse huge records before copying. */
static size_t payload_floor(const eg_spill_rec *r) {
    size_t n = r->key_len + r->value_len + strlen(r->topic);
    for (size_t i = 0; i < r->nheaders; i++)
        n += strlen(r->headers[i].name) + (r->headers[i].value ? r->headers[i].value_len : 0);
    size_t nk = r->kheaders ? rd_kafka_header_cnt(r->kheaders) : 0;
    for (size_t i = 0; i < nk; i++) {
        const char *name;
        const void *v;
        size_t len;
        if (rd_kafka_header_get_all(r->kheaders, i, &name, &v, &len) == 0) n += strlen(name) + len;
    }
    return n;
}

/* Checks a record before it is packed. */
static int rec_check(const eg_spill *j, const eg_spill_rec *r, char *err, size_t errlen) {
    size_t tl = r->topic ? strlen(r->topic) : 0;
    if (tl == 0 || tl > EG_SPILL_TOPIC_MAX) {
        snprintf(err, errlen, "spill: topic must be 1 to %d bytes (got %zu)", EG_SPILL_TOPIC_MAX, tl);
        return -1;
    }
    if (r->partition < -1) {
        snprintf(err, errlen, "spill: %s: bad partition %d", r->topic, (int)r->partition);
        return -1;
    }
    for (size_t i = 0; i < r->nheaders; i++)
        if (!r->headers[i].name) {
            snprintf(err, errlen, "spill: %s: header %zu has no name", r->topic, i);
            return -1;
        }
    size_t floor = payload_floor(r);
    if (floor > j->max_frame) {
        snprintf(err, errlen, "spill: %s[%d]: record of at least %zu bytes exceeds the frame cap of %zu bytes",
                 r->topic, (int)r->partition, floor, j->max_frame);
        return -1;
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Encodes r as one frame (header and payload) in j->buf. Returns 0, or -1
 * with a message (j->buf then holds garbage). */
static int encode_frame(eg_spill *j, const eg_spill_rec *r, char *err, size_t errlen) {
    if (rec_check(j, r, err, errlen) != 0) return -1;
    msgpack_sbuffer_clear(&j->buf);
    static const char zero[EG_SPILL_FRAME_HDR] = {0};
    if (msgpack_sbuffer_write(&j->buf, zero, sizeof zero) != 0 || pack_rec(j, r) != 0) {
        snprintf(err, errlen, "spill: %s: cannot encode the record", r->topic);
        return -1;
    }
    size_t plen = j->buf.size - EG_SPILL_FRAME_HDR;
    if (plen > j->max_frame) {
        snprintf(err, errlen, "spill: %s[%d]: record of %zu bytes exceeds the frame cap of %zu bytes", r->topic,
                 (int)r->partition, plen, j->max_frame);
        return -1;
    }
    unsigned char *h = (unsigned char *)j->buf.data;
    memcpy(h, EG_SPILL_MAGIC, 4);
    put_be32(h + 4, (uint32_t)plen);
    put_be32(h + 8, eg_crc32(0, h + EG_SPILL_FRAME_HDR, plen));
    return 0;
}

/* Gives back the frame buffer's memory after a large record. */
static void shrink_buf(eg_spill *j) {
    if (j->buf.alloc > ((size_t)1 << 20)) {
        msgpack_sbuffer_destroy(&j->buf);
        msgpack_sbuffer_init(&j->buf);
    }
}

int eg_spill_append(eg_spill *j, const eg_spill_rec *r, char *err, size_t errlen) {
    if (encode_frame(j, r, err, errlen) != 0) {
        j->st.append_errors++;
        shrink_buf(j);
        return -1;
    }
    size_t flen = j->buf.size;
    if (j->fd >= 0 && j->active_size > 0 && j->active_size + flen > j->segment_bytes)
        eg_spill_seal(j, err, errlen); /* every frame in it is durable already */
    if (j->fd < 0 && seg_create(j, err, errlen) != 0) {
        j->st.append_errors++;
        shrink_buf(j);
        return -1;
    }
    char name[48];
    seg_name(j->active_seq, 0, name, sizeof name);
    if (write_all(j->fd, j->buf.data, flen) != 0 || fdatasync(j->fd) != 0) {
        int e = errno;
        snprintf(err, errlen, "spill journal %s: %s: %s", j->dir, name, strerror(e));
        /* cut the partial frame off (and make the cut durable); seal either
         * way, so nothing is ever appended after a possibly torn frame */
        if (ftruncate(j->fd, (off_t)j->active_size) == 0) fdatasync(j->fd);
        struct stat st;
        if (fstat(j->fd, &st) == 0 && (uint64_t)st.st_size > j->active_size)
            j->st.bytes_pending += (uint64_t)st.st_size - j->active_size;
        char e2[16];
        eg_spill_seal(j, e2, sizeof e2);
        j->st.append_errors++;
        shrink_buf(j);
        return -1;
    }
    if (j->active_frames++ == 0) j->active_since = eg_now_ms();
    j->active_size += flen;
    j->st.frames_appended++;
    j->st.bytes_appended += flen;
    j->st.bytes_pending += flen;
    shrink_buf(j);
    return 0;
}

int eg_spill_set_aside(eg_spill *j, uint64_t seq, const eg_spill_rec *r, char *err, size_t errlen) {
    if (encode_frame(j, r, err, errlen) != 0) {
        shrink_buf(j);
        return -1;
    }
    char name[48];
    seg_name(seq, 2, name, sizeof name);
    struct stat st;
    int fresh = fstatat(j->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0;
    char why[256];
    int fd = open_regular(j->dirfd, name, O_WRONLY | O_CREAT | O_APPEND, 0600, why, sizeof why);
    int rc = -1;
    if (fd < 0) {
        snprintf(err, errlen, "spill journal %s: create %s", j->dir, why);
    } else {
        /* a torn frame from an earlier crash would only cost itself: the
         * scanner resynchronises on the frame after it */
        if (write_all(fd, j->buf.data, j->buf.size) != 0 || fdatasync(fd) != 0 || (fresh && fsync(j->dirfd) != 0))
            snprintf(err, errlen, "spill journal %s: %s: %s", j->dir, name, strerror(errno));
        else rc = 0;
        close(fd);
    }
    if (rc == 0) {
        j->st.frames_refused++;
        if (fresh) j->st.segments_refused++;
    }
    shrink_buf(j);
    return rc;
}

int eg_spill_retire(eg_spill *j, uint64_t seq, int corrupt, char *err, size_t errlen) {
    char name[48], dest[48];
    seg_name(seq, 0, name, sizeof name);
    if (j->fd >= 0 && seq == j->active_seq) {
        snprintf(err, errlen, "spill journal %s: %s is the active segment", j->dir, name);
        return -1;
    }
    struct stat st;
    if (fstatat(j->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        snprintf(err, errlen, "spill journal %s: %s: %s", j->dir, name, strerror(errno));
        return -1;
    }
    if (corrupt) {
        seg_name(seq, 1, dest, sizeof dest);
        if (renameat(j->dirfd, name, j->dirfd, dest) != 0) {
            snprintf(err, errlen, "spill journal %s: rename %s to %s: %s", j->dir, name, dest, strerror(errno));
            return -1;
        }
        j->st.segments_corrupt++;
    } else if (unlinkat(j->dirfd, name, 0) != 0) {
        snprintf(err, errlen, "spill journal %s: delete %s: %s", j->dir, name, strerror(errno));
        return -1;
    }
    fsync(j->dirfd);
    j->st.segments -= j->st.segments ? 1 : 0;
    j->st.bytes_pending -= j->st.bytes_pending >= (uint64_t)st.st_size ? (uint64_t)st.st_size : j->st.bytes_pending;
    return 0;
}

void eg_spill_close(eg_spill *j) {
    if (!j) return;
    char e[16];
    if (j->fd >= 0) eg_spill_seal(j, e, sizeof e);
    if (j->lockfd >= 0) {
        if (j->locked && ftruncate(j->lockfd, 0) != 0) { /* informational only */
        }
        close(j->lockfd); /* releases the flock */
    }
    if (j->dirfd >= 0) close(j->dirfd);
    msgpack_sbuffer_destroy(&j->buf);
    free(j->dir);
    free(j);
}

/* ------------------------------------------------------------------ scanner */

struct eg_spill_scan {
    int fd; /* -1: a memory scanner over mem */
    const unsigned char *mem;
    uint64_t memlen;
    char *buf; /* the payload of the frame last read (file scanners) */
    size_t cap;
    const char *payload; /* where the payload last read is: buf, or inside mem */
    size_t frame_bytes;
    msgpack_unpacked up;
    eg_spill_header *hdrs;
    size_t hcap;
    char *names; /* topic and header names, NUL-terminated */
    size_t ncap;
    int done; /* next() met a read error: it stays there */
    eg_spill_scan_state st;
};

static eg_spill_scan *scan_new(int fd, const void *mem, size_t n) {
    eg_spill_scan *s = eg_xcalloc(1, sizeof *s);
    s->fd = fd;
    s->mem = mem;
    s->memlen = n;
    msgpack_unpacked_init(&s->up);
    return s;
}

eg_spill_scan *eg_spill_scan_open(const char *path, char *err, size_t errlen) {
    char why[256];
    int fd = open_regular(AT_FDCWD, path, O_RDONLY | O_NONBLOCK, 0, why, sizeof why);
    if (fd < 0) {
        eg_strlcpy(err, why, errlen);
        return NULL;
    }
    return scan_new(fd, NULL, 0);
}

eg_spill_scan *eg_spill_scan_open_mem(const void *buf, size_t n) { return scan_new(-1, n ? buf : "", n); }

const eg_spill_scan_state *eg_spill_scan_state_get(const eg_spill_scan *s) { return &s->st; }
size_t eg_spill_scan_frame_bytes(const eg_spill_scan *s) { return s->frame_bytes; }

/* Reads up to n bytes at off; returns the count (short only at the end of
 * the source), or -1 (errno set). */
static ssize_t src_read(const eg_spill_scan *s, void *p, size_t n, uint64_t off) {
    if (s->fd < 0) {
        if (off >= s->memlen) return 0;
        size_t k = s->memlen - off < n ? (size_t)(s->memlen - off) : n;
        memcpy(p, s->mem + off, k);
        return (ssize_t)k;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(s->fd, (char *)p + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* The source's size now (a file may grow). Returns 0 and *size, or -1. */
static int src_size(const eg_spill_scan *s, uint64_t *size) {
    if (s->fd < 0) {
        *size = s->memlen;
        return 0;
    }
    struct stat st;
    if (fstat(s->fd, &st) != 0) return -1;
    *size = (uint64_t)st.st_size;
    return 0;
}

static int obj_is(const msgpack_object *k, const char *name) {
    size_t n = strlen(name);
    return k->via.str.size == n && memcmp(k->via.str.ptr, name, n) == 0;
}

static const void *bin_ptr(const msgpack_object *o) {
    if (o->type == MSGPACK_OBJECT_NIL) return NULL;
    return o->via.bin.size ? o->via.bin.ptr : "";
}

/* Decodes a verified payload into *r. Returns 0, or -1 with why. */
static int decode(eg_spill_scan *s, size_t n, eg_spill_rec *r, char *why, size_t whylen) {
    msgpack_unpacked_destroy(&s->up);
    msgpack_unpacked_init(&s->up);
    size_t off = 0;
    if (!eg_mp_plausible(s->payload, n)) { /* msgpack-c would allocate what a count claims */
        snprintf(why, whylen, "bad payload: not MessagePack, or a count larger than the payload");
        return -1;
    }
    msgpack_unpack_return ur = msgpack_unpack_next(&s->up, s->payload, n, &off);
    if (ur != MSGPACK_UNPACK_SUCCESS) {
        snprintf(why, whylen, "bad payload: %s",
                 ur == MSGPACK_UNPACK_CONTINUE ? "truncated MessagePack" : "not MessagePack");
        return -1;
    }
    if (off != n) {
        snprintf(why, whylen, "bad payload: %zu bytes after the map", n - off);
        return -1;
    }
    const msgpack_object *root = &s->up.data;
    if (root->type != MSGPACK_OBJECT_MAP) {
        snprintf(why, whylen, "bad payload: not a map");
        return -1;
    }
    static const char *const keys[6] = {"topic", "partition", "timestamp", "key", "value", "headers"};
    const msgpack_object *f[6] = {0};
    for (uint32_t i = 0; i < root->via.map.size; i++) {
        const msgpack_object_kv *kv = &root->via.map.ptr[i];
        if (kv->key.type != MSGPACK_OBJECT_STR) {
            snprintf(why, whylen, "bad payload: a map key is not a string");
            return -1;
        }
        for (int k = 0; k < 6; k++)
            if (obj_is(&kv->key, keys[k])) {
                if (f[k]) {
                    snprintf(why, whylen, "bad payload: \"%s\" twice", keys[k]);
                    return -1;
                }
                f[k] = &kv->val;
            }
    }
    for (int k = 0; k < 6; k++)
        if (!f[k]) {
            snprintf(why, whylen, "bad payload: no \"%s\"", keys[k]);
            return -1;
        }
    const msgpack_object *t = f[0], *p = f[1], *ts = f[2], *hs = f[5];
    if (t->type != MSGPACK_OBJECT_STR || t->via.str.size == 0 || t->via.str.size > EG_SPILL_TOPIC_MAX ||
        memchr(t->via.str.ptr, 0, t->via.str.size)) {
        snprintf(why, whylen, "bad payload: \"topic\" is not a topic name");
        return -1;
    }
    if (!((p->type == MSGPACK_OBJECT_POSITIVE_INTEGER && p->via.u64 <= INT32_MAX) ||
          (p->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && p->via.i64 == -1))) {
        snprintf(why, whylen, "bad payload: \"partition\" is not -1 or a partition number");
        return -1;
    }
    if (!((ts->type == MSGPACK_OBJECT_POSITIVE_INTEGER && ts->via.u64 <= INT64_MAX) ||
          (ts->type == MSGPACK_OBJECT_NEGATIVE_INTEGER && ts->via.i64 == -1))) {
        snprintf(why, whylen, "bad payload: \"timestamp\" is not -1 or ms since the epoch");
        return -1;
    }
    for (int k = 3; k <= 4; k++)
        if (f[k]->type != MSGPACK_OBJECT_BIN && f[k]->type != MSGPACK_OBJECT_NIL) {
            snprintf(why, whylen, "bad payload: \"%s\" is not bin or nil", keys[k]);
            return -1;
        }
    if (hs->type != MSGPACK_OBJECT_ARRAY) {
        snprintf(why, whylen, "bad payload: \"headers\" is not an array");
        return -1;
    }
    size_t nh = hs->via.array.size, names = t->via.str.size + 1;
    for (size_t i = 0; i < nh; i++) {
        const msgpack_object *h = &hs->via.array.ptr[i];
        if (h->type != MSGPACK_OBJECT_ARRAY || h->via.array.size != 2 ||
            h->via.array.ptr[0].type != MSGPACK_OBJECT_STR ||
            (h->via.array.ptr[0].via.str.size &&
             memchr(h->via.array.ptr[0].via.str.ptr, 0, h->via.array.ptr[0].via.str.size)) ||
            (h->via.array.ptr[1].type != MSGPACK_OBJECT_BIN && h->via.array.ptr[1].type != MSGPACK_OBJECT_NIL)) {
            snprintf(why, whylen, "bad payload: header %zu is not [name, bin or nil]", i);
            return -1;
        }
        names += h->via.array.ptr[0].via.str.size + 1;
    }
    if (names > s->ncap) {
        s->ncap = names;
        s->names = eg_xrealloc(s->names, names);
    }
    if (nh > s->hcap) {
        s->hcap = nh;
        s->hdrs = eg_xrealloc(s->hdrs, nh * sizeof *s->hdrs);
    }
    char *w = s->names;
    memcpy(w, t->via.str.ptr, t->via.str.size);
    w[t->via.str.size] = '\0';
    r->topic = w;
    w += t->via.str.size + 1;
    for (size_t i = 0; i < nh; i++) {
        const msgpack_object *name = &hs->via.array.ptr[i].via.array.ptr[0];
        const msgpack_object *val = &hs->via.array.ptr[i].via.array.ptr[1];
        if (name->via.str.size) memcpy(w, name->via.str.ptr, name->via.str.size);
        w[name->via.str.size] = '\0';
        s->hdrs[i].name = w;
        w += name->via.str.size + 1;
        s->hdrs[i].value = bin_ptr(val);
        s->hdrs[i].value_len = val->type == MSGPACK_OBJECT_BIN ? val->via.bin.size : 0;
    }
    r->partition = p->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? -1 : (int32_t)p->via.u64;
    r->timestamp_ms = ts->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? -1 : (int64_t)ts->via.u64;
    r->key = bin_ptr(f[3]);
    r->key_len = f[3]->type == MSGPACK_OBJECT_BIN ? f[3]->via.bin.size : 0;
    r->value = bin_ptr(f[4]);
    r->value_len = f[4]->type == MSGPACK_OBJECT_BIN ? f[4]->via.bin.size : 0;
    r->headers = nh ? s->hdrs : NULL;
    r->nheaders = nh;
    r->kheaders = NULL;
    return 0;
}

/* Reads and verifies the frame at off. Returns 1 (a frame), 0 (clean end of
 * the source at off), -1 (bad: why, *torn / *ioerr say what kind). */
static int read_frame(eg_spill_scan *s, uint64_t off, eg_spill_rec *r, char *why, size_t whylen, int *torn,
                      int *ioerr) {
    unsigned char h[EG_SPILL_FRAME_HDR];
    *torn = *ioerr = 0;
    ssize_t n = src_read(s, h, sizeof h, off);
    if (n < 0) {
        snprintf(why, whylen, "read: %s", strerror(errno));
        *ioerr = 1;
        return -1;
    }
    if (n == 0) return 0;
    if (n < (ssize_t)sizeof h) {
        snprintf(why, whylen, "torn frame: header cut at %zd of %d bytes by the end of the file", n,
                 EG_SPILL_FRAME_HDR);
        *torn = 1;
        return -1;
    }
    if (memcmp(h, EG_SPILL_MAGIC, 4) != 0) {
        snprintf(why, whylen, "bad magic %02x%02x%02x%02x", h[0], h[1], h[2], h[3]);
        return -1;
    }
    uint32_t len = get_be32(h + 4), crc = get_be32(h + 8);
    if (len == 0 || len > EG_SPILL_FRAME_MAX) {
        snprintf(why, whylen, "bad frame length %" PRIu32, len);
        return -1;
    }
    if (s->fd < 0) {
        n = s->memlen - off - sizeof h < len ? (ssize_t)(s->memlen - off - sizeof h) : (ssize_t)len;
        s->payload = (const char *)s->mem + off + sizeof h;
    } else {
        if (len > s->cap) {
            s->buf = eg_xrealloc(s->buf, len);
            s->cap = len;
        }
        n = src_read(s, s->buf, len, off + sizeof h);
        s->payload = s->buf;
    }
    if (n < 0) {
        snprintf(why, whylen, "read: %s", strerror(errno));
        *ioerr = 1;
        return -1;
    }
    if ((size_t)n < len) {
        snprintf(why, whylen, "torn frame: payload cut at %zd of %" PRIu32 " bytes by the end of the file", n, len);
        *torn = 1;
        return -1;
    }
    uint32_t got = eg_crc32(0, s->payload, len);
    if (got != crc) {
        snprintf(why, whylen, "CRC mismatch (stored %08" PRIx32 ", computed %08" PRIx32 ")", crc, got);
        return -1;
    }
    if (decode(s, len, r, why, whylen) != 0) return -1;
    s->frame_bytes = sizeof h + len;
    return 1;
}

/* Payload bytes one resynchronisation may read and CRC-check in candidate
 * frames. Honest damage meets a false candidate about once per 4 GiB (a
 * 4-byte magic), so this is never reached by it; a crafted segment that
 * embeds a header with a long declared length every few bytes would
 * otherwise cost (segment size)^2 on the event loop. At table-driven CRC
 * speed this bounds one resynchronisation to well under a second. */
#define RESYNC_BUDGET ((uint64_t)4 * EG_SPILL_FRAME_MAX)

/* After a bad frame: the first offset at or after `from` where a good frame
 * starts (magic, a length that fits in the source, a CRC that checks, a
 * payload that decodes), or the source's size when none does or when the
 * candidates checked on the way exceed RESYNC_BUDGET (then why says so: the
 * rest of the source is reported lost). Returns 1 (found), 0 (none: *at is
 * the size), -1 (read error, why filled). */
static int resync(eg_spill_scan *s, uint64_t from, uint64_t *at, char *why, size_t whylen) {
    uint64_t size;
    if (src_size(s, &size) != 0) {
        snprintf(why, whylen, "stat: %s", strerror(errno));
        return -1;
    }
    unsigned char win[1 << 16];
    eg_spill_rec r;
    char scratch[160];
    int torn, ioerr;
    uint64_t checked = 0; /* candidate payload bytes read so far */
    for (uint64_t pos = from; pos + EG_SPILL_FRAME_HDR <= size;) {
        ssize_t n = src_read(s, win, sizeof win, pos);
        if (n < 0) {
            snprintf(why, whylen, "read: %s", strerror(errno));
            return -1;
        }
        if (n < 4) break;
        for (size_t i = 0; i + 4 <= (size_t)n; i++) {
            const unsigned char *m = memchr(win + i, 'E', (size_t)n - i - 3);
            if (!m) break;
            i = (size_t)(m - win);
            if (memcmp(m, EG_SPILL_MAGIC, 4) != 0) continue;
            uint64_t cand = pos + i;
            unsigned char h[EG_SPILL_FRAME_HDR];
            if (src_read(s, h, sizeof h, cand) != (ssize_t)sizeof h) continue;
            uint32_t len = get_be32(h + 4);
            if (len == 0 || len > EG_SPILL_FRAME_MAX || len > size - cand - sizeof h) continue;
            checked += len;
            if (checked > RESYNC_BUDGET) {
                snprintf(why, whylen,
                         "bad frame, then more candidate frame headers than a damaged segment holds "
                         "(crafted?): the rest from %" PRIu64 " is not searched",
                         cand);
                *at = size;
                return 0;
            }
            int rc = read_frame(s, cand, &r, scratch, sizeof scratch, &torn, &ioerr);
            if (rc == 1) {
                *at = cand;
                return 1;
            }
            if (ioerr) {
                eg_strlcpy(why, scratch, whylen);
                return -1;
            }
        }
        if ((size_t)n < sizeof win) break;
        pos += (uint64_t)n - 3; /* a magic may straddle the window's end */
    }
    *at = size >= from ? size : from; /* past the bad frame's first byte at least */
    return 0;
}

int eg_spill_scan_next(eg_spill_scan *s, eg_spill_rec *r) {
    if (s->done) return -1;
    int torn, ioerr;
    uint64_t start = s->st.next;
    int rc = read_frame(s, start, r, s->st.reason, sizeof s->st.reason, &torn, &ioerr);
    if (rc == 1) {
        s->st.offset = start;
        s->st.next += s->frame_bytes;
        s->st.frames++;
        s->st.reason[0] = '\0';
        return 1;
    }
    if (rc == 0) return 0;
    s->st.bad = 1;
    s->st.ioerr = ioerr;
    s->st.offset = start;
    if (ioerr) {
        s->done = 1;
        return -1;
    }
    uint64_t at;
    int found = resync(s, start + 1, &at, s->st.reason, sizeof s->st.reason);
    if (found < 0) {
        s->st.ioerr = s->done = 1;
        return -1;
    }
    if (found && torn) /* not cut by the end: its length was damaged */
        snprintf(s->st.reason, sizeof s->st.reason, "bad frame: its length runs past the end of the file");
    s->st.torn = torn && !found;
    s->st.bad_len = at - start;
    s->st.next = at;
    s->st.damaged++;
    s->st.damaged_bytes += at - start;
    return -1;
}

int eg_spill_scan_at(eg_spill_scan *s, uint64_t off, eg_spill_rec *r) {
    int torn, ioerr;
    int rc = read_frame(s, off, r, s->st.reason, sizeof s->st.reason, &torn, &ioerr);
    if (rc == 0) snprintf(s->st.reason, sizeof s->st.reason, "no frame at offset %" PRIu64, off);
    if (rc != 1) return -1;
    s->st.offset = off;
    return 1;
}

int eg_spill_scan_buf(const void *buf, size_t n, eg_spill_scan_fn fn, void *arg) {
    eg_spill_scan *s = eg_spill_scan_open_mem(buf, n);
    eg_spill_rec r;
    int rc, stop = 0;
    while (!stop && (rc = eg_spill_scan_next(s, &r)) != 0) {
        const eg_spill_scan_state *st = &s->st;
        if (rc == 1) stop = fn(arg, &r, st->offset, s->frame_bytes, NULL);
        else stop = fn(arg, NULL, st->offset, st->bad_len, st->reason);
    }
    eg_spill_scan_close(s);
    return stop;
}

void eg_spill_scan_close(eg_spill_scan *s) {
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    msgpack_unpacked_destroy(&s->up);
    free(s->buf);
    free(s->hdrs);
    free(s->names);
    free(s);
}
