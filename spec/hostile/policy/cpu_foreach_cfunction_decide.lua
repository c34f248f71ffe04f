-- table.foreach over 1M entries with a C function (math.randomseed) as the function: falls back to hold at decide
-- error: budget
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local t = {}
for i = 1, 1000000 do t[i] = i end
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      for i = 1, 100 do (table.foreach or table.sort)(t, math.randomseed) end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
