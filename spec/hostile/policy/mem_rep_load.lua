-- string.rep to 1 GB at load: refused at load
-- error: memory
local s = ("x"):rep(1024 * 1024 * 1024)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
