-- pipeline_policy_spec.lua — the shipped policies/pipeline.lua, row by row,
-- through errgate.testing (the same loader and decide path as the gateway).
local t = require "errgate.testing"

describe("policies/pipeline.lua", function()
  local pol = t.load("policies/pipeline.lua")

  local rows = {
    { t.timeout(), "retry", "transient" },
    { t.http(502), "retry", "transient" },
    { t.http(503), "retry", "transient" },
    { t.http(504), "retry", "transient" },
    { t.http(500, { message = "deadlock detected" }), "stop", "bug" }, -- status rules come first for 500
    { t.http(599, { message = "connection reset by peer" }), "retry", "transient" },
    { t.http(429), "retry", "overload" },
    { t.http(503, { code = "overloaded" }), "retry", "overload" },
    { t.connect_refused(), "hold", "unavailable" },
    { t.circuit_open(), "hold", "unavailable" },
    { t.http(400), "dlq", "format" },
    { t.http(413), "dlq", "format" },
    { t.http(415), "dlq", "format" },
    { t.http(418, { code = "invalid_currency" }), "dlq", "format" },
    { t.http(418, { code = "parse_error" }), "dlq", "format" },
    { t.http(400, { code = "schema_v3_unknown_field" }), "quarantine", "schema" },
    { t.http(406), "quarantine", "schema" },
    { t.http(422), "quarantine", "semantic" },
    { t.http(404), "retry", "reference" },
    { t.http(400, { code = "missing_reference" }), "retry", "reference" },
    { t.http(409), "ignore", "duplicate" },
    { t.http(410), "ignore", "stale" },
    { t.http(412), "ignore", "stale" },
    { t.http(400, { code = "stale" }), "ignore", "stale" },
    { t.http(501), "stop", "bug" },
    { t.lua_error("boom"), "stop", "bug" },
    { t.http(418), "dlq", "unknown" },
    { t.http(503, { class = "semantic" }), "quarantine", "semantic" },
  }
  for _, row in ipairs(rows) do
    local f, action, class = row[1], row[2], row[3]
    it(("%s -> %s (%s)"):format(f.status and ("http " .. f.status .. (f.code and " " .. f.code or "") .. (f.message and " '" .. f.message .. "'" or "")) or f.kind, action, class), function()
      local d = t.decide(pol, f)
      assert.are.equal(action, d.action)
      assert.are.equal(class, d.class)
    end)
  end

  it("transient: 6 retries then DLQ exhausted", function()
    local seen = {}
    for n = 1, 7 do
      local d = t.decide(pol, t.http(503), nil, t.ctx { last_class = n > 1 and "transient" or nil, class_attempts = n - 1 })
      seen[n] = d.action
    end
    assert.are.same({ "retry", "retry", "retry", "retry", "retry", "retry", "dlq" }, seen)
  end)

  it("transient: gives up after 2 minutes however many attempts remain", function()
    local d = t.decide(pol, t.http(503), nil,
      t.ctx { last_class = "transient", class_attempts = 1, first_failure_ms = 0, now_ms = 120000 })
    assert.are.equal("dlq", d.action)
    assert.are.equal("exhausted", d.reason)
  end)

  it("overload climbs 1s x3, 5s x3, 30s x4, then holds (never dead-letters)", function()
    local delays = {}
    for n = 1, 11 do
      local d = t.decide(pol, t.http(429), nil, t.ctx { last_class = n > 1 and "overload" or nil, class_attempts = n - 1 })
      delays[n] = d.action == "retry" and d.delay_ms or d.action
    end
    assert.are.same({ 1000, 1000, 1000, 5000, 5000, 5000, 30000, 30000, 30000, 30000, "hold" }, delays)
  end)

  it("overload honours Retry-After up to 5 minutes", function()
    assert.are.equal(120000, t.decide(pol, t.http(429, { retry_after_ms = 120000 })).delay_ms)
    assert.are.equal(300000, t.decide(pol, t.http(429, { retry_after_ms = 3600000 })).delay_ms)
  end)

  it("missing reference data: 10s x3 then DLQ", function()
    local out = {}
    for n = 1, 4 do
      local d = t.decide(pol, t.http(404), nil, t.ctx { last_class = n > 1 and "reference" or nil, class_attempts = n - 1 })
      out[n] = d.action == "retry" and d.delay_ms or d.action .. "/" .. d.reason
    end
    assert.are.same({ 10000, 10000, 10000, "dlq/exhausted" }, out)
  end)

  it("a class change resets the count (overload after transient starts at 1s)", function()
    local d = t.decide(pol, t.http(429), nil, t.ctx { last_class = "transient", class_attempts = 5 })
    assert.are.equal(1000, d.delay_ms)
  end)
end)
