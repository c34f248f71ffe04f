-- coroutine, collectgarbage and newproxy to run code outside the hook: refused at load
-- error: coroutine
local co = coroutine.create(function() while true do end end)

return require("errgate.policy").define { name = "hostile", version = 1,
  classify = { { class = "unknown" } }, route = { default = "dlq" },
  examples = { { failure = 500, expect = "dlq" } } }
