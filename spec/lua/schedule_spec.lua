-- schedule_spec.lua — errgate.schedule: delay lists ("5s x3, 15s x5"),
-- Spring-style bare-millisecond lists, the exponential multiplier,
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
  local s = schedule.compile("d", { attempts = 10, base = 100, max = 5000, jitter = "decorrelated" })

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
      retry = { d = { attempts = 5, base = 100, max = 100000, jitter = "decorrelated" } },
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
    retry = { t = { attempts = 100, base = 10, jitter = "none", max_elapsed = "1m" } },
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

describe("Spring-style delay lists and the multiplier", function()
  it("a bare number inside a delay list is milliseconds: \"5000x3,10000x2\"", function()
    local s = schedule.compile("spring", "5000x3,10000x2")
    assert.are.equal(5, s.attempts)
    local got = {}
    for n = 1, 6 do got[n] = backoff.delay(s, n, const(0.5)) end
    assert.are.same({ 5000, 5000, 5000, 10000, 10000, 10000 }, got)
    assert.are.same({ 250, 1000 }, schedule.compile("mixed", { delays = { "250", "1s" } }).delays)
  end)

  it("outside a list a bare number string is still refused", function()
    local ok, err = pcall(schedule.compile, "x", { base = "100", attempts = 2 })
    assert.is_false(ok)
    assert.matches("a unit is required", err)
  end)

  it("an exponential schedule takes a multiplier (default 2)", function()
    local s = schedule.compile("x3", { attempts = 5, base = 100, multiplier = 3, max = "10s", jitter = "none" })
    local got = {}
    for n = 1, 6 do got[n] = backoff.delay(s, n) end
    assert.are.same({ 100, 300, 900, 2700, 8100, 10000 }, got) -- capped at max_ms
    local two = schedule.compile("x2", { attempts = 3, base = 100, jitter = "none" })
    assert.are.equal(2, two.multiplier)
    assert.are.same({ 100, 200, 400 }, { backoff.delay(two, 1), backoff.delay(two, 2), backoff.delay(two, 3) })
    local half = schedule.compile("x1.5", { attempts = 3, base = 1000, multiplier = 1.5, jitter = "none" })
    assert.are.same({ 1000, 1500, 2250 }, { backoff.delay(half, 1), backoff.delay(half, 2), backoff.delay(half, 3) })
    local far = schedule.compile("far",
      { attempts = 1000, base = 100, multiplier = 10, max = "1h", jitter = "none" })
    assert.are.equal(3600000, backoff.delay(far, 1000)) -- 10^999 overflows to inf: still the cap
  end)

  it("refuses a multiplier out of range, of the wrong type, or on a non-exponential schedule", function()
    for _, bad in ipairs({
      { { attempts = 2, base = 100, multiplier = 0.5 }, "multiplier must be a number from 1 to 10" },
      { { attempts = 2, base = 100, multiplier = 11 }, "multiplier must be a number from 1 to 10" },
      { { attempts = 2, base = 100, multiplier = "2" }, "multiplier must be a number" },
      { { attempts = 2, base = 100, multiplier = 0 / 0 }, "multiplier must be a number" },
      { { attempts = 2, base = 100, backoff = "fixed", multiplier = 3 }, "exponential\" only" },
      { { delays = "1s x2", multiplier = 3 }, "exponential\" only" },
    }) do
      local ok, err = pcall(schedule.compile, "bad", bad[1])
      assert.is_false(ok)
      assert.matches(bad[2], err, 1, true)
    end
  end)
end)

describe("repeated rungs (seed 003: a fixed-delay schedule of 33 steps, non-blocking)", function()
  local pol = policy.define { name = "fixed33", version = "1",
    classify = { { status = 503, class = "transient" }, { class = "unknown" } },
    retry = { fixed = { ladder = { { delay = "30s", times = 33 } } } },
    route = { transient = { ladder = "fixed", exhausted = "dlq" }, default = "dlq" } }

  it("one rung topic serves the 33 steps: 33 compiled steps, one rung in the union", function()
    local s = schedule.compile("fixed", { ladder = { { delay = "30s", times = 33 } } })
    assert.are.equal(33, #s.rungs)
    for i = 1, 33 do assert.are.same({ name = "30s", delay_ms = 30000 }, s.rungs[i]) end
    assert.are.same({ { name = "30s", delay_ms = 30000 } }, pol.rungs)
  end)

  it("climbs step 1..33 on rung 30s, then the exhausted entry", function()
    for rc = 0, 32 do
      local d = pol:decide({ kind = "http", status = 503 }, nil, { retry_count = rc })
      assert.are.same({ "ladder", "30s", rc + 1, 30000 }, { d.action, d.rung, d.rung_index, d.delay_ms })
    end
    local d = pol:decide({ kind = "http", status = 503 }, nil, { retry_count = 33 })
    assert.are.same({ "dlq", "exhausted" }, { d.action, d.reason })
  end)

  it("mixes with plain rungs and keeps a given name", function()
    local s = schedule.compile("m", { ladder = { "5s", { name = "slow", delay = "1m", times = 3 }, "1h" } })
    local names = {}
    for i, r in ipairs(s.rungs) do names[i] = r.name .. "=" .. r.delay_ms end
    assert.are.same({ "5s=5000", "slow=60000", "slow=60000", "slow=60000", "1h=3600000" }, names)
  end)

  it("refuses a bad times, too many steps, and still 11 distinct rungs", function()
    for _, t in ipairs({ 0, -1, 1.5, "3", 0 / 0, 1001 }) do
      assert.has_error(function() schedule.compile("b", { ladder = { { delay = "30s", times = t } } }) end,
        ("retry.b: rung 1: times must be an integer from 1 to 1000 (steps on this rung), got %s"):format(tostring(t)))
    end
    assert.has_error(function()
      schedule.compile("b", { ladder = { { delay = "1s", times = 600 }, { delay = "2s", times = 401 } } })
    end, "retry.b: ladder: at most 1000 steps in all (times included)")
    local eleven = {}
    for i = 1, 11 do eleven[i] = i .. "s" end
    assert.has_error(function() schedule.compile("b", { ladder = eleven }) end,
      "retry.b: ladder: 1 to 10 rungs, got 11 (a rung may repeat: { delay = \"30s\", times = 33 })")
    assert.has_error(function() schedule.compile("b", { ladder = { "30s", { delay = "30s", times = 2 } } }) end,
      "retry.b: rung 2: name \"30s\" is already rung 1 of this ladder (repeat a rung with times = N)")
  end)
end)

describe("attempts above 1,000 (seed 003: an unlimited exponential retry)", function()
  it("is refused without max_elapsed, with a reason naming it", function()
    for _, a in ipairs({ 1001, 5000, "unlimited" }) do
      assert.has_error(function() schedule.compile("u", { attempts = a, base = "100ms" }) end,
        ("retry.u: attempts %s needs max_elapsed (e.g. max_elapsed = \"1h\"): above 1000 attempts a schedule must be"
          .. " bounded in time, or it would hold its record for ever"):format(tostring(a)))
    end
    assert.has_error(function() schedule.compile("u", { attempts = 1e12, base = "100ms", max_elapsed = "1h" }) end)
    assert.has_error(function() schedule.compile("u", { attempts = "lots", base = "100ms", max_elapsed = "1h" }) end)
  end)

  it("is allowed with max_elapsed, and max_elapsed ends it", function()
    local s = schedule.compile("u", { attempts = "unlimited", base = "100ms", max = "1m", max_elapsed = "1h" })
    assert.are.equal(1000000000, s.attempts)
    assert.are.equal(5000, schedule.compile("v", { attempts = 5000, base = "1s", max_elapsed = "2h" }).attempts)
    assert.are.equal(60000, backoff.delay(s, 100000, const(0.99999)) )
    local pol = policy.define { name = "unl", version = "1",
      classify = { { status = 503, class = "transient" }, { class = "unknown" } },
      retry = { forever = { attempts = "unlimited", base = "100ms", max = "1m", max_elapsed = "1h", jitter = "none" } },
      route = { transient = { retry = "forever" }, default = "dlq" } }
    local t0 = 1700000000000
    local d = pol:decide({ kind = "http", status = 503 }, nil,
      { last_class = "transient", class_attempts = 4999, now_ms = t0 + 3599000, first_failure_ms = t0 })
    assert.are.same({ "retry", 60000 }, { d.action, d.delay_ms })
    d = pol:decide({ kind = "http", status = 503 }, nil,
      { last_class = "transient", class_attempts = 5000, now_ms = t0 + 3600000, first_failure_ms = t0 })
    assert.are.same({ "dlq", "exhausted" }, { d.action, d.reason })
  end)
end)
