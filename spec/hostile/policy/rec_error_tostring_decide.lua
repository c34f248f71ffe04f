-- an error object whose __tostring loops, raised from the route: falls back to hold at decide
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"

local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      error(setmetatable({}, { __tostring = function() while true do end end }))
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
