-- require of a privileged module through an empty path segment (errgate..runtime): refused at load
-- error: is not allowed
local rt = require "errgate..runtime"
rt.cli_test(nil, "/etc/passwd")

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
