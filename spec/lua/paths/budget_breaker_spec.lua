-- paths/budget_breaker_spec.lua — the retry budget (ctx.retry_budget == false
-- turns an in-place retry into a climb or a hold) and the circuit breaker
-- (failure kind circuit_open, ctx.breaker), through the DSL and the
-- decide pipeline.
local classify = require "errgate.classify"
local failure = require "errgate.failure"
local policy = require "errgate.policy"
local t = require "errgate.testing"

local function const(r) return function() return r end end

local pol = policy.define {
  name = "bb", version = "1",
  classify = {
    { kind = "circuit_open", class = "breaker" },
    { status = 503, class = "escalating" },
    { status = 502, class = "in_place" },
    { status = 504, class = "fixed" },
    { class = "unknown" },
  },
  retry = {
    quick = { attempts = 2, base = "250ms", jitter = "none" },
    provider = { ladder = { "30s", "5m" } },
  },
  route = {
    breaker = { action = "hold", delay = "3s" },
    escalating = { retry = "quick", exhausted = { ladder = "provider", exhausted = "quarantine" } },
    in_place = { retry = "quick", exhausted = "dlq" },
    fixed = { action = "retry", delay = "7s" },
    default = "dlq",
  },
}

describe("the retry budget", function()
  it("does not change a retry that fits (retry_budget nil or true)", function()
    for _, b in ipairs({ true, "nil" }) do
      local ctx = { retry_budget = b ~= "nil" and b or nil }
      local d = pol:decide({ kind = "http", status = 503 }, nil, ctx)
      assert.are.same({ "retry", 250, "escalating" }, { d.action, d.delay_ms, d.reason })
    end
  end)

  it("over budget, an escalation climbs its ladder at once, reason retry_budget", function()
    local d = t.decide(pol, t.http(503), nil, { retry_budget = false })
    assert.are.same({ "ladder", "30s", 1, 30000, "retry_budget", "escalating" },
      { d.action, d.rung, d.rung_index, d.delay_ms, d.reason, d.class })
  end)

  it("over budget, a retry without a ladder holds for the retry's delay, reason retry_budget", function()
    local d = t.decide(pol, t.http(502), nil, { retry_budget = false, last_class = "in_place", class_attempts = 1 })
    assert.are.same({ "hold", 500, "retry_budget", "in_place" }, { d.action, d.delay_ms, d.reason, d.class })
  end)

  it("over budget, a long-form retry holds for its delay", function()
    local d = t.decide(pol, t.http(504), nil, { retry_budget = false })
    assert.are.same({ "hold", 7000, "retry_budget" }, { d.action, d.delay_ms, d.reason })
    assert.are.same({ "retry", 7000 }, { t.decide(pol, t.http(504)).action, t.decide(pol, t.http(504)).delay_ms })
  end)

  it("does not touch what is not an in-place retry", function()
    local ex = t.decide(pol, t.http(502), nil, { retry_budget = false, last_class = "in_place", class_attempts = 2 })
    assert.are.same({ "dlq", "exhausted" }, { ex.action, ex.reason })
    local climb = t.decide(pol, t.http(503), nil, { retry_budget = false, retry_count = 1 })
    assert.are.same({ "ladder", "5m", "escalating" }, { climb.action, climb.rung, climb.reason })
    local top = t.decide(pol, t.http(503), nil, { retry_budget = false, retry_count = 2 })
    assert.are.same({ "quarantine", "exhausted" }, { top.action, top.reason })
    assert.are.equal("dlq", t.decide(pol, t.http(418), nil, { retry_budget = false }).action)
  end)

  it("applies to a retry returned by a route function, which sees retry_budget", function()
    local seen = {}
    local p = policy.define { name = "fn", version = "1", classify = { { class = "c" } },
      retry = { quick = { attempts = 3, base = 40, jitter = "none" } },
      route = function(_, _, ctx) seen[#seen + 1] = ctx.retry_budget; return { retry = "quick" } end }
    assert.are.same({ "hold", 40, "retry_budget" },
      { p:decide(t.http(503), nil, { retry_budget = false }).action,
        p:decide(t.http(503), nil, { retry_budget = false }).delay_ms,
        p:decide(t.http(503), nil, { retry_budget = false }).reason })
    p:decide(t.http(503), nil, {})
    assert.are.same({ false, false, false, true }, seen)
  end)

  it("keeps Retry-After in the held delay", function()
    local d = t.decide(pol:with_random(const(0)), t.http(502, { retry_after_ms = 9000 }), nil, { retry_budget = false })
    assert.are.same({ "hold", 9000 }, { d.action, d.delay_ms })
  end)
end)

describe("the circuit breaker", function()
  it("circuit_open is a failure kind with code circuit_open and message circuit open", function()
    assert.is_true(failure.KINDS.circuit_open)
    local f = failure.normalize(t.circuit_open())
    assert.are.same({ "circuit_open", "circuit_open", "circuit open" }, { f.kind, failure.default_code(f), f.message })
    assert.are.equal("circuit open", failure.describe({ kind = "circuit_open" }))
  end)

  it("testing.circuit_open builds it", function()
    assert.are.same({ kind = "circuit_open", latency_ms = 0, message = "circuit open" }, t.circuit_open())
  end)

  it("classify rules match kind = circuit_open", function()
    local fn = classify.compile({ { kind = { "connect", "circuit_open" }, class = "down" }, { class = "u" } })
    assert.are.equal("down", (fn(failure.normalize(t.circuit_open()), {})))
    assert.are.equal("u", (fn(failure.normalize(t.timeout()), {})))
  end)

  it("routes like any class", function()
    local d = t.decide(pol, t.circuit_open(), nil, { breaker = "open" })
    assert.are.same({ "hold", "breaker", "circuit_open", 3000, "circuit open" },
      { d.action, d.class, d.code, d.delay_ms, d.message })
  end)

  it("is an example shorthand", function()
    local p = policy.define { name = "ex", version = "1", classify = { { kind = "circuit_open", class = "b" },
      { class = "u" } },
      route = { b = "hold", default = "dlq" },
      examples = { { failure = "circuit_open", expect = { action = "hold", class = "b" } } } }
    assert.are.equal(1, #p.examples)
  end)

  it("ctx.breaker reaches route functions: closed, open or half_open, closed by default", function()
    local seen = {}
    local p = policy.define { name = "fn", version = "1", classify = { { class = "c" } },
      route = function(_, _, ctx)
        seen[#seen + 1] = ctx.breaker
        return ctx.breaker == "closed" and "dlq" or "hold"
      end }
    assert.are.equal("dlq", p:decide(t.http(503)).action)
    assert.are.equal("hold", p:decide(t.http(503), nil, { breaker = "open" }).action)
    assert.are.equal("hold", p:decide(t.circuit_open(), nil, { breaker = "half_open" }).action)
    assert.are.equal("dlq", p:decide(t.http(503), nil, { breaker = "sideways" }).action)
    assert.are.same({ "closed", "open", "half_open", "closed" }, seen)
  end)
end)
