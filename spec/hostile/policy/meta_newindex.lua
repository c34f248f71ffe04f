-- attack: the policy object's fields are emptied and Policy.__newindex loops, so a C core that stores pol.id with lua_setfield would run it unbounded; expect: refused at load (the sandbox hides the Policy metatable; the C core stores raw anyway), never a hang
local policy = require "errgate.policy"
local pol = policy.define { name = "meta_newindex", version = "1",
  classify = { { class = "permanent" } }, route = { permanent = "dlq", default = "dlq" } }
local Policy = pol.__index
pol.id = nil
Policy.__newindex = function(t, k, v) while true do end end
return pol
