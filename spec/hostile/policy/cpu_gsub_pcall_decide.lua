-- gsub over 4 MB with pcall (a C function) as the replacement: falls back to hold at decide
-- error: budget
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local big = ("x"):rep(4 * 1024 * 1024)
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      big:gsub(".", pcall)
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
