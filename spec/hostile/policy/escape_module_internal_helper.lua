-- reach what errgate.policy does not export (the Policy methods table, to swap decide for every policy): refused at load
-- error: index
require("errgate.policy").Policy.scalar_decider = function() end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
