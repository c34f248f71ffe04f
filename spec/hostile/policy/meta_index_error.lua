-- attack: the shared Policy metatable's __index raises on every missing field, with name/version removed (an unprotected lua_getfield in the C core exited the process); expect: refused at load (the sandbox hides the Policy metatable; the C core reads raw anyway), never an exit
local policy = require "errgate.policy"
local pol = policy.define { name = "meta_index_error", version = "1",
  classify = { { class = "permanent" } }, route = { permanent = "dlq", default = "dlq" } }
local Policy = pol.__index
local methods = {}
for k, v in pairs(Policy) do methods[k] = v end
pol.name, pol.version, pol.id = nil, nil, nil
Policy.__index = function(t, k)
  if methods[k] ~= nil then return methods[k] end
  error("meta trap: " .. tostring(k))
end
return pol
