-- default_policy_spec.lua — every row of policies/default.lua's table, through
-- the sandboxed loader and rt.decide, as the gateway runs it.
local t = require "errgate.testing"

local pol = t.load("policies/default.lua")

local function const(r) return function() return r end end
local MAX = 0.999999 -- random() just below 1: full jitter gives the whole delay

describe("policies/default.lua", function()
  it("loads as default@1", function()
    assert.are.equal("default", pol.name)
    assert.are.equal("default@1", pol.id)
  end)

  local rows = {
    -- status, class, action
    { 408, "transient", "retry" }, { 425, "transient", "retry" }, { 429, "transient", "retry" },
    { 502, "transient", "retry" }, { 503, "transient", "retry" }, { 504, "transient", "retry" },
    { 400, "permanent", "dlq" }, { 404, "permanent", "dlq" }, { 413, "permanent", "dlq" },
    { 415, "permanent", "dlq" },
    { 422, "semantic", "quarantine" },
    { 409, "duplicate", "ignore" },
    { 500, "systemic", "stop" }, { 501, "systemic", "stop" },
    { 401, "unknown", "dlq" }, { 403, "unknown", "dlq" }, { 418, "unknown", "dlq" },
    { 505, "unknown", "dlq" }, { 302, "unknown", "dlq" },
  }
  for _, row in ipairs(rows) do
    local status, class, action = row[1], row[2], row[3]
    it(("HTTP %d -> %s -> %s"):format(status, class, action), function()
      local d = t.decide(pol, t.http(status))
      assert.are.equal(action, d.action)
      assert.are.equal(class, d.class)
      assert.are.equal("http_" .. status, d.code)
      assert.are.equal(class, d.reason)
    end)
  end

  it("timeout -> transient -> retry, code timeout", function()
    local d = t.decide(pol, t.timeout())
    assert.are.same({ "retry", "transient", "timeout" }, { d.action, d.class, d.code })
    assert.are.equal("timeout after 5000 ms", d.message)
  end)

  it("connection refused -> unavailable -> hold for 1 s", function()
    local d = t.decide(pol, t.connect_refused())
    assert.are.same({ "hold", "unavailable", "connect", 1000 }, { d.action, d.class, d.code, d.delay_ms })
    assert.are.equal("connection refused", d.message)
  end)

  it("an open circuit breaker -> unavailable -> hold for 1 s", function()
    local d = t.decide(pol, t.circuit_open(), nil, { breaker = "open" })
    assert.are.same({ "hold", "unavailable", "circuit_open", 1000 }, { d.action, d.class, d.code, d.delay_ms })
    assert.are.equal("circuit open", d.message)
  end)

  it("over the retry budget, a transient retry holds instead (no ladder to climb)", function()
    local d = t.decide(pol:with_random(const(MAX)), t.http(503), nil, { retry_budget = false })
    assert.are.same({ "hold", "transient", "retry_budget", 100 }, { d.action, d.class, d.reason, d.delay_ms })
  end)

  it("has no ladder, so no rung topics", function()
    assert.are.same({}, t.rungs(pol))
  end)

  it("an error in a Lua target -> systemic -> stop", function()
    local d = t.decide(pol, t.lua_error("handler.lua:7: attempt to index nil"))
    assert.are.same({ "stop", "systemic", "lua" }, { d.action, d.class, d.code })
    assert.are.equal("handler.lua:7: attempt to index nil", d.message)
  end)

  describe("an explicit Error-Class", function()
    it("wins over the status and routes by its name", function()
      local d = t.decide(pol, t.http(503, { class = "permanent", code = "ORDER_GONE" }))
      assert.are.same({ "dlq", "permanent", "ORDER_GONE" }, { d.action, d.class, d.code })
    end)

    it("can make a 400 retryable", function()
      assert.are.equal("retry", t.decide(pol, t.http(400, { class = "transient" })).action)
    end)

    it("that the route table does not know goes to the DLQ under its own name", function()
      local d = t.decide(pol, t.http(500, { class = "teapot_overheated" }))
      assert.are.same({ "dlq", "teapot_overheated", "teapot_overheated", "http_500" },
        { d.action, d.class, d.reason, d.code })
    end)

    it("may come from the JSON body", function()
      local body = '{"error":{"class":"semantic","code":"BAD_IBAN","message":"IBAN checksum"}}'
      local d = t.decide(pol, t.http(400, { body = body }))
      assert.are.same({ "quarantine", "semantic", "BAD_IBAN", "IBAN checksum" },
        { d.action, d.class, d.code, d.message })
    end)
  end)

  describe("transient retries", function()
    it("retry four times in place, then dead-letter as exhausted", function()
      local ds = t.sequence(pol:with_random(const(MAX)), t.http(503), 5)
      local actions, delays = {}, {}
      for i, d in ipairs(ds) do
        actions[i], delays[i] = d.action, d.delay_ms
        assert.are.equal("transient", d.class)
      end
      assert.are.same({ "retry", "retry", "retry", "retry", "dlq" }, actions)
      assert.are.same({ 100, 200, 400, 800, 0 }, delays)
      assert.are.equal("exhausted", ds[5].reason)
      assert.are.equal("transient", ds[4].reason)
    end)

    it("count attempts per class from ctx (attempt n = class_attempts + 1)", function()
      for n = 1, 5 do
        local ctx = t.ctx({ attempt = n, last_class = n > 1 and "transient" or nil, class_attempts = n - 1 })
        local d = t.decide(pol, t.http(503), nil, ctx)
        assert.are.equal(n <= 4 and "retry" or "dlq", d.action)
      end
    end)

    it("honour Retry-After as a floor", function()
      local p = pol:with_random(const(0))
      assert.are.equal(3000, t.decide(p, t.http(429, { retry_after_ms = 3000 })).delay_ms)
    end)

    it("cap Retry-After at 60 s", function()
      assert.are.equal(60000, t.decide(pol, t.http(503, { retry_after_ms = 86400000 })).delay_ms)
    end)

    it("restart the count when the class changes", function()
      local p = pol:with_random(const(MAX))
      local fs = { t.http(503), t.http(503), t.http(503), t.http(503), t.connect_refused(), t.http(503) }
      local ds = t.sequence(p, fs)
      assert.are.equal(800, ds[4].delay_ms)
      assert.are.equal("hold", ds[5].action)
      assert.are.equal("retry", ds[6].action) -- not exhausted: a fresh run of transient
      assert.are.equal(100, ds[6].delay_ms)
      local d = t.decide(p, t.http(503), nil, t.ctx({ attempt = 12, last_class = "unavailable", class_attempts = 9 }))
      assert.are.same({ "retry", 100 }, { d.action, d.delay_ms })
    end)

    it("keep full jitter within [0, 100 * 2^(n-1)]", function()
      for n = 1, 4 do
        local cap = 100 * 2 ^ (n - 1)
        local ctx = t.ctx({ last_class = n > 1 and "transient" or nil, class_attempts = n - 1 })
        assert.are.equal(0, t.decide(pol:with_random(const(0)), t.http(503), nil, ctx).delay_ms)
        assert.are.equal(cap / 2, t.decide(pol:with_random(const(0.5)), t.http(503), nil, ctx).delay_ms)
        for _ = 1, 200 do
          local ms = t.decide(pol, t.http(503), nil, ctx).delay_ms
          assert.is_true(ms >= 0 and ms <= cap, ("delay %d outside [0, %d]"):format(ms, cap))
        end
      end
    end)
  end)

  it("returns exactly the six decision fields, with a redacted message", function()
    local d = t.decide(pol, t.http(401, { message = "upstream said: Bearer abc.def is expired" }))
    local keys = {}
    for k in pairs(d) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "action", "class", "code", "delay_ms", "message", "reason" }, keys)
    assert.are.equal("upstream said: Bearer [REDACTED] is expired", d.message)
  end)
end)
