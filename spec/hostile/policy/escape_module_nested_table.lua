-- write into a table a shared module exports (errgate.decision.ACTIONS): refused at load
-- error: read-only
require("errgate.decision").ACTIONS.evil = true

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
