-- setmetatable on a policy object so the C core's field reads run policy code: refused at load
-- error: protected metatable
local policy = require "errgate.policy"
local pol = policy.define { name = "x", version = 1, classify = { { class = "unknown" } }, route = { default = "dlq" } }
setmetatable(pol, { __index = function() while true do end end })

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
