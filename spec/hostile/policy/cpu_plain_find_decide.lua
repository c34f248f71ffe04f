-- a plain find of a 1 MB needle in 8 MB of near-matches: falls back to hold at decide
-- error: too costly
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local big = ("a"):rep(8 * 1024 * 1024)
local needle = ("a"):rep(1024 * 1024) .. "b"
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      big:find(needle, 1, true)
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
