-- ('').dump to turn a function into bytecode: refused at load
-- error: call
local dump = ("").dump
local bc = dump(function() end)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
