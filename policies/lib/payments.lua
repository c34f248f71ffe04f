-- lib/payments.lua — the payment-provider rules, as a policy builder.
--
-- policies/payments.lua (rungs 30s / 5m / 1h) and the demo's
-- examples/payments/policy.lua (1s / 2s / 4s, through the symlink
-- examples/payments/lib -> ../../policies/lib) both require this module,
-- so the rules are written once and the two differ only in their rungs.
-- A policy may require modules of its own lib/ folder (errgate.sandbox);
-- this one is loaded afresh, sandboxed, by every load and reload.
--
-- payments.define { name, version, ladder [, description] } -> Policy
--   ladder: the provider ladder's rungs, in any errgate.schedule rung form:
--           { "30s", "5m", "1h" } or { { name = "30s", delay = "45s" }, ... }
--
-- The rules (an explicit Error-Class from the service wins, routed by name;
-- a class this table does not know goes to the DLQ under its own name):
--   timeout, connection failure, 502 503 504  -> transient -> 2 quick retries in
--        place (200 ms doubling, full jitter, Retry-After up to 5 s), then the
--        provider ladder, then DLQ, reason "exhausted". A record already on
--        the ladder climbs on without in-place retries; when the target's
--        retry budget has no room it climbs at once (reason "retry_budget").
--   429                                       -> throttled -> straight onto the
--        ladder (the provider asked us to slow down); its Retry-After raises
--        the rung's delay (up to 1 h)
--   400 413 415 (invalid payload)             -> permanent -> DLQ at once
--   422 (validation reject)                   -> semantic  -> DLQ at once
--   409 (the provider already has it)         -> duplicate -> ignore
--   circuit breaker open (nothing was sent)   -> unavailable -> hold
--   an error raised by a Lua target           -> systemic  -> stop
--   anything else                             -> unknown   -> DLQ
-- Every rule has an embedded example, generated for the given rungs.
local duration = require "errgate.duration"
local policy = require "errgate.policy"

local payments = {}

-- rung_of(r) -> name, delay_ms of a rung spec (define() checks it properly;
-- here a malformed rung only has to fall through to that check).
local function rung_of(r)
  if type(r) == "table" then return r.name, duration.parse(r.delay) end
  return r, duration.parse(r)
end

-- examples_for(ladder) -> the embedded examples for these rungs.
local function examples_for(ladder)
  local n = #ladder
  local first, d1 = rung_of(ladder[1])
  local last = rung_of(ladder[n])
  d1 = d1 or 0 -- a bad rung: define() names it before any example runs
  local quick_used = { last_class = "transient", class_attempts = 2 }
  local ex = {
    { failure = 503, expect = { action = "retry", class = "transient", code = "http_503" } },
    { failure = "timeout", expect = { action = "retry", class = "transient", code = "timeout" } },
    { failure = "connect", expect = { action = "retry", class = "transient", code = "connect" } },
    { name = "after the quick retries, the first rung", failure = 503, ctx = quick_used,
      expect = { action = "ladder", class = "transient", rung = first, rung_index = 1, delay_ms = d1 } },
    { name = "a record from the last rung but one climbs to the last", failure = 503, ctx = { retry_count = n - 1 },
      expect = { action = "ladder", rung = last, rung_index = n } },
    { name = "past the last rung: DLQ, exhausted", failure = "timeout", ctx = { retry_count = n },
      expect = { action = "dlq", class = "transient", reason = "exhausted" } },
    { name = "no retry budget: climb at once", failure = 503, ctx = { retry_budget = false },
      expect = { action = "ladder", rung = first, rung_index = 1, reason = "retry_budget" } },
    { failure = 429, expect = { action = "ladder", class = "throttled", rung = first, rung_index = 1, delay_ms = d1 } },
    { name = "Retry-After raises a rung's delay", failure = { kind = "http", status = 429, retry_after_ms = 2 * d1 },
      expect = { action = "ladder", rung = first, delay_ms = 2 * d1 } },
    { failure = 400, expect = { action = "dlq", class = "permanent" } },
    { failure = 415, expect = { action = "dlq", class = "permanent" } },
    { failure = 422, expect = { action = "dlq", class = "semantic" } },
    { failure = 409, expect = { action = "ignore", class = "duplicate" } },
    { name = "an open breaker holds", failure = "circuit_open", ctx = { breaker = "open" },
      expect = { action = "hold", class = "unavailable", code = "circuit_open" } },
    { failure = "lua", expect = { action = "stop", class = "systemic" } },
    { failure = 418, expect = { action = "dlq", class = "unknown" } },
    { name = "Error-Class wins over the status", failure = { kind = "http", status = 503, class_hint = "permanent" },
      expect = { action = "dlq", class = "permanent" } },
  }
  return ex
end

-- define{ name, version, ladder [, description] } -> Policy (see above).
function payments.define(opts)
  if type(opts) ~= "table" or type(opts.ladder) ~= "table" or #opts.ladder == 0 then
    error("payments.define: expected { name, version, ladder = { \"30s\", ... } }", 2)
  end
  local pol = policy.define {
    name = opts.name,
    version = opts.version,
    description = opts.description
      or "payment provider: transient and throttled climb a ladder, then DLQ; invalid and rejected to DLQ; 409 ignored",

    classify = {
      { explicit = true },
      { kind = "circuit_open", class = "unavailable" },
      { kind = { "timeout", "connect" }, class = "transient" },
      { kind = "lua", class = "systemic" },
      { status = { 502, 503, 504 }, class = "transient" },
      { status = 429, class = "throttled" },
      { status = { 400, 413, 415 }, class = "permanent" },
      { status = 422, class = "semantic" },
      { status = 409, class = "duplicate" },
      { class = "unknown" },
    },

    retry = {
      quick = { attempts = 2, base = "200ms", max = "1s", jitter = "full",
                honor_retry_after = true, retry_after_cap = "5s" },
      provider = { ladder = opts.ladder, honor_retry_after = true, retry_after_cap = "1h" },
    },

    route = {
      transient = { retry = "quick", exhausted = { ladder = "provider", exhausted = "dlq" } },
      throttled = { ladder = "provider", exhausted = "dlq" },
      permanent = "dlq",
      semantic = "dlq",
      duplicate = "ignore",
      unavailable = "hold",
      systemic = "stop",
      default = "dlq",
    },

    examples = examples_for(opts.ladder),
  }
  return pol
end

return payments
