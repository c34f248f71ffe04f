-- attack: the ladder rung list the runtime reads after a load is a table whose __index and __len loop; expect: loads, the rung read is bounded and finds no rungs, never a hang
local policy = require "errgate.policy"
local pol = policy.define { name = "meta_rungs", version = "1",
  classify = { { class = "permanent" } }, route = { permanent = "dlq", default = "dlq" } }
pol.rungs = setmetatable({}, { __index = function() while true do end end, __len = function() while true do end end })
return pol
