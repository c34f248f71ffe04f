-- swap a pattern bomb into the policy's own redact list after define checked it, and return that policy; expect: loads (redact checks each pattern against the message it runs on: a short message is cheap, a long one falls back to hold, which c/test_policy_decide and spec/lua show)
local policy = require "errgate.policy"
local pol = policy.define { name = "hostile", version = 1, classify = { { class = "permanent" } },
  route = { permanent = "dlq", default = "dlq" }, redact = { "acct%-%d+" } }
pol.redact[1] = "(.-)(.-)(.-)(.-)b"
return pol
