/* test_sha256.c — SHA-256 against the FIPS 180-4 / NIST example vectors,
 * including inputs that straddle the 56- and 64-byte padding boundaries and
 * a streamed million 'a's. */
#include "sha256.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static void hex(const unsigned char d[32], char out[65]) {
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void vec(const char *msg, const char *want, const char *desc) {
    eg_sha256 s;
    unsigned char d[32];
    char got[65];
    eg_sha256_init(&s);
    eg_sha256_update(&s, msg, strlen(msg));
    eg_sha256_final(&s, d);
    hex(d, got);
    CHECK(strcmp(got, want) == 0, "%s", desc);
}

int main(void) {
    vec("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty input");
    vec("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "\"abc\"");
    vec("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", "448-bit message (two blocks)");
    vec("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrs"
        "tu",
        "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1", "896-bit message");
    eg_sha256 s;
    unsigned char d[32];
    char got[65];
    eg_sha256_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    for (int i = 0; i < 1000; i++) eg_sha256_update(&s, a, sizeof a);
    eg_sha256_final(&s, d);
    hex(d, got);
    CHECK(strcmp(got, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
          "one million 'a' streamed in 1000-byte pieces");
    FILE *f = fopen("/tmp/errgate-sha-test.txt", "wb");
    fputs("abc", f);
    fclose(f);
    CHECK(eg_sha256_file_hex("/tmp/errgate-sha-test.txt", got) == 0 &&
              strcmp(got, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0,
          "file digest as hex");
    remove("/tmp/errgate-sha-test.txt");
    CHECK(eg_sha256_file_hex("/nonexistent/file", got) == -1, "unreadable file is an error");
    return TAP_DONE();
}
