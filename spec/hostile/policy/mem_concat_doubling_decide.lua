-- a string doubled until it no longer fits: falls back to hold at decide
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"

local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      local s = "x"
      while true do s = s .. s end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
