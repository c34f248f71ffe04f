-- config.lua — the payments demo's gateway config (examples/payments/run.sh).
--
-- The payment-provider story: records of the `payments` topic are POSTed to
-- the provider (here the flaky handler). While the provider is down, failing
-- records leave the main topic for the retry ladder's rung topics
-- payments.retry.1s, .2s, .4s (lanes.retry with {rung} = the rung's name;
-- the rungs and their delays come from policy.lua) and come back when due;
-- the circuit breaker stops sending while most calls fail, and the retry
-- budget keeps in-place retries to a fifth of the requests in flight.
-- Permanent failures go to payments.dlq at once.
-- The broker address comes from ERRGATE_BOOTSTRAP, the handler's URL from
-- PAYMENTS_TARGET_URL: a config is Lua, so it may read the environment.
return {
  group = "payments",
  -- a ladder needs ordering "none" (or "key", which behaves as "none" for
  -- ladders): under "partition" a failing record blocks its partition and
  -- the gateway waits in place for the rung delays instead
  source = { topics = { "payments" }, ordering = "none", max_inflight = 500 },
  target = {
    http = { url = os.getenv("PAYMENTS_TARGET_URL") or "http://127.0.0.1:8080/",
             timeout = "2s", concurrency = 32 },
    -- open when half of the last 50 calls failed (after at least 20 calls);
    -- after 5 s let 2 probes through, close when they succeed
    breaker = { window = 50, min_calls = 20, failure_ratio = 0.5, open = "5s", half_open_probes = 2 },
    -- in-place retries at most 20% of the active requests (at least 3)
    retry_budget = { percent = 20, min = 3 },
  },
  policy = "policy.lua",
  lanes = { dlq = "{topic}.dlq", quarantine = "{topic}.quarantine", retry = "{topic}.retry.{rung}" },
  commit_interval = "200ms",
}
