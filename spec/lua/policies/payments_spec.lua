-- policies/payments_spec.lua — what spec/cases/payments.jsonl cannot say
-- about policies/payments.lua: its id and rung topics, its lint under each
-- ordering, its embedded examples; and the payments demo's
-- examples/payments/policy.lua, which shares the rules
-- (policies/lib/payments.lua) with faster rungs and must decide exactly as
-- the shipped policy but for them. Every decision of the shipped policy is
-- stated in spec/cases/payments.jsonl (run by `errgate policy test`, the
-- cases/payments suite).
local lint = require "errgate.lint"
local t = require "errgate.testing"

local pol = t.load("policies/payments.lua")
local demo = t.load("examples/payments/policy.lua")

local function const(r) return function() return r end end
local QUICK_USED = { last_class = "transient", class_attempts = 2 }

describe("policies/payments.lua", function()
  it("loads as payments@1 with the ladder 30s / 5m / 1h", function()
    assert.are.equal("payments@1", pol.id)
    assert.are.same({ { name = "30s", delay_ms = 30000 }, { name = "5m", delay_ms = 300000 },
      { name = "1h", delay_ms = 3600000 } }, t.rungs(pol))
  end)

  it("lints clean but for the ladder notes, and is refused under ordering partition", function()
    for _, p in ipairs(lint.lint(pol)) do assert.are.equal("info", p.level) end
    assert.are.same({}, lint.lint(pol, { ordering = "none" }))
    assert.matches("uses ladder 'provider': refused under ordering=\"partition\"",
      lint.errors(pol, { ordering = "partition" }))
  end)

  it("runs its embedded examples on load", function()
    assert.is_true(#pol.examples >= 15)
  end)
end)

describe("examples/payments/policy.lua (the demo)", function()
  it("has the fast rungs 1s / 2s / 4s", function()
    assert.are.equal("payments-demo@1", demo.id)
    assert.are.same({ { name = "1s", delay_ms = 1000 }, { name = "2s", delay_ms = 2000 },
      { name = "4s", delay_ms = 4000 } }, t.rungs(demo))
  end)

  it("decides exactly as policies/payments.lua but for the rungs", function()
    local pinned, dpinned = pol:with_random(const(0.5)), demo:with_random(const(0.5))
    local rung_of = { ["30s"] = "1s", ["5m"] = "2s", ["1h"] = "4s" }
    local fs = { t.http(503), t.http(429), t.timeout(), t.connect_refused(), t.http(400), t.http(415), t.http(422),
      t.http(409), t.circuit_open(), t.lua_error("x"), t.http(418), t.http(503, { class = "permanent" }) }
    for _, f in ipairs(fs) do
      for _, ctx in ipairs({ {}, QUICK_USED, { retry_count = 1 }, { retry_count = 3 }, { retry_budget = false } }) do
        local a, b = t.decide(pinned, f, nil, ctx), t.decide(dpinned, f, nil, ctx)
        assert.are.same({ a.action, a.class, a.code, a.reason, a.rung_index, a.rung and rung_of[a.rung] },
          { b.action, b.class, b.code, b.reason, b.rung_index, b.rung })
      end
    end
  end)

  it("walks 1s, 2s, 4s, then the DLQ", function()
    local ds = t.sequence(demo, t.http(503), 6)
    assert.are.same({ "retry", "retry", "1s", "2s", "4s", "dlq" },
      { ds[1].action, ds[2].action, ds[3].rung, ds[4].rung, ds[5].rung, ds[6].action })
    assert.are.same({ 1000, 2000, 4000 }, { ds[3].delay_ms, ds[4].delay_ms, ds[5].delay_ms })
  end)

  it("reaches the shared rules only through its lib/ folder", function()
    local fh = assert(io.open("examples/payments/lib/payments.lua", "rb"),
      "examples/payments/lib must reach policies/lib")
    fh:close()
  end)
end)
