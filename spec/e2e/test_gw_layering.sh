#!/usr/bin/env bash
# test_gw_layering.sh — the files of `errgate run` call each other one way:
# gw_run.c -> gw_admin.c -> gw_reload.c -> gateway.c -> gw_incident.c ->
# gw_colocate.c -> gw_fence.c -> gw_rungs.c, each calling only files after
# it (gw.h); the partition helpers eg_gw_part_find and eg_gw_part_unref
# (gateway.c) are everyone's. Read from the built objects: for each file,
# the eg_gw_* functions it uses and which file defines them. A call back up
# the chain (e.g. gateway.c calling gw_admin.c while gw_admin.c calls
# gateway.c, or the fence calling into the record path) is a cycle and
# fails.
source "$(dirname "$0")/lib.sh"
OBJ="$ROOT/$BUILD/obj/gateway"
ORDER=(gw_run gw_admin gw_reload gateway gw_incident gw_colocate gw_fence gw_rungs)
SHARED=" eg_gw_part_find eg_gw_part_unref "

command -v nm >/dev/null || die "nm is missing (Debian package binutils)"
for f in "${ORDER[@]}"; do [ -f "$OBJ/$f.o" ] || die "$OBJ/$f.o is missing (make first)"; done
for f in "${ORDER[@]}"; do
  nm --defined-only "$OBJ/$f.o" | awk -v f="$f" '$2 ~ /^[TD]$/ && $3 ~ /^eg_gw_/ {print $3, f}'
done | sort >"$T/defs"
check "the ${#ORDER[@]} files define eg_gw_* functions ($(wc -l <"$T/defs"))" [ "$(wc -l <"$T/defs")" -ge 20 ]

rank() { local i; for i in "${!ORDER[@]}"; do [ "${ORDER[$i]}" = "$1" ] && echo "$i"; done; }
bad=""
for f in "${ORDER[@]}"; do
  nm -u "$OBJ/$f.o" | awk '$2 ~ /^eg_gw_/ {print $2}' | sort -u >"$T/uses"
  while read -r sym def; do
    [ "$def" = "$f" ] && continue
    [[ "$SHARED" == *" $sym "* ]] && continue
    [ "$(rank "$def")" -gt "$(rank "$f")" ] || bad="$bad $f.c->$def.c($sym)"
  done < <(join "$T/uses" "$T/defs")
done
check "no call runs back up ${ORDER[*]}:${bad:- none}" [ -z "$bad" ]
exit $FAILED
