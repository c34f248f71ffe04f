-- policy.lua — the chaos runner's ladder policy (spec/chaos/chaos.py).
-- Transient failures (503, timeouts) climb five short rungs, 1s to 5s, then
-- the DLQ (reason exhausted); 400 -> DLQ, 422 -> quarantine, 409 -> ignore;
-- a target that refuses connections holds the partition. Five rungs cover
-- the worst a chaos seed can do to one record (transient-2 twice, because
-- a target restart forgets the handler's counters, plus a timeout during
-- the slowdown): no record the runner expects at the handler is exhausted.
-- The runner hot-reloads this file as `version = "2"` (a changed policy:
-- another id in errgate.policy) and replaces it with a broken one.
local policy = require "errgate.policy"
return policy.define {
  name = "chaos", version = "1",
  classify = {
    { kind = { "connect", "circuit_open" }, class = "unavailable" },
    { kind = "timeout", class = "transient" },
    { status = { 502, 503, 504 }, class = "transient" },
    { status = 400, class = "permanent" },
    { status = 422, class = "semantic" },
    { status = 409, class = "duplicate" },
    { class = "unknown" },
  },
  retry = { short = { ladder = { "1s", "2s", "3s", "4s", "5s" } } },
  route = {
    transient = { ladder = "short", exhausted = "dlq" },
    permanent = "dlq",
    semantic = "quarantine",
    duplicate = "ignore",
    unavailable = "hold",
    default = "dlq",
  },
  examples = {
    { failure = 503, expect = { action = "ladder", rung = "1s", rung_index = 1, delay_ms = 1000 } },
    { failure = 503, ctx = { retry_count = 5 }, expect = { action = "dlq", reason = "exhausted" } },
    { failure = "connect", expect = { action = "hold" } },
    { failure = 422, expect = { action = "quarantine" } },
  },
}
