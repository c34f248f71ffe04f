#!/usr/bin/env bash
# test_cli.sh — the command-line conventions, walked over every command and
# subcommand: -h/--help and `errgate help COMMAND [SUB]` print a usage on
# stdout and exit 0; a bad option exits 2 with exactly one line on stderr
# naming it, and a long option written with one dash (-from-topic, as Go
# tools spell them) is answered with its spelling (did you mean
# --from-topic?); ctl's options are taken after the subcommand too;
# `errgate --version` names errgate and its libraries. The
# commands are read from `errgate --help`, so a new command is walked too.
source "$(dirname "$0")/lib.sh"

declare -A SUBS=([policy]="check test" [dlq]="stats tail resolve approve watch" [spill]="ls drain")

out=$("$EG" --help 2>"$T/help.err"); rc=$?
check "errgate --help: usage on stdout, exit 0 (exit $rc)" exits_with "$rc" 0 '^usage: errgate COMMAND' "$out"
CMDS=$(sed -n 's/^  \([a-z]*\) .*/\1/p' <<<"$out")
check "errgate --help lists the commands ($(echo $CMDS))" [ "$(wc -w <<<"$CMDS")" -ge 7 ]
out2=$("$EG" -h); check "errgate -h is errgate --help" [ "$out" = "$out2" ]
out2=$("$EG" help); check "errgate help is errgate --help" [ "$out" = "$out2" ]

# help_ok LABEL ARGS...: exit 0, a usage on stdout, nothing on stderr
help_ok() {
  local label=$1; shift
  "$EG" "$@" >"$T/h.out" 2>"$T/h.err"; local rc=$?
  check "$label: exit 0, usage on stdout, stderr empty (exit $rc)" \
    bash -c '[ "$1" = 0 ] && grep -q "^usage: errgate" "$2" && [ ! -s "$3" ]' _ "$rc" "$T/h.out" "$T/h.err"
}
# bad_ok LABEL ARGS...: exit 2, stdout empty, one line on stderr naming the option
bad_ok() {
  local label=$1; shift
  "$EG" "$@" >"$T/b.out" 2>"$T/b.err"; local rc=$?
  check "$label: exit 2, one line on stderr naming --no-such-option (exit $rc: $(head -1 "$T/b.err"))" \
    bash -c '[ "$1" = 2 ] && [ ! -s "$2" ] && [ "$(wc -l <"$3")" = 1 ] && grep -q "^errgate .*--no-such-option" "$3"' \
    _ "$rc" "$T/b.out" "$T/b.err"
}
# dash_ok LABEL ARGS...: exit 2, one line on stderr naming -no-such-option
# and its two-dash spelling
dash_ok() {
  local label=$1; shift
  "$EG" "$@" >"$T/d.out" 2>"$T/d.err"; local rc=$?
  check "$label: exit 2, one line: did you mean --no-such-option? (exit $rc: $(head -1 "$T/d.err"))" \
    bash -c '[ "$1" = 2 ] && [ ! -s "$2" ] && [ "$(wc -l <"$3")" = 1 ] &&
             grep -q -- "-no-such-option.*; did you mean --no-such-option?" "$3"' _ "$rc" "$T/d.out" "$T/d.err"
}

for c in $CMDS; do
  help_ok "$c --help" "$c" --help
  help_ok "$c -h" "$c" -h
  "$EG" "$c" --help >"$T/a.out" 2>/dev/null; "$EG" help "$c" >"$T/b.out" 2>/dev/null
  check "errgate help $c is $c --help" cmp -s "$T/a.out" "$T/b.out"
  bad_ok "$c --no-such-option" "$c" --no-such-option
  dash_ok "$c -no-such-option" "$c" -no-such-option
  for s in ${SUBS[$c]:-}; do
    help_ok "$c $s --help" "$c" "$s" --help
    help_ok "$c $s ARG -h" "$c" "$s" ARG -h
    help_ok "help $c $s" help "$c" "$s"
    bad_ok "$c $s --no-such-option" "$c" "$s" --no-such-option
    dash_ok "$c $s ARG -no-such-option" "$c" "$s" ARG -no-such-option
  done
done
for c in "${!SUBS[@]}"; do check "$c is among the commands walked" grep -qw "$c" <<<"$CMDS"; done

# usage errors other than options: one line each, exit 2
one_line() {
  local label=$1 want=$2; shift 2
  "$EG" "$@" >/dev/null 2>"$T/u.err"; local rc=$?
  check "$label: exit 2, one line: $want (exit $rc)" \
    bash -c '[ "$1" = 2 ] && [ "$(wc -l <"$2")" = 1 ] && grep -q -- "$3" "$2"' _ "$rc" "$T/u.err" "$want"
}
one_line "no command" "missing command"
one_line "an unknown command" "unknown command 'frobnicate'" frobnicate
one_line "help of an unknown command" "unknown command 'frobnicate'" help frobnicate
one_line "run without -c" "missing -c CONFIG" run
one_line "run -c without a value" "-c needs a value" run -c
one_line "an unknown policy subcommand" "unknown sub-command 'frob'" policy frob
one_line "an unknown dlq subcommand" "unknown subcommand 'frob'" dlq frob
one_line "dlq stats without a lane" "LANE is required" dlq stats -b 127.0.0.1:1
one_line "offsets without a group" "missing -g GROUP" offsets -b 127.0.0.1:1 t
one_line "spill ls without a directory" "missing DIR" spill ls
one_line "the seed's spelling of policy test --from-topic" "unknown option -from-topic; did you mean --from-topic?" \
  policy test "$ROOT/policies/default.lua" -from-topic src.dlq
one_line "the seed's spelling of --version" "unknown option '-version'; did you mean --version?" -version
one_line "a short option stays as it is" "unknown option '-x' (see" run -x
one_line "a negative number is no option" "unknown option '-1' (see" offsets -b 127.0.0.1:1 -1

# ctl's own options after the subcommand: --admin and --json are taken, so
# the request goes to the address given last (nothing listens there)
"$EG" ctl override list --json --admin http://127.0.0.1:1 >/dev/null 2>"$T/c.err"; rc=$?
check "ctl override list --json --admin URL: the options after the subcommand are read (exit $rc: $(head -1 "$T/c.err"))" \
  bash -c '[ "$1" = 1 ] && grep -q "no answer from http://127.0.0.1:1/overrides" "$2"' _ "$rc" "$T/c.err"

out=$("$EG" --version); rc=$?
check "errgate --version: exit 0, errgate's version first (exit $rc)" exits_with "$rc" 0 '^errgate [0-9][0-9.]*$' "$(head -1 <<<"$out")"
for lib in '^librdkafka [0-9]' '^LuaJIT [0-9]' '^libevent [0-9]'; do
  check "--version names the linked library: $lib" grep -q "$lib" <<<"$out"
done
# the product binary runs on jemalloc (Makefile, MALLOC); the sanitizer build on ASan's malloc
if [ "${SAN:-}" = 1 ]; then want_malloc='^malloc asan$'; else want_malloc='^malloc jemalloc [0-9]'; fi
check "--version names the allocator in use: $want_malloc" grep -q "$want_malloc" <<<"$out"
v=$(sed -n 's/^errgate //p' <<<"$out")
check "the man page is the same version as the binary ($v)" grep -q "^\.TH ERRGATE 1 .*\"errgate $v\"" "$ROOT/man/errgate.1"
check "--version's librdkafka is the one linked ($(sed -n 's/^librdkafka //p' <<<"$out"))" \
  [ "$(sed -n 's/^librdkafka //p' <<<"$out")" = "$(pkg-config --modversion rdkafka)" ]

echo "1..$TESTNO"
