-- require of the sandbox itself, to load a file without one: refused at load
-- error: is not allowed
local sb = require "errgate.sandbox"

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
