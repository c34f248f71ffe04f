-- reach the shared Policy metatable through pol.__index and redefine __index: refused at load
-- error: index
local policy = require "errgate.policy"
local pol = policy.define { name = "x", version = 1, classify = { { class = "unknown" } }, route = { default = "dlq" } }
pol.__index.__index = function() while true do end end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
