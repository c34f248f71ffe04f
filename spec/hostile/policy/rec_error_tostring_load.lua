-- an error object whose __tostring loops, raised where define formats it: refused at load
-- error: budget
local policy = require "errgate.policy"
policy.define { name = "x", version = 1, classify = { { class = "unknown" } },
  route = function() error(setmetatable({}, { __tostring = function() while true do end end })) end,
  examples = { { failure = 500, expect = "dlq" } } }

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
