/* test_tracker.c — the contiguous-commit tracker against a reference model.
 *
 * Table cases pin the rules (empty tracker, gaps, out-of-order finishes,
 * rejected offsets); a randomized run finishes records in random order and
 * compares the commit point after every step with a brute-force model. */
#include "tracker.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void table_cases(void) {
    eg_tracker t;
    uint64_t s[8];
    eg_tracker_init(&t, 4);
    CHECK(eg_tracker_commit_point(&t) == -1, "empty tracker has no commit point");

    CHECK(eg_tracker_add(&t, 10, &s[0]) == 0, "add 10");
    CHECK(eg_tracker_add(&t, 11, &s[1]) == 0, "add 11");
    CHECK(eg_tracker_add(&t, 15, &s[2]) == 0, "add 15 after a gap");
    CHECK(eg_tracker_commit_point(&t) == 10, "nothing finished: commit point is the oldest (10)");
    CHECK(eg_tracker_add(&t, 15, &s[3]) == -1, "re-adding an offset is refused");
    CHECK(eg_tracker_add(&t, 3, &s[3]) == -1, "adding an older offset is refused");

    CHECK(eg_tracker_finish(&t, s[1]) == 0, "finish 11 first");
    CHECK(eg_tracker_commit_point(&t) == 10, "11 finished before 10: still 10");
    CHECK(eg_tracker_finish(&t, s[1]) == -1, "finishing twice is refused");
    CHECK(eg_tracker_finish(&t, s[0]) == 0, "finish 10");
    CHECK(eg_tracker_commit_point(&t) == 15, "prefix 10,11 done: commit point jumps the gap to 15");
    CHECK(eg_tracker_finish(&t, s[0]) == -1, "finishing an advanced-over seq is refused");
    CHECK(eg_tracker_finish(&t, s[2]) == 0, "finish 15");
    CHECK(eg_tracker_commit_point(&t) == 16, "all done: one past the last added");
    CHECK(eg_tracker_pending(&t) == 0, "nothing pending");
    CHECK(eg_tracker_finish(&t, 99) == -1, "unknown seq is refused");
    eg_tracker_free(&t);
}

static void random_model(void) {
    enum { N = 5000 };
    eg_tracker t;
    eg_tracker_init(&t, 16); /* small on purpose: forces growth */
    int64_t *offs = malloc(N * sizeof *offs);
    uint64_t *seqs = malloc(N * sizeof *seqs);
    char *done = calloc(N, 1);
    int *order = malloc(N * sizeof *order);
    srand(42);
    int64_t o = 100;
    int added = 0, bad = 0;
    for (int i = 0; i < N; i++) {
        o += 1 + (rand() % 3 == 0 ? rand() % 5 : 0);
        offs[i] = o;
        if (eg_tracker_add(&t, o, &seqs[i]) != 0) bad++;
        added++;
        order[i] = i;
    }
    CHECK(bad == 0, "5000 increasing offsets with gaps all added");
    for (int i = N - 1; i > 0; i--) { /* shuffle, but keep a local bias */
        int j = i - rand() % (i < 64 ? i + 1 : 64);
        int tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    int mismatches = 0;
    for (int k = 0; k < N; k++) {
        int i = order[k];
        if (eg_tracker_finish(&t, seqs[i]) != 0) mismatches++;
        done[i] = 1;
        int first = 0;
        while (first < N && done[first]) first++;
        int64_t want = first < N ? offs[first] : offs[N - 1] + 1;
        if (eg_tracker_commit_point(&t) != want) mismatches++;
    }
    CHECK(mismatches == 0, "random finish order: commit point equals the model after every step (%d mismatches)",
          mismatches);
    CHECK(t.cap > 16 && eg_tracker_pending(&t) == 0, "ring grew and drained");
    free(offs);
    free(seqs);
    free(done);
    free(order);
    eg_tracker_free(&t);
}

int main(void) {
    table_cases();
    random_model();
    return TAP_DONE();
}
