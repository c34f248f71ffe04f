-- attack: burns the load budget inside its own pcall, catching the first timeout and looping again; expect: refused at load (the deadline raises at every instruction once passed), built off the loop
local policy = require "errgate.policy"
for i = 1, 1e9 do pcall(function() while true do end end) end
return policy.define { name = "reload_budget_pcall", version = "1",
  classify = { { class = "permanent" } }, route = { permanent = "dlq", default = "dlq" } }
