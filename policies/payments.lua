-- payments.lua — for a stream of payment requests sent to a payment provider.
--
-- When the provider is down for minutes, its records must not block the
-- stream or hammer the provider: they move off the main topic onto delayed
-- retry topics (the ladder 30s -> 5m -> 1h, topics `{topic}.retry.30s` ...,
-- lanes.retry in the gateway config) and come back when due.
--   timeout, connection failure, 502 503 504 -> transient -> 2 quick in-place
--        retries, then the ladder 30s / 5m / 1h, then DLQ, reason "exhausted"
--   429                                      -> throttled -> the ladder at once,
--        a rung waiting at least the provider's Retry-After
--   400 413 415 (invalid payload)            -> permanent -> DLQ at once
--   422 (validation reject)                  -> semantic  -> DLQ at once
--   409 (a safe duplicate)                   -> duplicate -> ignore
--   circuit breaker open                     -> unavailable -> hold
--   Lua target error -> systemic -> stop; anything else -> unknown -> DLQ
-- An explicit Error-Class from the service wins, as in default.lua.
-- The rules live in lib/payments.lua, shared with the demo of
-- examples/payments/ (same rules, 1s / 2s / 4s rungs). A ladder needs
-- ordering "none" (or "key") on the source: under "partition" the gateway
-- waits in place for the rung delays instead (errgate policy check
-- --ordering partition refuses it). During an incident an SRE may slow a
-- rung down without renaming its topic:
--   ladder = { "30s", { name = "5m", delay = "15m" }, "1h" }
-- and reload (SIGHUP or POST /reload).
local payments = require "payments"

return payments.define {
  name = "payments",
  version = "1",
  ladder = { "30s", "5m", "1h" },
}
