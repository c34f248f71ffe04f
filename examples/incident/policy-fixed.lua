-- policy-fixed.lua — the incident story's corrected policy
-- (examples/incident/run.sh copies it over policy.lua, and the gateways
-- hot-reload it): the provider's 503 is transient, so an order it refuses
-- climbs the retry ladder 5s / 20s / 30s instead of reaching the DLQ.
local policy = require "errgate.policy"
return policy.define {
  name = "payments-incident", version = "2",
  classify = {
    { kind = { "timeout", "connect" }, class = "transient" },
    { status = { 502, 503, 504 }, class = "transient" },
    { status = 400, class = "permanent" },
    { class = "unknown" },
  },
  retry = { slow = { ladder = { "5s", "20s", "30s" } } },
  route = { transient = { ladder = "slow", exhausted = "dlq" }, permanent = "dlq", default = "dlq" },
  examples = {
    { failure = 503, expect = { action = "ladder", rung = "5s" } },
    { failure = 400, expect = { action = "dlq" } },
  },
}
