/* tap.h — minimal TAP output for errgate's C unit tests.
 * CHECK(cond, desc) prints "ok N - desc" or "not ok N - desc (file:line)";
 * TAP_DONE() prints the plan and returns the exit code from main. */
#ifndef EG_TAP_H
#define EG_TAP_H
#include <stdio.h>
static int tap_n, tap_failed;
#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        int tap_ok_ = !!(cond); /* evaluated once: conditions may have effects */ \
        tap_n++;                                                                  \
        if (tap_ok_) {                                                            \
            printf("ok %d - ", tap_n);                                            \
        } else {                                                                  \
            tap_failed++;                                                         \
            printf("not ok %d - ", tap_n);                                        \
        }                                                                         \
        printf(__VA_ARGS__);                                                      \
        if (!tap_ok_) printf(" (%s:%d)", __FILE__, __LINE__);                     \
        printf("\n");                                                             \
    } while (0)
#define TAP_DONE() (printf("1..%d\n", tap_n), tap_failed ? 1 : 0)

/* TAP_ASAN: 1 in an AddressSanitizer build (gcc defines __SANITIZE_ADDRESS__,
 * clang answers __has_feature), else undefined. */
#if defined(__SANITIZE_ADDRESS__)
#define TAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAP_ASAN 1
#endif
#endif
#endif
