-- setfenv on a runtime function to swap its environment: refused at load
-- error: setfenv
setfenv(require("errgate.policy").define, {})

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
