-- require of errgate.where (loads code with loadstring): refused at load
-- error: is not allowed
local w = require "errgate.where"

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
