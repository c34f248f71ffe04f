-- reach an internal helper (failure.fill writes into the runtime's reused tables): refused at load
-- error: call
local fill = require("errgate.failure").fill
fill({}, "http")

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
