/* protect.c — the keys and the AES-256-GCM of payload protection (see
 * protect.h); the masker is protect_mask.c.
 *
 * The key file's format and its loader are the control key's (ctlsign.h),
 * so a deployment has one way to write and rotate a key; the protection
 * key is a different file (a reader of the lanes need not be able to sign
 * control records). Keys are derived with HMAC-SHA256 so that one file key
 * never serves two purposes directly. The cipher is OpenSSL's EVP
 * interface; the AAD is the fixed text "errgate-protect-v1", so a value
 * encrypted for a lane does not pass for another format's. */
#include "protect.h"

#include "ctlsign.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char AAD[] = "errgate-protect-v1";

static const char *const mode_names[EG_PROT__N] = {"none", "mask", "encrypt", "pointer"};

const char *eg_prot_mode_name(eg_prot_mode m) { return m >= 0 && m < EG_PROT__N ? mode_names[m] : "none"; }

int eg_prot_mode_parse(const char *s) {
    for (int i = 0; s && i < EG_PROT__N; i++)
        if (!strcmp(s, mode_names[i])) return i;
    return -1;
}

void eg_prot_keys_derive(eg_prot_keys *k, const unsigned char *const *keys, const size_t *lens, int n) {
    memset(k, 0, sizeof *k);
    for (int i = 0; i < n && i < EG_PROT_KEYS; i++) {
        unsigned char id[32];
        eg_hmac_sha256(keys[i], lens[i], "errgate-protect-enc-v1", 22, k->enc[i]);
        eg_hmac_sha256(keys[i], lens[i], "errgate-protect-mask-v1", 23, k->mac[i]);
        eg_hmac_sha256(keys[i], lens[i], "errgate-protect-kid-v1", 22, id);
        for (int b = 0; b < EG_PROT_KID_LEN / 2; b++) snprintf(k->kid[i] + 2 * b, 3, "%02x", id[b]);
        k->n++;
    }
}

int eg_prot_keys_load(const char *path, eg_prot_keys *k, char *err, size_t errlen) {
    eg_ctlkey *ck = calloc(1, sizeof *ck);
    if (!ck) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = eg_ctlsign_load(path, ck, err, errlen);
    if (rc == 0) {
        const unsigned char *keys[EG_PROT_KEYS];
        size_t lens[EG_PROT_KEYS];
        int n = 0;
        keys[n] = ck->k;
        lens[n++] = ck->n;
        size_t off = ck->n;
        for (int i = 0; i < ck->naccept && n < EG_PROT_KEYS; i++) {
            keys[n] = ck->k + off;
            lens[n++] = ck->accept[i];
            off += ck->accept[i];
        }
        eg_prot_keys_derive(k, keys, lens, n);
    }
    memset(ck, 0, sizeof *ck);
    free(ck);
    return rc;
}

int eg_prot_encrypt(const eg_prot_keys *keys, const void *in, size_t n, unsigned char **out, size_t *outlen,
                    char hdr[EG_PROT_HDR_MAX]) {
    *out = NULL;
    *outlen = 0;
    if (!keys || keys->n == 0 || n > (size_t)0x7fffffff - EG_PROT_NONCE - EG_PROT_TAG) return -1;
    unsigned char *o = malloc(n + EG_PROT_NONCE + EG_PROT_TAG);
    if (!o) return -1;
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0,
        ok = x && RAND_bytes(o, EG_PROT_NONCE) == 1 &&
             EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, EG_PROT_NONCE, NULL) == 1 &&
             EVP_EncryptInit_ex(x, NULL, NULL, keys->enc[0], o) == 1 &&
             EVP_EncryptUpdate(x, NULL, &len, (const unsigned char *)AAD, sizeof AAD - 1) == 1;
    if (ok && n) ok = EVP_EncryptUpdate(x, o + EG_PROT_NONCE, &len, in, (int)n) == 1;
    else len = 0;
    ok = ok && EVP_EncryptFinal_ex(x, o + EG_PROT_NONCE + len, &fin) == 1 &&
         EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, EG_PROT_TAG, o + EG_PROT_NONCE + n) == 1;
    EVP_CIPHER_CTX_free(x);
    if (!ok || (size_t)len + (size_t)fin != n) {
        free(o);
        return -1;
    }
    snprintf(hdr, EG_PROT_HDR_MAX, "encrypt;v1;kid=%s", keys->kid[0]);
    *out = o;
    *outlen = n + EG_PROT_NONCE + EG_PROT_TAG;
    return 0;
}

int eg_prot_header_mode(const void *hdr, size_t hlen) {
    if (!hdr) return EG_PROT_NONE;
    const char *h = hdr;
    static const struct {
        const char *w;
        int m;
    } words[] = {{"mask", EG_PROT_MASK}, {"encrypt", EG_PROT_ENCRYPT}, {"pointer", EG_PROT_POINTER}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t l = strlen(words[i].w);
        if (hlen >= l && !memcmp(h, words[i].w, l) && (hlen == l || h[l] == ';')) return words[i].m;
    }
    return -1;
}

int eg_prot_decrypt(const eg_prot_keys *keys, const void *hdr, size_t hlen, const void *in, size_t n,
                    unsigned char **out, size_t *outlen, char *err, size_t errlen) {
    *out = NULL;
    *outlen = 0;
    const char *h = hdr;
    /* "encrypt;v1;kid=" then the id, then optionally ";..." */
    static const char pre[] = "encrypt;v1;kid=";
    if (!h || hlen < sizeof pre - 1 + EG_PROT_KID_LEN || memcmp(h, pre, sizeof pre - 1) ||
        (hlen > sizeof pre - 1 + EG_PROT_KID_LEN && h[sizeof pre - 1 + EG_PROT_KID_LEN] != ';')) {
        snprintf(err, errlen, "malformed %s header (expected encrypt;v1;kid=<8 hex>)", EG_H_PROTECT);
        return -1;
    }
    char kid[EG_PROT_KID_LEN + 1];
    memcpy(kid, h + sizeof pre - 1, EG_PROT_KID_LEN);
    kid[EG_PROT_KID_LEN] = 0;
    for (int i = 0; i < EG_PROT_KID_LEN; i++)
        if (!strchr("0123456789abcdef", kid[i]) || !kid[i]) {
            snprintf(err, errlen, "malformed %s header (expected encrypt;v1;kid=<8 hex>)", EG_H_PROTECT);
            return -1;
        }
    if (!keys || keys->n == 0) {
        snprintf(err, errlen, "encrypted with key %s and no protection key file was given (--protect-key-file)", kid);
        return -1;
    }
    int k = -1;
    for (int i = 0; i < keys->n; i++)
        if (!strcmp(keys->kid[i], kid)) k = i;
    if (k < 0) {
        snprintf(err, errlen, "encrypted with key %s, which is not in the protection key file", kid);
        return -1;
    }
    if (n < EG_PROT_NONCE + EG_PROT_TAG || n - EG_PROT_NONCE - EG_PROT_TAG > 0x7fffffff) {
        snprintf(err, errlen, "encrypted value of %zu bytes is too short to hold a nonce and a tag", n);
        return -1;
    }
    const unsigned char *v = in;
    size_t clen = n - EG_PROT_NONCE - EG_PROT_TAG;
    unsigned char *o = malloc(clen ? clen : 1);
    if (!o) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    unsigned char tag[EG_PROT_TAG];
    memcpy(tag, v + EG_PROT_NONCE + clen, EG_PROT_TAG);
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int len = 0, fin = 0,
        ok = x && EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
             EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, EG_PROT_NONCE, NULL) == 1 &&
             EVP_DecryptInit_ex(x, NULL, NULL, keys->enc[k], v) == 1 &&
             EVP_DecryptUpdate(x, NULL, &len, (const unsigned char *)AAD, sizeof AAD - 1) == 1;
    if (ok && clen) ok = EVP_DecryptUpdate(x, o, &len, v + EG_PROT_NONCE, (int)clen) == 1;
    else len = 0;
    ok = ok && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, EG_PROT_TAG, tag) == 1 &&
         EVP_DecryptFinal_ex(x, o + len, &fin) == 1;
    EVP_CIPHER_CTX_free(x);
    if (!ok) {
        free(o);
        snprintf(err, errlen, "decryption with key %s failed: the value was changed or encrypted with another key",
                 kid);
        return -1;
    }
    *out = o;
    *outlen = clen;
    return 0;
}
