-- debug.getupvalue on require to reach the real require: refused at load
-- error: debug
local _, real = debug.getupvalue(require, 1)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
