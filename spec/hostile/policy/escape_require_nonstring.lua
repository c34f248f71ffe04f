-- require with a table whose __tostring names a privileged module: refused at load
-- error: is not allowed
local t = setmetatable({}, { __tostring = function() return "errgate.runtime" end })
local rt = require(t)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
