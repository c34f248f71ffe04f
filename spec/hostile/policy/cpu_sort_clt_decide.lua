-- table.sort of tables whose __lt is a C function, default order: falls back to hold at decide
-- error: budget
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local mt = { __lt = rawequal }
local t = {}
for i = 1, 300000 do t[i] = setmetatable({}, mt) end
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      for i = 1, 100 do table.sort(t) end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
