-- run a pattern bomb through errgate.redact.message, which ran caller patterns unguarded: refused at load
-- error: too costly
require("errgate.redact").message(("a"):rep(4000), 100, { "(.-)(.-)(.-)(.-)b" })

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
