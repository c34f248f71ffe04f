-- pipeline.lua — the full failure taxonomy of a data pipeline, as one policy.
--
-- For a stream processor writing into downstream services, where each kind
-- of failure needs its own answer:
--   transient infrastructure  timeout, 502 503 504, "deadlock", "reset"   -> retry in
--                             place (200 ms doubling to 10 s, full jitter, 6 tries,
--                             at most 2 min), then DLQ "exhausted"
--   downstream overload       429, or Error-Code "overloaded"             -> back off on a
--                             fixed ladder "1s x3, 5s x3, 30s x4", honouring
--                             Retry-After, then hold (the downstream is saturated,
--                             not the record)
--   unavailable               connection refused, circuit breaker open   -> hold 2 s
--   permanent data format     400 413 415, Error-Code "invalid_*"/"parse_*" -> DLQ
--   schema incompatibility    Error-Code "schema_*", 406                 -> quarantine
--   semantic validation       422                                        -> quarantine
--   missing reference data    404, Error-Code "missing_reference"        -> retry "10s x3"
--                             (the reference may still arrive), then DLQ
--   duplicate                 409                                        -> ignore
--   stale                     410 412, Error-Code "stale"                -> ignore
--   code bug                  500 501, errors raised by a Lua target     -> stop
--   anything else             unknown                                    -> DLQ
-- An explicit Error-Class from the service wins over all of the above.
local policy = require "errgate.policy"

return policy.define {
  name = "pipeline",
  version = "1",
  description = "transient / overload / format / schema / semantic / reference / duplicate / stale / bug",

  classify = {
    { explicit = true },
    { kind = { "connect", "circuit_open" }, class = "unavailable" },
    { kind = "timeout", class = "transient", set_code = "timeout" },
    { kind = "lua", class = "bug" },
    -- the service's error code is more precise than its status: codes first
    { code = "^overloaded$", class = "overload" },
    { code = "^schema_", class = "schema" },
    { code = "^invalid_", class = "format" },
    { code = "^parse_", class = "format" },
    { code = "^missing_reference$", class = "reference" },
    { code = "^stale$", class = "stale" },
    { status = 429, class = "overload" },
    { status = 406, class = "schema" },
    { status = { 400, 413, 415 }, class = "format" },
    { status = 422, class = "semantic" },
    { status = 404, class = "reference" },
    { status = 409, class = "duplicate" },
    { status = { 410, 412 }, class = "stale" },
    { status = { 500, 501 }, class = "bug" },
    { status = { 502, 503, 504 }, class = "transient" },
    { message = "deadlock", class = "transient" },
    { message = "connection reset", class = "transient" },
    { class = "unknown" },
  },

  retry = {
    transient = { attempts = 6, base = "200ms", max = "10s", jitter = "full", max_elapsed = "2m" },
    overload = { delays = "1s x3, 5s x3, 30s x4", honor_retry_after = true, retry_after_cap = "5m" },
    reference = "10s x3",
  },

  route = {
    transient = { retry = "transient", exhausted = "dlq" },
    overload = { retry = "overload", exhausted = "hold" },
    unavailable = { action = "hold", delay = "2s" },
    format = "dlq",
    schema = "quarantine",
    semantic = "quarantine",
    reference = { retry = "reference", exhausted = "dlq" },
    duplicate = "ignore",
    stale = "ignore",
    bug = "stop",
    default = "dlq",
  },

  examples = {
    { failure = "timeout", expect = { action = "retry", class = "transient", code = "timeout" } },
    { failure = 503, expect = { action = "retry", class = "transient" } },
    { failure = 429, expect = { action = "retry", class = "overload", delay_ms = 1000 } },
    { name = "overload honours Retry-After", failure = { kind = "http", status = 429, retry_after_ms = 20000 },
      expect = { action = "retry", delay_ms = 20000 } },
    { name = "overload never dead-letters", failure = 429, ctx = { last_class = "overload", class_attempts = 10 },
      expect = { action = "hold", reason = "exhausted" } },
    { failure = "connect", expect = { action = "hold", class = "unavailable", delay_ms = 2000 } },
    { name = "an open breaker holds", failure = "circuit_open", ctx = { breaker = "open" },
      expect = { action = "hold", class = "unavailable", code = "circuit_open", delay_ms = 2000 } },
    { failure = 400, expect = { action = "dlq", class = "format" } },
    { failure = { kind = "http", status = 400, code = "schema_mismatch" },
      expect = { action = "quarantine", class = "schema" } },
    { failure = 422, expect = { action = "quarantine", class = "semantic" } },
    { failure = 404, expect = { action = "retry", class = "reference", delay_ms = 10000 } },
    { name = "missing reference gives up after 3 retries", failure = 404,
      ctx = { last_class = "reference", class_attempts = 3 }, expect = { action = "dlq", reason = "exhausted" } },
    { failure = 409, expect = { action = "ignore", class = "duplicate" } },
    { failure = 410, expect = { action = "ignore", class = "stale" } },
    { failure = 500, expect = { action = "stop", class = "bug" } },
    { failure = { kind = "lua", message = "attempt to index a nil value" },
      expect = { action = "stop", class = "bug" } },
    { failure = 418, expect = { action = "dlq", class = "unknown" } },
    { name = "an explicit class wins", failure = { kind = "http", status = 500, class_hint = "duplicate" },
      expect = { action = "ignore", class = "duplicate" } },
  },
}
