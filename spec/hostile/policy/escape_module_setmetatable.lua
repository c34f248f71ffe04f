-- setmetatable on a shared module to intercept its reads (errgate.policy.define for the policies loaded after): refused at load
-- error: protected metatable
setmetatable(require("errgate.policy"), { __index = function() return print end })

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
