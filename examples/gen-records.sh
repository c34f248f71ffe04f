#!/usr/bin/env bash
# gen-records.sh N [SPEC] — print N records for the flaky handler as
# "key<TAB>json" lines (kcat -K '\t' input). SPEC is "mode:weight ..." (default:
# a realistic mix); record ids are r1..rN; keys repeat (k0..k996) so that key
# ordering matters. Deterministic: the same N and SPEC give the same records.
n=${1:?usage: gen-records.sh N [SPEC]}
spec=${2:-"ok:70 transient-1:6 transient-2:4 permanent:6 explicit-permanent-E42:1 semantic:4 json-semantic-bad_state:2 duplicate:5 ratelimit-0:2"}
awk -v n="$n" -v spec="$spec" 'BEGIN {
  srand(12345); m = split(spec, parts, " "); total = 0
  for (i = 1; i <= m; i++) { split(parts[i], kv, ":"); mode[i] = kv[1]; total += kv[2]; cum[i] = total }
  for (r = 1; r <= n; r++) {
    x = rand() * total; for (i = 1; i <= m && x >= cum[i]; i++) ;
    printf "k%d\t{\"id\":\"r%d\",\"mode\":\"%s\"}\n", r % 997, r, mode[i]
  }
}'
