-- getmetatable("") to replace the guarded string methods: refused at load
-- error: getmetatable
getmetatable("").__index = { find = function() return 1 end }

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
