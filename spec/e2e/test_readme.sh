#!/usr/bin/env bash
# test_readme.sh — the README stays a front door that tells the truth.
#
# Read from README.md as it stands: at most 400 lines; its first two command
# lines (in code blocks) are `make demo` and `make test`, the two commands CI
# and a newcomer run first; every relative link of README.md, spec/README.md
# and bench/README.md leads to a file or folder of the tree; a Lua block that
# follows a link to a .lua file (within 3 lines) is that file, word for word, and the file
# passes `errgate policy check`; each folder line count of the source tour is
# within 25% of `wc -l` today. Then every `errgate ...` line of its code
# blocks is run as written, in a scratch folder holding the README's own
# payments.lua (its URL, policy path and admin port pointed at this run's
# flaky handler, the shipped default policy and a free port), on the
# embedded broker with records of every kind in `payments`: the gateway line
# in the background, the others one by one, each must exit 0.
source "$(dirname "$0")/lib.sh"
README="$ROOT/README.md"

n=$(wc -l <"$README")
check "README.md has at most 400 lines ($n)" [ "$n" -le 400 ]

# the command lines of the fenced code blocks (sh or none), comments cut
awk '/^```/ { inb = !inb; lang = substr($0, 4); next }
     inb && (lang == "sh" || lang == "") { sub(/[[:space:]]+#.*$/, ""); if ($0 !~ /^[[:space:]]*(#|$)/) print }' \
  "$README" >"$T/commands"
first=$(sed -n 1p "$T/commands")
second=$(sed -n 2p "$T/commands")
check "README's first command is 'make demo' ($first)" [ "$first" = "make demo" ]
check "README's second command is 'make test' ($second)" [ "$second" = "make test" ]

# relative links: [text](path) and [text](path#anchor), not URLs or #anchors
bad=""
nlinks=0
for doc in README.md spec/README.md bench/README.md; do
  dir=$(dirname "$ROOT/$doc")
  while read -r link; do
    nlinks=$((nlinks + 1))
    target=${link%%#*}
    [ -e "$dir/$target" ] || bad="$bad $doc->$link"
  done < <(grep -o '](\([^)]*\))' "$ROOT/$doc" | sed 's/^](//; s/)$//' | grep -v -E '^(https?:|mailto:|#)')
done
check "every relative link of README.md, spec/README.md and bench/README.md leads somewhere ($nlinks links):${bad:- all do}" [ -z "$bad" ]

# a ```lua block within 3 lines of a link to a .lua file quotes that file
awk -v T="$T" '
  /^```lua$/ { inb = 1; n++; out = T "/block" n ".lua"; printf "" >out
               print (NR - at <= 3 ? last : "") >(T "/block" n ".src"); next }
  /^```$/ && inb { inb = 0; close(out); next }
  inb { print >>out; next }
  { if (match($0, /\]\([^)]*\.lua\)/)) { last = substr($0, RSTART + 2, RLENGTH - 3); at = NR } }' "$README"
quoted=0
for b in "$T"/block*.lua; do
  [ -e "$b" ] || continue
  src=$(cat "${b%.lua}.src")
  case $src in *.lua) ;; *) continue ;; esac
  quoted=$((quoted + 1))
  check "README's Lua block quoting $src is the file as it is" cmp -s "$b" "$ROOT/$src"
  out=$(cd "$ROOT" && "$EG" policy check "$src" 2>&1); rc=$?
  check "errgate policy check $src: exit 0, examples and lint pass (exit $rc)" exits_with "$rc" 0 '^lint      ok$' "$out"
done
check "README quotes at least one policy file ($quoted)" [ "$quoted" -ge 1 ]

# the source tour's line counts: | `DIR/` | job | N | rows
tour=0
while IFS='|' read -r _ dir _ lines _; do
  dir=$(echo "$dir" | tr -d ' `'); lines=$(echo "$lines" | tr -d ' ,')
  [ -e "$ROOT/$dir" ] || { not_ok "the source tour names $dir, which does not exist"; continue; }
  tour=$((tour + 1))
  now=$(find "$ROOT/$dir" -type f ! -path '*/corpus/*' ! -path '*/__pycache__/*' -exec cat {} + | wc -l)
  check "the source tour's $dir: $lines lines stated, $now now (within 25%)" \
    [ $((now * 4)) -ge $((lines * 3)) -a $((now * 4)) -le $((lines * 5)) ]
done < <(grep -E '^\| `(src|lua|policies|spec|bench|deploy|man|docs|examples)[^`]*` \| .* \| [0-9,]+ \|$' "$README")
check "the source tour has a line per folder ($tour)" [ "$tour" -ge 10 ]

# ---- every errgate command line of the README, run as written ----------------
grep -E '^errgate ' "$T/commands" >"$T/eg_lines"
check "README shows errgate command lines ($(wc -l <"$T/eg_lines"))" [ "$(wc -l <"$T/eg_lines")" -ge 8 ]
# the README's payments.lua: the first ```lua block with `group = "payments"`
cfg=$(grep -l 'group = "payments"' "$T"/block*.lua | head -1)
[ -n "$cfg" ] || die "README has no payments.lua config block"

start_broker --topic payments:4 --topic payments.dlq:4 --topic payments.quarantine:4
start_handler
W="$T/work"
mkdir -p "$W"
sed -e "s|url = \"[^\"]*\"|url = \"$HANDLER_URL\"|" \
  -e "s|policy = \"[^\"]*\"|policy = \"$ROOT/policies/default.lua\"|" \
  -e 's|listen = "[^"]*"|listen = "127.0.0.1:0"|' "$cfg" >"$W/payments.lua"
echo "docs-token-$$" >"$W/admin.token"
cp "$ROOT/policies/default.lua" "$W/candidate.lua"
ln -s "$ROOT/policies" "$W/policies"
ln -s "$ROOT/spec" "$W/spec"
ln -s "$ROOT/examples" "$W/examples"
gen_records 200 | produce payments
export ERRGATE_BOOTSTRAP=$BOOTSTRAP ERRGATE_TOKEN_FILE=$W/admin.token
mkdir -p "$T/bin" && ln -s "$EG" "$T/bin/errgate"
export PATH="$T/bin:$PATH"

runline=$(grep -E '^errgate run ' "$T/eg_lines" | head -1)
check "README shows how to run the gateway ($runline)" [ -n "$runline" ]
(cd "$W" && exec bash -c "exec $runline") >"$T/gw.out" 2>"$T/gw.err" &
GW=$!
PIDS+=($GW)
ERRGATE_ADMIN="http://$(admin_addr gw)"
export ERRGATE_ADMIN
check "the gateway of README's config serves its admin endpoint ($ERRGATE_ADMIN)" [ "$ERRGATE_ADMIN" != "http://" ]
check "it decides every record (lag 0 within 60 s)" wait_drained payments payments 60
check "some records were dead-lettered, for the DLQ commands to read" \
  wait_for 10 bash -c "[ \$(kcat -C -b '$BOOTSTRAP' -t payments.dlq -e -q -f 'x\n' 2>/dev/null | wc -l) -gt 0 ]"

while read -r line; do
  case $line in "errgate run "*) continue ;; esac
  out=$(cd "$W" && bash -c "$line" 2>&1 </dev/null); rc=$?
  check "README's '$line' exits 0 (exit $rc)" [ "$rc" = 0 ]
  [ "$rc" = 0 ] || diag "${out:0:400}"
done <"$T/eg_lines"

stop_gateway "$GW"
check "the gateway stops on SIGTERM with exit 0 ($RC)" [ "$RC" = 0 ]
exit $FAILED
