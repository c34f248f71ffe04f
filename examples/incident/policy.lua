-- policy.lua — the incident story's policy as it was when the provider went
-- down (examples/incident/run.sh): it classifies the provider's 503 as
-- permanent, so every order the provider refuses while it is down would be
-- dead-lettered at once. The flood guard (config.lua: dlq_guard) is what
-- stops that. policy-fixed.lua is the corrected version.
local policy = require "errgate.policy"
return policy.define {
  name = "payments-incident", version = "1",
  classify = {
    { kind = { "timeout", "connect" }, class = "transient" },
    { status = { 502, 504 }, class = "transient" },
    { status = 503, class = "permanent" }, -- the bug: 503 is the provider being down
    { status = 400, class = "permanent" },
    { class = "unknown" },
  },
  retry = { slow = { ladder = { "5s", "20s", "30s" } } },
  route = { transient = { ladder = "slow", exhausted = "dlq" }, permanent = "dlq", default = "dlq" },
}
