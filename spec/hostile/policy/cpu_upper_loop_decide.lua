-- string.upper of a 20 MB string in a loop (each call one VM instruction): falls back to hold at decide
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local big = ("x"):rep(20 * 1024 * 1024)
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      for i = 1, 1e9 do local u = big:upper() end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
