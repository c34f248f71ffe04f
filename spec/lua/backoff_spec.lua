-- backoff_spec.lua — errgate.backoff: exponential/fixed delays, caps, jitter, Retry-After.
local backoff = require "errgate.backoff"
local schedule = require "errgate.schedule"

local function const(r) return function() return r end end

local function sched(over)
  local spec = { attempts = 10, base = 100, max = 5000, jitter = "none" }
  for k, v in pairs(over or {}) do spec[k] = v end
  return schedule.compile("t", spec)
end

describe("errgate.backoff.base", function()
  it("doubles from base_ms and caps at max_ms", function()
    local s = sched()
    local got = {}
    for n = 1, 8 do got[n] = backoff.base(s, n) end
    assert.are.same({ 100, 200, 400, 800, 1600, 3200, 5000, 5000 }, got)
  end)

  it("stays at the cap for absurd retry numbers (no overflow, no NaN)", function()
    assert.are.equal(5000, backoff.base(sched(), 1e6))
    assert.are.equal(0, backoff.base(sched({ base = 0 }), 1e6))
  end)

  it("is flat for a fixed schedule", function()
    local s = sched({ backoff = "fixed", base = "2s" })
    assert.are.equal(2000, backoff.base(s, 1))
    assert.are.equal(2000, backoff.base(s, 7))
  end)
end)

describe("errgate.backoff.jitter", function()
  it("none keeps the delay", function()
    assert.are.equal(800, backoff.jitter("none", 800, const(0)))
  end)

  it("full spans [0, d] and follows the injected random", function()
    assert.are.equal(0, backoff.jitter("full", 800, const(0)))
    assert.are.equal(400, backoff.jitter("full", 800, const(0.5)))
    assert.are.equal(800, backoff.jitter("full", 800, const(0.999999)))
  end)

  it("equal keeps half and spans [d/2, d]", function()
    assert.are.equal(400, backoff.jitter("equal", 800, const(0)))
    assert.are.equal(800, backoff.jitter("equal", 800, const(0.999999)))
    assert.are.equal(600, backoff.jitter("equal", 800, const(0.5)))
  end)

  it("clamps a misbehaving random source into bounds", function()
    assert.are.equal(800, backoff.jitter("full", 800, const(1)))
    assert.are.equal(800, backoff.jitter("full", 800, const(42)))
    assert.are.equal(0, backoff.jitter("full", 800, const(-3)))
    assert.are.equal(400, backoff.jitter("equal", 800, const(0 / 0)))
  end)

  it("stays within bounds with the real math.random", function()
    for _ = 1, 2000 do
      local d = backoff.jitter("full", 1000, math.random)
      assert.is_true(d >= 0 and d <= 1000 and d % 1 == 0)
      local e = backoff.jitter("equal", 1000, math.random)
      assert.is_true(e >= 500 and e <= 1000 and e % 1 == 0)
    end
  end)
end)

describe("errgate.backoff.retry_delay", function()
  local s = sched({ jitter = "full", retry_after_cap = "60s" })

  it("uses Retry-After as a floor", function()
    local ms, honoured = backoff.retry_delay(s, 1, 3000, const(0.999999))
    assert.are.equal(3000, ms)
    assert.is_true(honoured)
  end)

  it("keeps the backoff when it is already longer than Retry-After", function()
    local ms, honoured = backoff.retry_delay(s, 4, 50, const(0.999999))
    assert.are.equal(800, ms)
    assert.is_false(honoured)
  end)

  it("caps Retry-After at retry_after_cap_ms", function()
    assert.are.equal(60000, (backoff.retry_delay(s, 1, 3600000, const(0))))
  end)

  it("ignores Retry-After when the schedule does not honour it", function()
    local off = sched({ jitter = "none", honor_retry_after = false })
    assert.are.equal(100, (backoff.retry_delay(off, 1, 3000, const(0))))
  end)
end)

describe("errgate.schedule.compile", function()
  it("fills defaults", function()
    local s = schedule.compile("x", { attempts = 3, base = "1s" })
    assert.are.same({
      name = "x", shape = "backoff", attempts = 3, backoff = "exponential", multiplier = 2, jitter = "full",
      base_ms = 1000, max_ms = 30000, honor_retry_after = true, retry_after_cap_ms = 60000,
    }, s)
  end)

  local bad = {
    { { base = 100 }, "attempts must be an integer" },
    { { attempts = -1, base = 100 }, "attempts must be an integer" },
    { { attempts = 1.5, base = 100 }, "attempts must be an integer" },
    { { attempts = 3 }, "base missing" },
    { { attempts = 3, base = "fast" }, "base: invalid duration" },
    { { attempts = 3, base = "5s", max = "1s" }, "max %(1s%) is below base %(5s%)" },
    { { attempts = 3, base = 1, jitter = "sometimes" }, "jitter sometimes unknown" },
    { { delays = "5s x3, soon" }, "delays: invalid duration \"soon\"" },
    { { delays = "" }, "delays: at least one delay" },
    { { attempts = 3, base = 1, backoff = "list" }, "backoff \"list\" goes with delays" },
    { { attempts = 3, base = 1, max_elapsed = "forever" }, "max_elapsed: invalid duration" },
    { { attempts = 3, base = 1, backoff = "linear" }, "backoff linear unknown" },
    { { attempts = 3, base = 1, honor_retry_after = "yes" }, "honor_retry_after must be true or false" },
    { { attempts = 3, base = 1, atempts = 3 }, "unknown field atempts" },
  }
  for _, row in ipairs(bad) do
    it("refuses: " .. row[2], function()
      local ok, err = pcall(schedule.compile, "x", row[1])
      assert.is_false(ok)
      assert.matches("^retry%.x: .*" .. row[2], err)
    end)
  end
end)
