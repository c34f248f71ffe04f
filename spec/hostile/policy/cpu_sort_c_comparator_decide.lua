-- table.sort of 1M numbers with a C function (rawequal) as the comparator: falls back to hold at decide
-- error: budget
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local t = {}
for i = 1, 1000000 do t[i] = (i * 7919) % 1000003 end
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      for i = 1, 100 do table.sort(t, rawequal) end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
