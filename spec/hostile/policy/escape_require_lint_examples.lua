-- require of load-time internals (errgate.examples): refused at load
-- error: is not allowed
local e = require "errgate.examples"

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
