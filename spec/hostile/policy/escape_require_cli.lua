-- require of the CLI module, whose test() opens any file: refused at load
-- error: is not allowed
local cli = require "errgate.cli"
cli.test(nil, "/etc/passwd")

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
