-- payments_policy_spec.lua — the shipped policies/payments.lua (issue 3) and
-- the payments demo's examples/payments/policy.lua, which shares its rules
-- (policies/lib/payments.lua) with faster rungs: every class, each rung,
-- exhaustion, Retry-After on a rung, the retry-budget escalation and the
-- open breaker, through the sandboxed loader and rt.decide.
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

  local rows = {
    -- failure, action, class, code
    { t.http(502), "retry", "transient", "http_502" },
    { t.http(503), "retry", "transient", "http_503" },
    { t.http(504), "retry", "transient", "http_504" },
    { t.timeout(), "retry", "transient", "timeout" },
    { t.connect_refused(), "retry", "transient", "connect" },
    { t.http(429), "ladder", "throttled", "http_429" },
    { t.http(400), "dlq", "permanent", "http_400" },
    { t.http(413), "dlq", "permanent", "http_413" },
    { t.http(415), "dlq", "permanent", "http_415" },
    { t.http(422), "dlq", "semantic", "http_422" },
    { t.http(409), "ignore", "duplicate", "http_409" },
    { t.circuit_open(), "hold", "unavailable", "circuit_open" },
    { t.lua_error("handler.lua:3: boom"), "stop", "systemic", "lua" },
    { t.http(500), "dlq", "unknown", "http_500" },
    { t.http(404), "dlq", "unknown", "http_404" },
    { t.http(418), "dlq", "unknown", "http_418" },
  }
  for _, row in ipairs(rows) do
    local f, action, class, code = row[1], row[2], row[3], row[4]
    it(("%s -> %s -> %s"):format(f.status and ("HTTP " .. f.status) or f.kind, class, action), function()
      local d = t.decide(pol, f)
      assert.are.same({ action, class, code }, { d.action, d.class, d.code })
    end)
  end

  describe("transient failures", function()
    it("retry twice in place, quickly, then climb every rung, then go to the DLQ as exhausted", function()
      local ds = t.sequence(pol:with_random(const(0.999999)), t.http(503), 6)
      local got = {}
      for i, d in ipairs(ds) do
        got[i] = { d.action, d.rung or "-", d.rung_index or 0, d.delay_ms, d.reason }
        assert.are.equal("transient", d.class)
      end
      assert.are.same({
        { "retry", "-", 0, 200, "transient" },
        { "retry", "-", 0, 400, "transient" },
        { "ladder", "30s", 1, 30000, "transient" },
        { "ladder", "5m", 2, 300000, "transient" },
        { "ladder", "1h", 3, 3600000, "transient" },
        { "dlq", "-", 0, 0, "exhausted" },
      }, got)
    end)

    it("go to the rung after the one the record was consumed from, without in-place retries", function()
      for i, want in ipairs({ "5m", "1h" }) do
        local d = t.decide(pol, t.timeout(), nil, t.on_rung(pol, i))
        assert.are.same({ "ladder", want, i + 1 }, { d.action, d.rung, d.rung_index })
      end
    end)

    it("are dead-lettered as exhausted after the last rung, whatever the kind", function()
      for _, f in ipairs({ t.http(503), t.timeout(), t.connect_refused(), t.http(429) }) do
        local d = t.decide(pol, f, nil, t.on_rung(pol, 3))
        assert.are.same({ "dlq", "exhausted" }, { d.action, d.reason })
      end
    end)

    it("climb at once when the retry budget has no room (reason retry_budget)", function()
      local d = t.decide(pol, t.http(503), nil, { retry_budget = false })
      assert.are.same({ "ladder", "30s", 1, 30000, "retry_budget" }, { d.action, d.rung, d.rung_index, d.delay_ms, d.reason })
      local second = t.decide(pol, t.http(503), nil, { retry_budget = false, last_class = "transient", class_attempts = 1 })
      assert.are.same({ "ladder", "30s", "retry_budget" }, { second.action, second.rung, second.reason })
    end)

    it("honour Retry-After in place only up to 5 s", function()
      local p = pol:with_random(const(0))
      assert.are.equal(3000, t.decide(p, t.http(503, { retry_after_ms = 3000 })).delay_ms)
      assert.are.equal(5000, t.decide(p, t.http(503, { retry_after_ms = 120000 })).delay_ms)
    end)
  end)

  describe("throttling (429)", function()
    it("goes straight onto the ladder, and climbs it to the DLQ", function()
      local ds = t.sequence(pol, t.http(429), 4)
      assert.are.same({ "30s", "5m", "1h" }, { ds[1].rung, ds[2].rung, ds[3].rung })
      assert.are.same({ "dlq", "exhausted" }, { ds[4].action, ds[4].reason })
    end)

    it("waits at least the provider's Retry-After on a rung, up to 1 h", function()
      local function delay(ra, rung)
        return t.decide(pol, t.http(429, { retry_after_ms = ra }), nil, rung and t.on_rung(pol, rung)).delay_ms
      end
      assert.are.equal(120000, delay(120000))       -- 2 min > 30s
      assert.are.equal(30000, delay(5000))          -- the rung is longer
      assert.are.equal(600000, delay(600000, 1))    -- 10 min > 5m
      assert.are.equal(3600000, delay(86400000, 1)) -- a day is capped at 1 h
    end)
  end)

  describe("an explicit Error-Class", function()
    it("wins over the status", function()
      local d = t.decide(pol, t.http(503, { class = "permanent", code = "CARD_EXPIRED" }))
      assert.are.same({ "dlq", "permanent", "CARD_EXPIRED" }, { d.action, d.class, d.code })
      assert.are.equal("ignore", t.decide(pol, t.http(500, { class = "duplicate" })).action)
      assert.are.equal("retry", t.decide(pol, t.http(400, { class = "transient" })).action)
    end)

    it("that the table does not know goes to the DLQ under its own name", function()
      local d = t.decide(pol, t.http(402, { class = "insufficient_funds" }))
      assert.are.same({ "dlq", "insufficient_funds", "insufficient_funds" }, { d.action, d.class, d.reason })
    end)
  end)

  it("holds while the breaker is open, without a request", function()
    local d = t.decide(pol, t.circuit_open(), nil, { breaker = "open" })
    assert.are.same({ "hold", "unavailable", 1000, "circuit open" }, { d.action, d.class, d.delay_ms, d.message })
    local on_rung = t.decide(pol, t.circuit_open(), nil, t.on_rung(pol, 2, { breaker = "open" }))
    assert.are.equal("hold", on_rung.action)
  end)

  it("lints clean but for the ladder notes, and is refused under ordering partition", function()
    for _, p in ipairs(lint.lint(pol)) do assert.are.equal("info", p.level) end
    assert.are.same({}, lint.lint(pol, { ordering = "none" }))
    assert.matches("uses ladder 'provider': refused under ordering=\"partition\"", lint.errors(pol, { ordering = "partition" }))
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
    local fh = assert(io.open("examples/payments/lib/payments.lua", "rb"), "examples/payments/lib must reach policies/lib")
    fh:close()
  end)
end)
