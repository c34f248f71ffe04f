/* fuzz.h — what the fuzz targets share (spec/fuzz/README.md).
 *
 * Each spec/fuzz/fuzz_NAME.c defines LLVMFuzzerTestOneInput (and maybe
 * LLVMFuzzerInitialize) for one parser of outside bytes. It is linked either
 * with libFuzzer (make fuzz: clang, sanitizers, coverage) or with
 * replay_main.c (make test: the normal compiler, every corpus file run once).
 * A harness aborts through FZ_CHECK when a parser breaks its contract, so a
 * wrong answer is a finding like a crash. */
#ifndef EG_FUZZ_H
#define EG_FUZZ_H

#include <librdkafka/rdkafka.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond, ...)                                                             \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: contract broken: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                               \
            fputc('\n', stderr);                                                        \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* Header names the core reads, so that one input byte can pick a real one. */
extern const char *const fz_header_names[];
extern const size_t fz_nheader_names;

/* Decodes data into a header list (the caller destroys it). The format, a
 * sequence of headers until the input ends:
 *   name:  one byte b; b < 0x80: fz_header_names[b % count]; else the next
 *          (b & 0x7f) bytes are the name;
 *   value: one byte L; 0xff: a null value; 0xfe: the next two bytes are a
 *          big-endian length; else L; then that many bytes (fewer at the end
 *          of the input). */
rd_kafka_headers_t *fz_headers(const uint8_t *data, size_t size);

/* A real consumed librdkafka message (topic "orders", partition 0, key "k1",
 * value "v1", headers x-tenant: vip and error.code: http_400), read once from
 * an in-process mock cluster and kept for the life of the process (headers
 * of a message can only be read through librdkafka). Aborts when the mock
 * cluster fails. */
const rd_kafka_message_t *fz_message(void);

/* A fresh private directory (mkdtemp under $TMPDIR or /tmp), removed with
 * everything in it at exit. Returns a static path. */
const char *fz_tmpdir(void);

#endif
