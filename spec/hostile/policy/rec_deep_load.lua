-- deep (non-tail) recursion at load: refused at load
-- error: stack overflow
local function f(n) return 1 + f(n + 1) end
f(1)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
