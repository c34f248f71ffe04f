-- attack: Policy.scalar_decider is replaced by one whose decision function answers tables with metamethods instead of strings and numbers; expect: refused at load (the sandbox hides the Policy metatable; were it reached, every decision would fall back to hold, the gateway keeps running)
local policy = require "errgate.policy"
local pol = policy.define { name = "meta_decider", version = "1",
  classify = { { class = "permanent" } }, route = { permanent = "dlq", default = "dlq" } }
local Policy = pol.__index
local trap = setmetatable({}, {
  __index = function() while true do end end, __len = function() while true do end end,
  __eq = function() while true do end end, __tostring = function() while true do end end,
  __concat = function() while true do end end, __call = function() while true do end end })
Policy.scalar_decider = function(self)
  return function() return trap, trap, trap, trap, trap, trap, trap, trap end, true
end
return pol
