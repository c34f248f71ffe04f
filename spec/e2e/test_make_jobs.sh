#!/usr/bin/env bash
# test_make_jobs.sh — under `make -j` nothing compiles before the dependency
# step has finished. The dependency step is made slow and leaves a mark when
# done; the compiler is a wrapper that refuses to run before that mark.
#   1. a fresh machine: pkg-config does not find the packages yet, so
#      check-deps installs them (`make deps`) while `make -j4` wants objects;
#   2. `make -j4 deps OBJECTS` (what `make test` does: test: deps all): the
#      objects wait for `deps`.
source "$(dirname "$0")/lib.sh"

B="$T/build"
MARK="$B/deps-done"
mkdir -p "$T/bin" "$B"
cat >"$T/bin/cc" <<SH
#!/bin/sh
[ -e "$MARK" ] || { echo "cc ran before the dependency step finished" >&2; exit 1; }
exec /usr/bin/cc "\$@"
SH
# pkg-config --exists: the packages appear only after 2 s (then the mark);
# every other call is the real pkg-config's
cat >"$T/bin/pkg-config" <<SH
#!/bin/sh
if [ "\$1" = --exists ] && [ ! -e "$MARK" ]; then sleep 2; touch "$MARK"; exit 1; fi
exec /usr/bin/pkg-config "\$@"
SH
chmod +x "$T/bin/cc" "$T/bin/pkg-config"
OBJS=("$B/obj/lib/util.o" "$B/obj/lib/sha256.o" "$B/obj/gateway/keyset.o")

# goals `check-deps OBJECTS`, as `all: check-deps $(BUILD)/errgate ...` once had
# them; DEB_PKGS=make keeps the real `make deps` that check-deps then runs from
# installing anything
PATH="$T/bin:$PATH" make -C "$ROOT" -j4 BUILD="$B" CC="$T/bin/cc" DEB_PKGS=make check-deps "${OBJS[@]}" \
  >"$T/fresh.out" 2>"$T/fresh.err"
rc=$?
check "fresh machine: make -j4 compiles only after the dependency step (exit $rc)" \
  bash -c '[ "$1" = 0 ] && ! grep -q "before the dependency step" "$2"' _ "$rc" "$T/fresh.err"

rm -rf "$B" && mkdir -p "$B"
# a slow `deps` (the real one is apt-get): overrides the Makefile's recipe
cat >"$T/slowdeps.mk" <<MK
deps:
	@sleep 2; touch "$MARK"
MK
make -C "$ROOT" -f Makefile -f "$T/slowdeps.mk" -j4 BUILD="$B" CC="$T/bin/cc" deps "${OBJS[@]}" \
  >"$T/deps.out" 2>"$T/deps.err"
rc=$?
check "make -j4 deps OBJECTS: the objects wait for deps (exit $rc)" \
  bash -c '[ "$1" = 0 ] && ! grep -q "before the dependency step" "$2"' _ "$rc" "$T/deps.err"
check "and they were compiled" bash -c 'for o; do [ -s "$o" ] || exit 1; done' _ "${OBJS[@]}"

echo "1..$TESTNO"
