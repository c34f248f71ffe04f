-- default.lua — the policy errgate ships with.
--
-- An explicit Error-Class from the service wins (routed by name; a class this
-- table does not know goes to the DLQ under its own name). Otherwise:
--   connection refused, circuit breaker open  -> unavailable -> hold the partition
--   timeout, 408 425 429 502 503 504          -> transient   -> 4 more attempts in
--                                                place (100 ms doubling to 5 s, full
--                                                jitter, Retry-After honoured up to
--                                                60 s), then DLQ, reason "exhausted"
--   400 404 413 415                           -> permanent   -> DLQ
--   422                                       -> semantic    -> quarantine
--   409                                       -> duplicate   -> ignore
--   500 501, errors raised by a Lua target    -> systemic    -> stop
--   anything else                             -> unknown     -> DLQ
-- Copy it, rename it, and edit the tables: that is how a team makes its own.
local policy = require "errgate.policy"

return policy.define {
  name = "default",
  version = "1",
  description = "errgate's shipped default: retry transient, dead-letter permanent, stop on systemic",

  classify = {
    { explicit = true },
    { kind = { "connect", "circuit_open" }, class = "unavailable" },
    { kind = "timeout", class = "transient" },
    { status = { 408, 425, 429, 502, 503, 504 }, class = "transient" },
    { status = { 400, 404, 413, 415 }, class = "permanent" },
    { status = 422, class = "semantic" },
    { status = 409, class = "duplicate" },
    { status = { 500, 501 }, class = "systemic" },
    { kind = "lua", class = "systemic" },
    { class = "unknown" }, -- the default: the last rule matches everything
  },

  retry = {
    transient = {
      attempts = 4,
      backoff = "exponential",
      base = "100ms",
      max = "5s",
      jitter = "full",
      honor_retry_after = true,
      retry_after_cap = "60s",
    },
  },

  route = {
    transient = { retry = "transient", exhausted = "dlq" },
    permanent = "dlq",
    semantic = "quarantine",
    duplicate = "ignore",
    unavailable = "hold",
    systemic = "stop",
    default = "dlq",
  },

  examples = {
    { failure = 503, expect = { action = "retry", class = "transient", code = "http_503" } },
    { failure = "timeout", expect = { action = "retry", class = "transient" } },
    { failure = 400, expect = { action = "dlq", class = "permanent" } },
    { failure = 422, expect = { action = "quarantine", class = "semantic" } },
    { failure = 409, expect = { action = "ignore", class = "duplicate" } },
    { failure = 500, expect = { action = "stop", class = "systemic" } },
    { failure = "connect", expect = { action = "hold", class = "unavailable" } },
    { name = "an open breaker holds", failure = "circuit_open", ctx = { breaker = "open" },
      expect = { action = "hold", class = "unavailable", code = "circuit_open" } },
    { failure = 418, expect = { action = "dlq", class = "unknown" } },
    { name = "Error-Class wins over the status",
      failure = { kind = "http", status = 503, class_hint = "permanent" },
      expect = { action = "dlq", class = "permanent" } },
    { name = "fifth transient failure gives up",
      failure = 503, ctx = { last_class = "transient", class_attempts = 4 },
      expect = { action = "dlq", class = "transient", reason = "exhausted" } },
  },
}
