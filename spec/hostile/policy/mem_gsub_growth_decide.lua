-- gsub that multiplies a 1 MB string by 100: falls back to hold at decide
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local big = ("x"):rep(1024 * 1024)
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      local s = big:gsub(".", ("y"):rep(100))
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
