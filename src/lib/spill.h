/* spill.h — the spill journal: lane records that Kafka did not acknowledge in
 * time, kept in fsync'd local files until a drainer re-produces them.
 *
 * DESIGN §2 guarantee 3. When a lane write is not acknowledged within
 * lanes.spill.after_ms, the gateway appends the lane record here; once
 * eg_spill_append has returned 0 the record is on disk (fdatasync) and counts
 * as durable, so its source offset may be committed. A drainer (below)
 * re-produces the records to Kafka (idempotent, acks=all) and deletes a
 * segment only when every record in it has a successful delivery report.
 * At-least-once: a crash at any point may re-drain records (duplicates),
 * never lose one.
 *
 * ---- On-disk format (byte-exact) -------------------------------------------
 *
 * DIR/spill-NNNNNNNNNNNNNNNN.eg   a segment: 16 decimal digits of its sequence
 *                                 number (from 1, never reused), then frames
 *                                 back to back, no file header. The active
 *                                 segment grows by whole frames; a sealed one
 *                                 is never written again.
 * DIR/spill-NNNNNNNNNNNNNNNN.eg.corrupt
 *                                 a segment that held damaged bytes, renamed
 *                                 (bytes untouched, so logged offsets still
 *                                 point into it) once every intact frame in
 *                                 it was delivered: it holds no undelivered
 *                                 frame, only the evidence (never deleted by
 *                                 errgate).
 * DIR/spill-NNNNNNNNNNNNNNNN.eg.refused
 *                                 frames of segment N that Kafka refused for
 *                                 good (even as a stub: see the drainer),
 *                                 set aside in the same frame format so they
 *                                 never block the journal; never drained or
 *                                 deleted by errgate (rename one to a fresh
 *                                 spill-*.eg name, while no process holds
 *                                 the lock, to drain it again).
 * DIR (all of it)                owned by the running user, writable by no
 *                                 one else; every file in it is opened with
 *                                 O_NOFOLLOW and must be a regular file (see
 *                                 spill.c)
 * DIR/LOCK                        flock(LOCK_EX) held by the one process that
 *                                 owns the journal (gateway or `spill drain`).
 *                                 Content, informational: one line
 *                                 "pid=PID role=ROLE active=NAME|-".
 *
 * A frame is a 12-byte header followed by the payload:
 *
 *   offset  size  field
 *   0       4     magic: the bytes 0x45 0x47 0x53 0x31 ("EGS1")
 *   4       4     L: payload length in bytes, unsigned big-endian,
 *                 1 <= L <= EG_SPILL_FRAME_MAX
 *   8       4     CRC-32 of the L payload bytes, unsigned big-endian
 *                 (IEEE 802.3 / zlib: reflected polynomial 0xEDB88320,
 *                 initial value and final xor 0xFFFFFFFF; "123456789" ->
 *                 0xCBF43926)
 *   12      L     payload: one MessagePack map of exactly 6 entries, keys
 *                 are str, written in this order:
 *                   "topic"     str, 1..255 bytes, the lane topic
 *                   "partition" int, -1 .. 2^31-1 (see eg_spill_rec)
 *                   "timestamp" int, CreateTime in ms since the epoch, -1: none
 *                   "key"       bin, or nil for a record without a key
 *                   "value"     bin, or nil for a null value
 *                   "headers"   array, in record order, of 2-element arrays
 *                               [str name (no NUL byte), bin value | nil]
 *
 * Integers are packed in MessagePack's shortest form. Readers accept the six
 * keys in any order and ignore unknown keys (a future writer may add some; an
 * incompatible change takes a new magic). A frame is bad when its magic,
 * length or CRC is wrong, when it ends before its length (a torn write: an
 * append interrupted by a crash, which was never acknowledged), or when the
 * payload is not exactly one such map. A bad frame costs at most itself: the
 * scan reports the damaged byte range and resynchronises on the next good
 * frame, i.e. the next offset where the magic, a length that fits in the
 * file, a checking CRC and a decodable payload all hold (a damaged region
 * thus runs from the bad frame to the next good frame, or to the end of the
 * file). Every intact frame after damage is applied. A good frame embedded
 * inside a damaged frame's bytes (a record whose value is itself a spill
 * frame) would be applied too: the scan cannot tell it from a real one.
 *
 * ---- Use in the gateway ------------------------------------------------------
 *
 * At start: eg_spill_open(lanes.spill.dir) (this takes the lock: one gateway
 * per journal), then eg_spill_drain_new with a producer conf prepared like
 * the lane producer's, then eg_spill_drain_attach to the event loop. Records
 * already in the journal (a previous run's) drain first. A lane write not
 * acknowledged within lanes.spill.after_ms: eg_spill_append; on 0 the record
 * is durable. The active segment drains too: the attached drainer seals it
 * (eg_spill_seal) once nothing sealed is left and its first frame is
 * seal_after_ms old, then drains it; so a spilled record reaches Kafka about
 * seal_after_ms + a step after the lane accepts writes again. The gateway
 * never has to seal by itself (it may, e.g. before shutdown). At shutdown:
 * eg_spill_drain_free (undelivered frames stay on disk), then
 * eg_spill_close.
 *
 * ---- Ownership and threads ---------------------------------------------------
 *
 * An eg_spill (journal) and an eg_spill_drain belong to one thread (the
 * gateway's loop thread, or the command's). The journal owns its directory
 * lock and the active segment's fd. A drainer borrows its journal (close the
 * drainer first) and owns its Kafka producer. Records passed to
 * eg_spill_append are borrowed for the call only. Records returned by a scan
 * point into the scanner's buffers: valid until the next call on it. */
#ifndef EG_SPILL_H
#define EG_SPILL_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

#define EG_SPILL_MAGIC "EGS1"
#define EG_SPILL_FRAME_HDR 12
#define EG_SPILL_FRAME_MAX ((size_t)64 << 20)     /* payload bytes, hard cap */
#define EG_SPILL_SEGMENT_BYTES ((size_t)64 << 20) /* default rotation size */
#define EG_SPILL_TOPIC_MAX 255

/* CRC-32 (IEEE) of n bytes, continuing from crc (start with 0). */
uint32_t eg_crc32(uint32_t crc, const void *data, size_t n);

/* ------------------------------------------------------------------ records */

/* One header. name is NUL-terminated; value NULL is a null (nil) value, a
 * non-NULL value with value_len 0 an empty one. */
typedef struct eg_spill_header {
    const char *name;
    const void *value;
    size_t value_len;
} eg_spill_header;

/* One lane record, as appended and as scanned.
 * partition: the partition the lane write aimed at. The drainer produces to
 * exactly that partition; only when the topic lacks it, to partition %
 * count (the rule lanes.c applies to source partitions; a record without a
 * key then goes where librdkafka's sticky partitioner puts it). -1 lets
 * librdkafka's consistent_random partitioner choose from the key.
 * key/value: NULL is null (nil), non-NULL with length 0 is empty.
 * headers: headers[0..nheaders) first, then (append only) every header of
 * kheaders, in order; a scan fills headers and sets kheaders to NULL. */
typedef struct eg_spill_rec {
    const char *topic; /* NUL-terminated, 1..255 bytes */
    int32_t partition;
    int64_t timestamp_ms; /* -1: none; the drainer lets librdkafka stamp -1 and 0 */
    const void *key;
    size_t key_len;
    const void *value;
    size_t value_len;
    const eg_spill_header *headers;
    size_t nheaders;
    const rd_kafka_headers_t *kheaders; /* append only; may be NULL */
} eg_spill_rec;

/* ------------------------------------------------------------------ journal */

typedef struct eg_spill eg_spill;

typedef struct eg_spill_opts {
    size_t segment_bytes;   /* rotate before a frame that would pass this size;
                             * 0: EG_SPILL_SEGMENT_BYTES */
    size_t max_frame_bytes; /* refuse larger payloads; 0 or more than
                             * EG_SPILL_FRAME_MAX: EG_SPILL_FRAME_MAX */
    const char *role;       /* written into DIR/LOCK ("gateway", "drain"); NULL: "errgate" */
} eg_spill_opts;

/* Opens the journal in dir: creates dir (mode 0700) when missing, refuses
 * a dir not owned by the running user or writable by group or others, and
 * a LOCK that is not a regular file of one link (a symbolic link is never
 * followed), takes the flock on DIR/LOCK (fails when another process, or another eg_spill of
 * this one, holds it; the message names the owner), and finds the next
 * sequence number (past every existing segment, corrupt ones included). No
 * segment is created until the first append: a reopened journal never
 * writes into an existing segment. opts may be NULL. Returns NULL with a
 * one-line message in err on error. */
eg_spill *eg_spill_open(const char *dir, const eg_spill_opts *opts, char *err, size_t errlen);

/* Appends one frame to the active segment (creating it, or rotating first
 * when the frame would pass segment_bytes) and fdatasyncs it. Returns 0 only
 * when the whole frame is on disk: the record is durable. Returns -1 with a
 * message for a record that cannot be spilled (bad topic or partition,
 * payload over max_frame_bytes: the journal is unchanged) or for a
 * write/fsync error: then the partial frame is truncated away where possible
 * and the segment is sealed, so later appends go to a fresh segment and a
 * leftover partial frame can only end a sealed segment (reported as corrupt
 * when drained). The caller still owns the record on -1. */
int eg_spill_append(eg_spill *j, const eg_spill_rec *rec, char *err, size_t errlen);

/* Seals the active segment (closes it; the next append starts a new one) so
 * a drainer may take it. A no-op returning 0 when there is none. Every
 * frame was already fsync'd by its append. Returns -1 with a message if
 * closing fails (the segment is sealed all the same). */
int eg_spill_seal(eg_spill *j, char *err, size_t errlen);

/* The active segment's sequence number (0: none), its frame count, and the
 * monotonic ms time (eg_now_ms) of its first frame (0: none). */
uint64_t eg_spill_active_seq(const eg_spill *j);
uint64_t eg_spill_active_frames(const eg_spill *j);
int64_t eg_spill_active_since_ms(const eg_spill *j);

/* The journal's directory (borrowed, lives as long as j). */
const char *eg_spill_dir(const eg_spill *j);

/* Retires sealed segment seq: deletes it (corrupt == 0) or renames it to
 * "NAME.corrupt" (corrupt != 0), then fsyncs the directory. For the
 * drainer, after every good frame of the segment was delivered. Refuses the
 * active segment. Returns 0, or -1 with a message. */
int eg_spill_retire(eg_spill *j, uint64_t seq, int corrupt, char *err, size_t errlen);

/* Sets a frame of sealed segment seq that Kafka refused for good aside:
 * appends rec (borrowed) as one frame to DIR/spill-SEQ.eg.refused (created
 * when missing, the directory fsync'd) and fdatasyncs it. Returns 0 when it
 * is durable there (the frame may then be counted as delivered), or -1 with
 * a message. */
int eg_spill_set_aside(eg_spill *j, uint64_t seq, const eg_spill_rec *rec, char *err, size_t errlen);

/* Journal counters, for /metrics. */
typedef struct eg_spill_stats {
    uint64_t frames_appended;  /* appends that returned 0, this process */
    uint64_t bytes_appended;   /* their frame bytes */
    uint64_t append_errors;    /* appends that returned -1 */
    uint64_t segments;         /* spill-*.eg files now (sealed and active) */
    uint64_t bytes_pending;    /* their total size */
    uint64_t segments_corrupt; /* *.eg.corrupt files now */
    uint64_t segments_sealed;  /* segments sealed by this process (rotation, seal, error) */
    uint64_t segments_refused; /* *.eg.refused files now */
    uint64_t frames_refused;   /* frames set aside by this process */
} eg_spill_stats;

void eg_spill_stats_get(const eg_spill *j, eg_spill_stats *out);

/* Releases the lock and closes the active segment (every frame in it is
 * already durable). NULL is a no-op. */
void eg_spill_close(eg_spill *j);

/* ------------------------------------------------------------ segment files */

typedef struct eg_spill_seg {
    uint64_t seq;
    int corrupt;    /* a *.eg.corrupt file */
    uint64_t bytes; /* file size */
    char name[48];  /* file name inside the directory */
    int refused;    /* a *.eg.refused side file (see the format) */
} eg_spill_seg;

/* Lists the segments of dir (all three kinds), sorted by sequence number. Needs
 * no lock (it only reads). On success returns 0 and sets *out (caller frees
 * with free(); NULL when *n is 0) and *n. Returns -1 with a message (a
 * missing or unreadable dir). */
int eg_spill_list(const char *dir, eg_spill_seg **out, size_t *n, char *err, size_t errlen);

/* Whether another process holds dir's lock. Returns 1 and copies the LOCK
 * line's fields (owner: "pid=.. role=..", active: a segment name or "") when
 * it does, 0 when nobody does (or there is no LOCK file), -1 on error (a
 * LOCK that is a link or not a regular file is never opened). The
 * probe is a non-blocking shared flock released at once; eg_spill_open
 * retries briefly, so a probe never makes an opener fail. */
int eg_spill_lock_owner(const char *dir, char *owner, size_t ownerlen, char *active, size_t activelen);

/* ----------------------------------------------------------------- scanning */

typedef struct eg_spill_scan eg_spill_scan;

/* Where a scan stands. */
typedef struct eg_spill_scan_state {
    uint64_t frames;        /* good frames read so far by eg_spill_scan_next */
    uint64_t offset;        /* start of the frame last returned by next or at,
                             * or of the damaged region next reported */
    uint64_t next;          /* where eg_spill_scan_next reads next */
    int bad;                /* eg_spill_scan_next met damage (sticky) */
    int torn;               /* the last damage ran to the end of the file and
                             * began with a frame cut short there (a torn write) */
    int ioerr;              /* the file could not be read (not corruption):
                             * the scan stops for good */
    char reason[160];       /* what was wrong with the last damage, one line */
    uint64_t bad_len;       /* length of the last damaged region: bytes
                             * [offset, offset + bad_len) were skipped */
    uint64_t damaged;       /* damaged regions met so far */
    uint64_t damaged_bytes; /* their total length */
} eg_spill_scan_state;

/* Opens a segment file for reading: a symbolic link (the path's last
 * component) or anything but a regular file is refused, and the open never
 * blocks (a FIFO). Returns NULL with a message on error. */
eg_spill_scan *eg_spill_scan_open(const char *path, char *err, size_t errlen);

/* A scanner over n bytes of memory (borrowed: they must outlive it), the
 * same as over a file of those bytes. Never fails. For tests and fuzzing. */
eg_spill_scan *eg_spill_scan_open_mem(const void *buf, size_t n);

/* Reads the next frame into *rec (valid until the next call on s). Returns
 * 1 for a frame, 0 at a clean end of the file, -1 for damage: either the
 * state's ioerr (the file cannot be read; it keeps returning -1), or a
 * damaged region: bytes [offset, offset + bad_len) hold no good frame, why
 * is in reason, and the next call goes on with the good frame at next (the
 * end of the region). The file may still be growing (the active segment): a
 * later call after 0 reads frames appended since. Finding the next good
 * frame reads the damaged bytes once, plus each embedded candidate header's
 * declared payload (bounded by the file size). */
int eg_spill_scan_next(eg_spill_scan *s, eg_spill_rec *rec);

/* Scans n bytes of memory as a segment: calls fn for every good frame (rec
 * set, off and len its bytes, reason NULL) and every damaged region (rec
 * NULL, off and len the region, reason why), in file order, until the end
 * or until fn returns non-zero. rec is valid during the call only. Returns
 * 0, or fn's non-zero value. The parser of outside bytes, callable as is by
 * a fuzzer. */
typedef int (*eg_spill_scan_fn)(void *arg, const eg_spill_rec *rec, uint64_t off, uint64_t len, const char *reason);
int eg_spill_scan_buf(const void *buf, size_t n, eg_spill_scan_fn fn, void *arg);

/* Reads the frame at byte offset off (from an earlier scan) into *rec
 * without moving the scan. Returns 1, or -1 with the reason in the state's
 * reason (the bad/next fields are untouched). */
int eg_spill_scan_at(eg_spill_scan *s, uint64_t off, eg_spill_rec *rec);

const eg_spill_scan_state *eg_spill_scan_state_get(const eg_spill_scan *s);

/* Size of the frame last returned (header included). */
size_t eg_spill_scan_frame_bytes(const eg_spill_scan *s);

void eg_spill_scan_close(eg_spill_scan *s);

/* ------------------------------------------------------------------ drainer */

typedef struct eg_spill_drain eg_spill_drain;

typedef struct eg_spill_drain_opts {
    int seal_after_ms;         /* seal the journal's active segment when nothing
                             * sealed is left to drain and its first frame is
                             * this old; 0: 1000; -1: never */
    int backoff_min_ms;        /* after a failed delivery: 0: 500 */
    int backoff_max_ms;        /* doubling up to this: 0: 30000 */
    size_t max_inflight;       /* frames produced and not yet reported; 0: 10000 */
    size_t max_inflight_bytes; /* their frame bytes; 0: 32 MiB */
} eg_spill_drain_opts;

/* Creates a drainer for journal j (borrowed: close the drainer first) with
 * a producer built from conf, which the caller prepared (bootstrap, security
 * and client settings) and which this call always takes over, also on
 * error. The drainer forces enable.idempotence=true and acks=all and sets
 * its own delivery-report callback and opaque. opts may be NULL. Returns
 * NULL with a message on error. */
eg_spill_drain *eg_spill_drain_new(eg_spill *j, rd_kafka_conf_t *conf, const eg_spill_drain_opts *opts, char *err,
                                   size_t errlen);

/* One non-blocking step: serves delivery reports (rd_kafka_poll(rk, 0)),
 * retires segments whose frames are all delivered (deleted, or renamed
 * *.corrupt when damaged regions were skipped; frames set aside count as
 * delivered), and unless
 * backing off after a failure produces up to max_frames frames from the
 * sealed segments in sequence order (failed frames first, then new ones),
 * sealing the active segment when opts.seal_after_ms says so. Each frame goes
 * to its topic and partition with key, value, headers and timestamp
 * untouched. A failed delivery keeps its segment and is produced again after
 * the back-off (doubling, reset by the next success). A permanent refusal
 * (refusal.h) starts no back-off: the frame is produced again as a stub
 * (no value, no source headers, no timestamp), and a refused stub is set
 * aside (eg_spill_set_aside). Returns the number of
 * frames produced plus reports served (> 0: call again soon), 0 when there
 * was nothing to do now, -1 when the drainer cannot go on (a segment cannot
 * be read or retired, or the producer hit a fatal error one time too many:
 * see eg_spill_drain_error; nothing was deleted that was not delivered). A
 * producer's fatal error (librdkafka's idempotence state) is met by
 * replacing it in place, within kconf.h's EG_PRODUCER_REPLACE_MAX in
 * EG_PRODUCER_REPLACE_WINDOW_MS (spill_drain_producer_replaced). */
int eg_spill_drain_step(eg_spill_drain *d, int max_frames);

/* Serves delivery reports, blocking up to timeout_ms (commands only; the
 * gateway's loop never blocks: it uses step or attach). */
void eg_spill_drain_poll(eg_spill_drain *d, int timeout_ms);

/* 1 when everything is drained: no frame in flight or waiting, no sealed
 * segment left, and the journal's active segment absent or empty. Valid
 * after a step. */
int eg_spill_drain_done(const eg_spill_drain *d);

/* How many ms until a step is useful: 0 now (frames waiting and room in
 * flight), the back-off or seal wait left, or -1 when only delivery reports
 * or new appends can make work. */
int eg_spill_drain_next_ms(const eg_spill_drain *d);

/* Drives the drainer from a libevent loop: delivery reports wake it through
 * rd_kafka_queue_io_event_enable and a timer steps it (at once when work is
 * waiting, after the back-off, and at least every idle_ms, default 1000 when
 * 0, so new sealed segments and appends are noticed). Call once; free
 * detaches. Returns 0, or -1 with a message. */
int eg_spill_drain_attach(eg_spill_drain *d, struct event_base *base, int idle_ms, char *err, size_t errlen);

/* The last error, one line ("" when none): why step returned -1, or the
 * latest failed delivery. */
const char *eg_spill_drain_error(const eg_spill_drain *d);

/* Drainer counters, for /metrics and the command's summary. */
typedef struct eg_spill_drain_stats {
    uint64_t frames_produced;    /* produce calls accepted, retries included */
    uint64_t frames_drained;     /* successful delivery reports */
    uint64_t frames_failed;      /* failed reports and refused produces (each retried) */
    uint64_t segments_drained;   /* deleted after full delivery */
    uint64_t segments_corrupt;   /* renamed *.corrupt after all their intact frames */
    uint64_t corrupt_frames;     /* damaged regions skipped (each may span several frames) */
    uint64_t inflight;           /* produced, not yet reported */
    int64_t backoff_ms;          /* the current back-off, 0 when none */
    uint64_t damaged_bytes;      /* bytes of the damaged regions skipped */
    uint64_t frames_refused;     /* permanent refusals met (refusal.h), stubs included */
    uint64_t frames_stubbed;     /* frames delivered as stubs (errgate.value-omitted) */
    uint64_t frames_set_aside;   /* frames whose stub was refused too: in *.eg.refused */
    uint64_t producers_replaced; /* producers replaced after a fatal error */
} eg_spill_drain_stats;

void eg_spill_drain_stats_get(const eg_spill_drain *d, eg_spill_drain_stats *out);

/* Waits up to timeout_ms for the reports of frames in flight (retiring
 * segments they complete), purges what is left (those frames stay in their
 * segments), destroys the producer and frees d. NULL is a no-op. */
void eg_spill_drain_free(eg_spill_drain *d, int timeout_ms);

#endif
