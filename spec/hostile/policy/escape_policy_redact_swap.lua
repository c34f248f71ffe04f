-- swap a pattern bomb into the policy's own redact list after define checked it: refused at load
-- error: too costly
local policy = require "errgate.policy"
local pol = policy.define { name = "x", version = 1, classify = { { class = "unknown" } }, route = { default = "dlq" },
  redact = { "acct%-%d+" } }
pol.redact[1] = "(.-)(.-)(.-)(.-)b"
require("errgate.decision").finalize({ action = "dlq" }, { kind = "http", status = 500, message = ("a"):rep(4000) }, pol.redact)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
