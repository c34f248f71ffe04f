-- require of a privileged module with a trailing dot (errgate.cli.): refused at load
-- error: is not allowed
local cli = require "errgate.cli."

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
