-- require of a privileged module with a leading dot (.errgate.testing): refused at load
-- error: is not allowed
local t = require ".errgate.testing"

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
