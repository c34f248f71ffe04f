-- replace the guard function: errgate.pattern.affordable = function() return true end: refused at load
-- error: read-only
require("errgate.pattern").affordable = function() return true end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
