-- comparing two 12 MB strings that differ in the last byte, in a loop: falls back to hold at decide
-- error: budget
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local a = ("x"):rep(12 * 1024 * 1024) .. "a"
local b = a:sub(1, -2) .. "b"
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      for i = 1, 1e9 do local lt = a < b end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
