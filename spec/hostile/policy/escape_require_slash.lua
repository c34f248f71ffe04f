-- require of a privileged module spelled as a path (errgate/recorded): refused at load
-- error: is not allowed
local r = require "errgate/recorded"

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
