-- gsub over 4 MB with a table replacement whose __index is a C function: falls back to hold at decide
-- error: budget
-- (armed once define() has run its examples: the attack runs on real decisions only)
local policy = require "errgate.policy"
local big = ("x"):rep(4 * 1024 * 1024)
local repl = setmetatable({}, { __index = pcall })
local armed = false
local p = policy.define { name = "hostile", version = 1,
  classify = { { class = "unknown" } },
  route = function(failure, record, ctx)
    if armed then
      for i = 1, 100 do big:gsub(".", repl) end
    end
    return "dlq"
  end,
  examples = { { failure = 500, expect = "dlq" } } }
armed = true
return p
