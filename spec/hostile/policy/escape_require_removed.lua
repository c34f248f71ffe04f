-- require of a module the policy API no longer offers (errgate.pattern, whose budget a policy could read): refused at load
-- error: no longer offered to policies
local p = require "errgate.pattern"

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = p and 500, expect = "dlq" } } }
