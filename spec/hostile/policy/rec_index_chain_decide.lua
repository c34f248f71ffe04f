-- an __index function that recurses through itself: falls back to hold at decide
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local t = setmetatable({}, {})
getmetatable = nil
local mt = { __index = function(t, k) return t[k .. "x"] end }
setmetatable(t, nil)
t = setmetatable({}, mt)
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      local v = t.a
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
