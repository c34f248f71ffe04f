-- policies/default_spec.lua — what spec/cases/default.jsonl cannot say about
-- policies/default.lua: its id, that it has no ladder, the whole range of its
-- full jitter (cases pin random() to 0.5) and the exact set of decision
-- fields. Every decision of the policy is stated in spec/cases/default.jsonl
-- (run by `errgate policy test`, the cases/default suite).
local t = require "errgate.testing"

local pol = t.load("policies/default.lua")

local function const(r) return function() return r end end
local MAX = 0.999999 -- random() just below 1: full jitter gives the whole delay

describe("policies/default.lua", function()
  it("loads as default@1", function()
    assert.are.equal("default", pol.name)
    assert.are.equal("default@1", pol.id)
  end)

  it("has no ladder, so no rung topics", function()
    assert.are.same({}, t.rungs(pol))
  end)

  it("keeps full jitter within [0, 100 * 2^(n-1)] for transient retry n", function()
    for n = 1, 4 do
      local cap = 100 * 2 ^ (n - 1)
      local ctx = t.ctx({ last_class = n > 1 and "transient" or nil, class_attempts = n - 1 })
      assert.are.equal(0, t.decide(pol:with_random(const(0)), t.http(503), nil, ctx).delay_ms)
      assert.are.equal(cap, t.decide(pol:with_random(const(MAX)), t.http(503), nil, ctx).delay_ms)
      for _ = 1, 200 do
        local ms = t.decide(pol, t.http(503), nil, ctx).delay_ms
        assert.is_true(ms >= 0 and ms <= cap, ("delay %d outside [0, %d]"):format(ms, cap))
      end
    end
  end)

  it("returns exactly the six decision fields", function()
    local d = t.decide(pol, t.http(401, { message = "no" }))
    local keys = {}
    for k in pairs(d) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "action", "class", "code", "delay_ms", "message", "reason" }, keys)
  end)
end)
