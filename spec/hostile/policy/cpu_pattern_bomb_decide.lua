-- a backtracking pattern bomb on a 4 KB subject: falls back to hold at decide
-- error: too costly
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local s = ("a"):rep(4000)
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      s:find("(.-)(.-)(.-)(.-)b")
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
