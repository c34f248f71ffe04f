#!/usr/bin/env bash
# test_folders.sh — src/'s folders depend one way: main.c -> gateway/,
# commands/, broker/ -> lib/. lib/ calls nothing outside lib/, and the three
# programs never call each other. Read from the built objects: for each
# object, the eg_* symbols it uses and the folder of the object that defines
# them; and from the sources: every quoted #include names a header of the
# file's own folder or of lib/ (the Makefile compiles with -Isrc/lib only, so
# such an include would not compile either; this says which one it is).
source "$(dirname "$0")/lib.sh"
OBJ="$ROOT/$BUILD/obj"
FOLDERS=(lib gateway commands broker)

command -v nm >/dev/null || die "nm is missing (Debian package binutils)"
[ -f "$OBJ/main.o" ] || die "$OBJ/main.o is missing (make first)"
# allowed FROM TO: 0 or 1
allowed() {
  [ "$1" = "$2" ] && return 0
  case "$1:$2" in
    main:*) return 0 ;;
    gateway:lib | commands:lib | broker:lib) return 0 ;;
  esac
  return 1
}
folder_of() { local d=${1%/*}; [ "$d" = "$1" ] && echo main || echo "$d"; }

: >"$T/defs"
n=0
for o in "$OBJ"/main.o "$OBJ"/*/*.o; do
  rel=${o#"$OBJ"/}; rel=${rel%.o}
  [ -f "$ROOT/src/$rel.c" ] || continue # an object of a file since moved
  n=$((n + 1))
  nm --defined-only "$o" | awk -v f="$rel" '$2 ~ /^[TDRB]$/ && $3 ~ /^eg_/ {print $3, f}' >>"$T/defs"
done
sort -o "$T/defs" "$T/defs"
check "objects read: $n, each src/ folder has some" [ "$n" -ge 60 ]
for f in "${FOLDERS[@]}"; do
  check "src/$f/ defines eg_* functions ($(grep -c " $f/" "$T/defs"))" grep -q " $f/" "$T/defs"
done

bad=""
for o in "$OBJ"/main.o "$OBJ"/*/*.o; do
  rel=${o#"$OBJ"/}; rel=${rel%.o}
  [ -f "$ROOT/src/$rel.c" ] || continue
  from=$(folder_of "$rel")
  while read -r sym def; do
    to=$(folder_of "$def")
    allowed "$from" "$to" || bad="$bad $rel.c->$def.c($sym)"
  done < <(nm -u "$o" | awk '$2 ~ /^eg_/ {print $2}' | sort -u | join - "$T/defs")
done
check "no call crosses the folders the wrong way (main -> gateway|commands|broker -> lib):${bad:- none}" [ -z "$bad" ]

# the same rule for the quoted includes
bad=""
for c in "$ROOT"/src/*.c "$ROOT"/src/*/*.[ch]; do
  rel=${c#"$ROOT"/src/}
  from=$(folder_of "$rel")
  while read -r h; do
    [ "$from" != main ] && [ -f "$ROOT/src/$from/$h" ] && continue
    [ -f "$ROOT/src/lib/$h" ] && continue
    [ "$from" = main ] && ls "$ROOT"/src/*/"$h" >/dev/null 2>&1 && continue
    [ -f "$ROOT/$BUILD/gen/$h" ] && continue # generated (redact_words.h)
    bad="$bad $rel:$h"
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$c")
done
check "every quoted include is of the file's own folder or of lib/:${bad:- none}" [ -z "$bad" ]
exit $FAILED
