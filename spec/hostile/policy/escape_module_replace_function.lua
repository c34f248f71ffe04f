-- replace a function of the policy API for everyone: errgate.duration.parse = function() return 0 end: refused at load
-- error: read-only
require("errgate.duration").parse = function() return 0 end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
