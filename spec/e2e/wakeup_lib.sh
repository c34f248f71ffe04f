# wakeup_lib.sh — helpers shared by the fetch wake-up's e2e tests (sourced
# after lib.sh): records in batches of 100 over a 50-record prefetch, so the
# embedded broker's one batch per fetch fills the queue and stops the
# fetcher every time (test_fetch_wakeup.sh says why).

# produce_batches N: N more records into src, in batches of 100.
produce_batches() {
  gen_records "$1" "ok:1" |
    kcat -P -b "$BOOTSTRAP" -t src -K $'\t' -X acks=all -X batch.num.messages=100 2>"$T/kcat.err" ||
    die "kcat produce failed: $(cat "$T/kcat.err")"
}

# wakeup_config FILE GROUP WAKEUP_MS: a gateway of GROUP on src with a no-op
# Lua target, the 50-record prefetch and fetch_wakeup = WAKEUP_MS.
wakeup_config() {
  echo 'return function(record) end' >"$T/noop.lua"
  cat >"$1" <<CFG
return {
  group = "$2",
  source = { topics = { "src" }, ordering = "none", fetch_wakeup = $3 },
  target = { lua = "$T/noop.lua" },
  policy = "$ROOT/policies/default.lua",
  commit_interval = 200,
  admin = { listen = "127.0.0.1:0" },
  kafka = { ["session.timeout.ms"] = 6000, ["queued.min.messages"] = 50, ["max.partition.fetch.bytes"] = 4096 },
}
CFG
}

# active NAME: the summary's active seconds (first record received to last
# finished) in the log of gateway NAME.
active() { grep '"event":"summary"' "$T/$1.err" | sed -n 's/.*"active_seconds":\([0-9.]*\).*/\1/p'; }
