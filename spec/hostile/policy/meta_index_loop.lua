-- attack: reaches the shared Policy metatable through pol.__index, removes name/version and makes every lookup of a missing field loop forever (the C core used to read pol.name with lua_getfield); expect: refused at load (the sandbox hides the Policy metatable; the C core reads raw anyway): check and reload neither hang nor die
local policy = require "errgate.policy"
local pol = policy.define { name = "meta_index_loop", version = "1",
  classify = { { class = "permanent" } }, route = { permanent = "dlq", default = "dlq" } }
local Policy = pol.__index
local methods = {}
for k, v in pairs(Policy) do methods[k] = v end
pol.name, pol.version, pol.id = nil, nil, nil
Policy.__index = function(t, k)
  if methods[k] ~= nil then return methods[k] end
  while true do end
end
return pol
