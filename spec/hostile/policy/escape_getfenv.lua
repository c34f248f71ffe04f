-- getfenv(0) to reach the real globals: refused at load
-- error: getfenv
local g = getfenv(0)
g.os.execute("true")

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
