-- closures created without bound at load: refused at load
local t = {}
while true do local n = #t; t[n + 1] = function() return n end end

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
