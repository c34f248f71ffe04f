-- attack: the file burns its whole load budget at top level before returning a policy; expect: refused at load after the load budget, built off the loop (the admin endpoint and decisions never wait)
local policy = require "errgate.policy"
while true do end
return policy.define { name = "reload_budget_burn", version = "1",
  classify = { { class = "permanent" } }, route = { permanent = "dlq", default = "dlq" } }
