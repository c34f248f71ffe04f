-- loadstring/load with an environment of one's choosing: refused at load
-- error: call
local f = (loadstring or load)("return os")

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
