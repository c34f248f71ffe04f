-- schedule_spec.lua — errgate.schedule: delay lists ("5s x3, 15s x5"),
-- decorrelated jitter and max elapsed time, through the DSL and the decide
-- pipeline.
local backoff = require "errgate.backoff"
local policy = require "errgate.policy"
local schedule = require "errgate.schedule"

local function const(r) return function() return r end end

describe("delay lists", function()
  it("a string schedule is a list: attempts = number of delays, no jitter", function()
    local s = schedule.compile("slow", "5s x3, 15s x2, 1m")
    assert.are.equal("list", s.backoff)
    assert.are.equal(6, s.attempts)
    assert.are.equal("none", s.jitter)
    local got = {}
    for n = 1, 8 do got[n] = backoff.delay(s, n, const(0.99)) end
    assert.are.same({ 5000, 5000, 5000, 15000, 15000, 60000, 60000, 60000 }, got) -- the last repeats
  end)

  it("a table with delays may cap attempts and add jitter", function()
    local s = schedule.compile("x", { delays = { "1s", "2s x2" }, attempts = 2, jitter = "full" })
    assert.are.equal(2, s.attempts)
    assert.are.equal(0, backoff.delay(s, 2, const(0)))
    assert.are.equal(2000, backoff.delay(s, 2, const(0.9999)))
  end)

  it("drives a route: retries at the listed delays, then exhausted", function()
    local pol = policy.define { name = "p", version = "1",
      classify = { { status = 503, class = "transient" }, { class = "unknown" } },
      retry = { ladderish = "5s x2, 30s" },
      route = { transient = { retry = "ladderish" }, default = "dlq" } }
    local delays = {}
    for streak = 1, 4 do
      local d = pol:decide({ kind = "http", status = 503 }, nil,
        { last_class = streak > 1 and "transient" or nil, class_attempts = streak - 1 })
      delays[streak] = d.action == "retry" and d.delay_ms or d.action .. "/" .. d.reason
    end
    assert.are.same({ 5000, 5000, 30000, "dlq/exhausted" }, delays)
  end)
end)

describe("decorrelated jitter", function()
  local s = schedule.compile("d", { attempts = 10, base_ms = 100, max_ms = 5000, jitter = "decorrelated" })

  it("the first retry draws from [base, 3 * base]", function()
    assert.are.equal(100, backoff.delay(s, 1, const(0)))
    assert.are.equal(300, backoff.delay(s, 1, const(0.99999)))
  end)

  it("later retries draw from [base, 3 * previous], capped at max_ms", function()
    assert.are.equal(100, backoff.delay(s, 3, const(0), 1000))
    assert.are.equal(3000, backoff.delay(s, 3, const(0.99999), 1000))
    assert.are.equal(5000, backoff.delay(s, 5, const(0.99999), 4000))
  end)

  it("stays within bounds for any random value", function()
    for _, r in ipairs({ 0, 0.1, 0.5, 0.999999, -1, 0 / 0 }) do
      for _, prev in ipairs({ 0, 100, 900, 10000 }) do
        local d = backoff.delay(s, 2, const(r), prev)
        assert.is_true(d >= 100 and d <= 5000, ("r=%s prev=%s d=%s"):format(r, prev, d))
      end
    end
  end)

  it("the decide pipeline feeds it the previous delay of the same class only", function()
    local pol = policy.define { name = "p", version = "1",
      classify = { { status = 503, class = "transient" }, { status = 504, class = "gateway" }, { class = "unknown" } },
      retry = { d = { attempts = 5, base_ms = 100, max_ms = 100000, jitter = "decorrelated" } },
      route = { transient = { retry = "d" }, gateway = { retry = "d" }, default = "dlq" } }:with_random(const(0.99999))
    local same = pol:decide({ kind = "http", status = 503 }, nil,
      { last_class = "transient", class_attempts = 1, last_delay_ms = 2000 })
    assert.are.equal(6000, same.delay_ms)
    local other = pol:decide({ kind = "http", status = 504 }, nil,
      { last_class = "transient", class_attempts = 1, last_delay_ms = 2000 })
    assert.are.equal(300, other.delay_ms) -- class changed: a fresh start from base
  end)
end)

describe("max elapsed time", function()
  local pol = policy.define { name = "p", version = "1",
    classify = { { status = 503, class = "transient" }, { class = "unknown" } },
    retry = { t = { attempts = 100, base_ms = 10, jitter = "none", max_elapsed_ms = "1m" } },
    route = { transient = { retry = "t", exhausted = "quarantine" }, default = "dlq" } }

  it("retries while the time since the first failure is under the cap", function()
    local d = pol:decide({ kind = "http", status = 503 }, nil,
      { last_class = "transient", class_attempts = 3, first_failure_ms = 1000, now_ms = 1000 + 59999 })
    assert.are.equal("retry", d.action)
  end)

  it("gives up once the cap has passed, however many attempts remain", function()
    local d = pol:decide({ kind = "http", status = 503 }, nil,
      { last_class = "transient", class_attempts = 3, first_failure_ms = 1000, now_ms = 1000 + 60000 })
    assert.are.equal("quarantine", d.action)
    assert.are.equal("exhausted", d.reason)
  end)
end)
