-- turn the pattern guard off for everyone: errgate.pattern.BUDGET = math.huge: refused at load
-- error: read-only
require("errgate.pattern").BUDGET = math.huge

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
