-- rawget on a module view to find the real module behind it: refused at load
-- error: no real table
local real = rawget(require("errgate.duration"), "parse")
assert(real ~= nil, "no real table behind the view")

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
