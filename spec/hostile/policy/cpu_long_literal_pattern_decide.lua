-- a 100 KB literal pattern over 4 MB (each start compares the whole pattern): falls back to hold at decide
-- error: too costly
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local big = ("a"):rep(4 * 1024 * 1024)
local pat = ("a"):rep(100000) .. "b"
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      big:find(pat)
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
