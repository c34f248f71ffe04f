/* test_ctlsign.c — HMAC-SHA256 against RFC 4231's test cases 1, 2, 3, 4,
 * 6 and 7 (5 is a truncated MAC), and the control-record signature: a
 * record signed is verified; a changed byte of its value, of its key, of
 * its kind, a key/value boundary moved, another key, no signature and a
 * malformed one are each refused with their reason. Key rings (rotation):
 * the first key signs, every key verifies, a key outside the ring does
 * not; bad rings (a short key, five keys, no key) are refused by name; a
 * plain key file that merely contains newlines stays one key. */
#include "ctlsign.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes text to a fresh temporary file and loads it as a key file.
 * Returns eg_ctlsign_load's result, err filled on -1. */
static int load_text(const char *text, eg_ctlkey *key, char *err, size_t errlen) {
    char path[] = "/tmp/eg-ctlkey-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -2;
    size_t n = strlen(text);
    int wrote = write(fd, text, n) == (ssize_t)n;
    close(fd);
    int rc = wrote ? eg_ctlsign_load(path, key, err, errlen) : -2;
    unlink(path);
    return rc;
}

/* 1 when sig of (k, v) made with signer verifies under key. */
static int accepts(const eg_ctlkey *key, const eg_ctlkey *signer, const char *k, const char *v) {
    char sig[EG_CTLSIGN_LEN + 1];
    const char *why = NULL;
    eg_ctlsign_sign(signer, "state", k, strlen(k), v, strlen(v), sig);
    return eg_ctlsign_verify(key, "state", k, strlen(k), v, strlen(v), sig, strlen(sig), &why) == 0;
}

static void test_rings(void) {
    char err[256] = "";
    eg_ctlkey oldk, newk, ring, ring2, bad;
    const char *k = "grp/item", *v = "{\"status\":\"approved\"}";
    CHECK(load_text("old-key-0123456789abcdef\n", &oldk, err, sizeof err) == 0 && oldk.naccept == 0 && oldk.n == 24,
          "a plain key file: one key, its final newline dropped");
    CHECK(load_text("new-key-0123456789abcdef", &newk, err, sizeof err) == 0, "a second key");
    CHECK(load_text("errgate-keyring-v1\n# phase 1: sign old, accept new\nold-key-0123456789abcdef\n\n"
                    "new-key-0123456789abcdef\r\n",
                    &ring, err, sizeof err) == 0 &&
              ring.n == 24 && ring.naccept == 1 && ring.accept[0] == 24,
          "a ring of two keys, with a comment, a blank line and a CRLF (%s)", err);
    char sig_ring[EG_CTLSIGN_LEN + 1], sig_old[EG_CTLSIGN_LEN + 1];
    eg_ctlsign_sign(&ring, "audit", k, strlen(k), v, strlen(v), sig_ring);
    eg_ctlsign_sign(&oldk, "audit", k, strlen(k), v, strlen(v), sig_old);
    CHECK(!strcmp(sig_ring, sig_old), "the ring signs with its first key");
    CHECK(accepts(&ring, &oldk, k, v) && accepts(&ring, &newk, k, v), "the ring accepts both of its keys");
    CHECK(accepts(&newk, &ring, k, v) == 0, "the new key alone refuses what the ring (old first) signed");
    CHECK(load_text("errgate-keyring-v1\nnew-key-0123456789abcdef\nold-key-0123456789abcdef\n", &ring2, err,
                    sizeof err) == 0 &&
              accepts(&newk, &ring2, k, v) && accepts(&oldk, &ring2, k, v) == 0,
          "phase 2: a ring with the new key first signs with it");
    eg_ctlkey third;
    CHECK(load_text("third-key-0123456789abcdef", &third, err, sizeof err) == 0 && accepts(&ring, &third, k, v) == 0,
          "a key outside the ring is refused");
    CHECK(load_text("errgate-keyring-v1\nold-key-0123456789abcdef\nshort\n", &bad, err, sizeof err) == -1 &&
              strstr(err, "shorter than 16") && bad.n == 0,
          "a ring with a short key is refused (%s)", err);
    CHECK(load_text("errgate-keyring-v1\naaaaaaaaaaaaaaaa1\naaaaaaaaaaaaaaaa2\naaaaaaaaaaaaaaaa3\n"
                    "aaaaaaaaaaaaaaaa4\naaaaaaaaaaaaaaaa5\n",
                    &bad, err, sizeof err) == -1 &&
              strstr(err, "more than 4"),
          "a ring of five keys is refused (%s)", err);
    CHECK(load_text("errgate-keyring-v1\n# nothing\n\n                \n", &bad, err, sizeof err) == -1 &&
              strstr(err, "no key"),
          "a ring without a key is refused (%s)", err);
    CHECK(load_text("not-a-ring-0123456789\nsecond line of one key", &bad, err, sizeof err) == 0 && bad.naccept == 0 &&
              bad.n == 44,
          "a plain key with a newline inside stays one key");
}

/* The HMAC of msg with key as 64 hex digits into out. */
static void hmac_hex(const void *key, size_t klen, const void *msg, size_t n, char out[65]) {
    unsigned char mac[32];
    eg_hmac_sha256(key, klen, msg, n, mac);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", mac[i]);
}

int main(void) {
    char got[65];
    unsigned char k20[20], kaa[131], d50[50], d50b[50], k25[25];
    memset(k20, 0x0b, sizeof k20);
    hmac_hex(k20, 20, "Hi There", 8, got);
    CHECK(!strcmp(got, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"), "RFC 4231 case 1 (%s)",
          got);
    hmac_hex("Jefe", 4, "what do ya want for nothing?", 28, got);
    CHECK(!strcmp(got, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"), "RFC 4231 case 2 (%s)",
          got);
    memset(kaa, 0xaa, sizeof kaa);
    memset(d50, 0xdd, sizeof d50);
    hmac_hex(kaa, 20, d50, 50, got);
    CHECK(!strcmp(got, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"), "RFC 4231 case 3 (%s)",
          got);
    for (int i = 0; i < 25; i++) k25[i] = (unsigned char)(i + 1);
    memset(d50b, 0xcd, sizeof d50b);
    hmac_hex(k25, 25, d50b, 50, got);
    CHECK(!strcmp(got, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"), "RFC 4231 case 4 (%s)",
          got);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac_hex(kaa, 131, m6, strlen(m6), got);
    CHECK(!strcmp(got, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
          "RFC 4231 case 6: a key longer than the block (%s)", got);
    const char *m7 = "This is a test using a larger than block-size key and a larger than block-size data. The key "
                     "needs to be hashed before being used by the HMAC algorithm.";
    hmac_hex(kaa, 131, m7, strlen(m7), got);
    CHECK(!strcmp(got, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
          "RFC 4231 case 7: key and data longer than the block (%s)", got);

    eg_ctlkey key, other;
    memset(&key, 0, sizeof key);
    memcpy(key.k, "0123456789abcdef0123", 20);
    key.n = 20;
    other = key;
    other.k[0] = 'X';
    const char *k = "grp/slow", *v = "{\"group\":\"grp\",\"name\":\"slow\"}";
    char sig[EG_CTLSIGN_LEN + 1];
    const char *why = "";
    eg_ctlsign_sign(&key, "audit", k, strlen(k), v, strlen(v), sig);
    CHECK(strlen(sig) == EG_CTLSIGN_LEN && !strncmp(sig, "v1:", 3), "the signature is v1: and 64 hex (%s)", sig);
    CHECK(eg_ctlsign_verify(&key, "audit", k, strlen(k), v, strlen(v), sig, strlen(sig), &why) == 0,
          "a signed record verifies");
    char v2[64];
    snprintf(v2, sizeof v2, "%s", v);
    v2[10] ^= 1;
    CHECK(eg_ctlsign_verify(&key, "audit", k, strlen(k), v2, strlen(v2), sig, strlen(sig), &why) == -1 &&
              !strcmp(why, "bad_signature"),
          "a changed byte of the value: bad_signature");
    CHECK(eg_ctlsign_verify(&key, "audit", "grp/slox", 8, v, strlen(v), sig, strlen(sig), &why) == -1 &&
              !strcmp(why, "bad_signature"),
          "a changed key: bad_signature");
    CHECK(eg_ctlsign_verify(&key, "state", k, strlen(k), v, strlen(v), sig, strlen(sig), &why) == -1,
          "another topic kind: refused (an audit record's signature is no state record's)");
    CHECK(eg_ctlsign_verify(&key, "audit", "grp/slow{", 9, v + 1, strlen(v) - 1, sig, strlen(sig), &why) == -1,
          "the key/value boundary moved: refused");
    CHECK(eg_ctlsign_verify(&other, "audit", k, strlen(k), v, strlen(v), sig, strlen(sig), &why) == -1 &&
              !strcmp(why, "bad_signature"),
          "another deployment's key: bad_signature");
    CHECK(eg_ctlsign_verify(&key, "audit", k, strlen(k), v, strlen(v), NULL, 0, &why) == -1 && !strcmp(why, "unsigned"),
          "no signature: unsigned");
    CHECK(eg_ctlsign_verify(&key, "audit", k, strlen(k), v, strlen(v), "v1:abc", 6, &why) == -1 &&
              !strcmp(why, "malformed"),
          "a short one: malformed");
    char up[EG_CTLSIGN_LEN + 1];
    memcpy(up, sig, sizeof up);
    up[5] = up[5] >= 'a' ? (char)(up[5] - 32) : 'G';
    CHECK(eg_ctlsign_verify(&key, "audit", k, strlen(k), v, strlen(v), up, strlen(up), &why) == -1 &&
              !strcmp(why, "malformed"),
          "a non-lowercase-hex digit: malformed");
    test_rings();
    return TAP_DONE();
}
