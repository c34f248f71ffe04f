-- an xpcall whose message handler loops: falls back to hold at decide
-- error: budget
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"

local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      while true do xpcall(function() while true do end end, function() while true do end end) end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
