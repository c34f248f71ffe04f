-- decision_spec.lua — errgate.decision: validation and defaults of what C receives.
local decision = require "errgate.decision"
local policy = require "errgate.policy"
local rt = require "errgate.runtime"

local F = { kind = "http", status = 503 }

local function routed(fn)
  return policy.define { name = "fn", version = 1, classify = { { class = "c" } }, route = fn }
end

describe("errgate.decision.finalize", function()
  it("fills the defaults", function()
    local d = decision.finalize({ action = "dlq" }, F)
    assert.are.same({ action = "dlq", class = "unknown", code = "http_503", reason = "unknown",
      delay_ms = 0, message = "HTTP 503" }, d)
  end)

  it("gives hold a default delay and zeroes the delay of other actions", function()
    assert.are.equal(1000, decision.finalize({ action = "hold" }, F).delay_ms)
    assert.are.equal(0, decision.finalize({ action = "stop", delay_ms = 5 }, F).delay_ms)
  end)

  it("accepts duration strings for delay_ms", function()
    assert.are.equal(2500, decision.finalize({ action = "retry", delay_ms = "2.5s" }, F).delay_ms)
  end)

  it("accepts every action the C core knows", function()
    for _, a in ipairs({ "retry", "ladder", "dlq", "quarantine", "ignore", "hold", "stop" }) do
      assert.are.equal(a, decision.finalize({ action = a, delay_ms = 1, rung = "30s", rung_index = 1 }, F).action)
    end
  end)

  local bad = {
    { { action = "explode" }, "unknown action explode" },
    { { action = nil }, "unknown action nil" },
    { { action = "retry" }, "retry needs delay_ms" },
    { { action = "retry", delay_ms = -1 }, "delay_ms: invalid duration %-1" },
    { { action = "hold", delay_ms = "soon" }, "delay_ms: invalid duration" },
    { { action = "dlq", class = 7 }, "class must be a string" },
    { { action = "dlq", code = {} }, "code must be a string" },
    { { action = "dlq", reason = true }, "reason must be a string" },
    { { action = "dlq", class = ("x"):rep(200) }, "class longer than 128 bytes" },
    { { action = "dlq", message = 5 }, "message must be a string" },
    { { action = "ladder", rung_index = 1, delay_ms = 1 }, "ladder needs a rung name" },
    { { action = "ladder", rung = "", rung_index = 1, delay_ms = 1 }, "ladder needs a rung name" },
    { { action = "ladder", rung = 30, rung_index = 1, delay_ms = 1 }, "ladder needs a rung name" },
    { { action = "ladder", rung = "a b", rung_index = 1, delay_ms = 1 }, "rung \"a b\" must be 1 to 32 of" },
    { { action = "ladder", rung = ("r"):rep(33), rung_index = 1, delay_ms = 1 }, "rung \"r+\" must be 1 to 32" },
    { { action = "ladder", rung = "30s", delay_ms = 1 }, "ladder needs rung_index, an integer >= 1, got nil" },
    { { action = "ladder", rung = "30s", rung_index = 0, delay_ms = 1 },
      "ladder needs rung_index, an integer >= 1, got 0" },
    { { action = "ladder", rung = "30s", rung_index = 1.5, delay_ms = 1 },
      "ladder needs rung_index, an integer >= 1, got 1%.5" },
    { { action = "ladder", rung = "30s", rung_index = 1 }, "ladder needs delay_ms" },
    { { action = "ladder", rung = "30s", rung_index = 1, delay_ms = -5 }, "delay_ms: invalid duration" },
  }
  for _, row in ipairs(bad) do
    it("refuses: " .. row[2], function()
      local ok, err = pcall(decision.finalize, row[1], F)
      assert.is_false(ok)
      assert.matches("^invalid decision: " .. row[2], err)
    end)
  end

  it("keeps rung and rung_index of a ladder, and only of a ladder", function()
    local d = decision.finalize({ action = "ladder", rung = "5m", rung_index = 2, delay_ms = "5m" }, F)
    assert.are.same({ action = "ladder", class = "unknown", code = "http_503", reason = "unknown", delay_ms = 300000,
      message = "HTTP 503", rung = "5m", rung_index = 2 }, d)
    local r = decision.finalize({ action = "retry", rung = "5m", rung_index = 2, delay_ms = 5 }, F)
    assert.is_nil(r.rung)
    assert.is_nil(r.rung_index)
  end)

  it("refuses a draft that is not a table", function()
    assert.has_error(function() decision.finalize("dlq", F) end, "invalid decision: expected a table, got string")
  end)

  it("truncates the message to 512 bytes", function()
    local d = decision.finalize({ action = "dlq", message = ("m"):rep(5000) }, F)
    assert.are.equal(512, #d.message)
  end)
end)

describe("rt.decide with a route function", function()
  it("raises invalid decision for an unknown action", function()
    local pol = routed(function() return "explode" end)
    local ok, err = pcall(rt.decide, pol, F, {}, {})
    assert.is_false(ok)
    assert.matches("^invalid decision: route function result: unknown action explode", err)
  end)

  it("raises invalid decision when the function returns nothing", function()
    assert.has_error(function() rt.decide(routed(function() end), F, {}, {}) end,
      "invalid decision: route function returned nothing")
  end)

  it("refuses a route that tries to change the class", function()
    local pol = routed(function() return { action = "dlq", class = "other" } end)
    local ok, err = pcall(rt.decide, pol, F, {}, {})
    assert.is_false(ok)
    assert.matches("cannot change it", err)
  end)

  it("accepts a full decision table and keeps the classified class", function()
    local pol = routed(function(_, _, ctx)
      return { action = "retry", delay_ms = "2s", reason = "because", code = "C" .. ctx.streak }
    end)
    local d = rt.decide(pol, F, {}, { last_class = "c", class_attempts = 2 })
    assert.are.same({ action = "retry", class = "c", code = "C3", reason = "because", delay_ms = 2000,
      message = "HTTP 503" }, d)
  end)

  it("passes the route function ctx with class, code and streak", function()
    local seen
    local pol = routed(function(_, _, ctx) seen = ctx; return "ignore" end)
    rt.decide(pol, F, {}, { attempt = 6, last_class = "other", class_attempts = 5, ordering = "key", now_ms = 9 })
    assert.are.same({ attempt = 6, last_class = "other", class_attempts = 5, ordering = "key", now_ms = 9,
      first_failure_ms = 9, class = "c", code = "http_503", streak = 1,
      retry_count = 0, breaker = "closed", retry_budget = true }, seen)
  end)

  it("may use a schedule by name", function()
    local pol = policy.define { name = "fn2", version = 1, classify = { { class = "c" } },
      retry = { s = { attempts = 1, base = 10, jitter = "none" } },
      route = function() return { retry = "s", exhausted = "quarantine" } end }
    assert.are.same({ "retry", 10 }, { rt.decide(pol, F, {}, {}).action, rt.decide(pol, F, {}, {}).delay_ms })
    local d = rt.decide(pol, F, {}, { last_class = "c", class_attempts = 1 })
    assert.are.same({ "quarantine", "exhausted" }, { d.action, d.reason })
  end)
end)

describe("rt.decide", function()
  it("refuses something that is not a policy", function()
    assert.has_error(function() rt.decide({}, F, {}, {}) end, "invalid policy object (use rt.load_policy)")
  end)

  it("raises on an invalid failure", function()
    local pol = routed(function() return "dlq" end)
    assert.has_error(function() rt.decide(pol, { kind = "smoke" }, {}, {}) end,
      "invalid failure: unknown kind smoke (http, timeout, connect, lua, circuit_open, recorded)")
  end)

  it("lets an error inside a policy function propagate (C applies the fallback)", function()
    local pol = routed(function() error("policy bug") end)
    local ok, err = pcall(rt.decide, pol, F, {}, {})
    assert.is_false(ok)
    assert.matches("policy bug", err)
  end)
end)

describe("replay (inbox mode)", function()
  local R = { kind = "recorded", code = "NullPointerException" }

  it("decides replay with the topic and `after` as delay_ms", function()
    local pol = policy.define { name = "r", version = 1, classify = { { class = "bug" } },
      route = { bug = { replay = "original", after = "5s" }, default = "dlq" } }
    local d = rt.decide(pol, R, {}, {})
    assert.are.same({ "replay", "original", 5000 }, { d.action, d.replay, d.delay_ms })
    assert.is_nil(d.rung)
  end)

  it("replays at once to a named topic without after", function()
    local d = rt.decide(routed(function() return { replay = "orders-manual" } end), R, {}, {})
    assert.are.same({ "replay", "orders-manual", 0 }, { d.action, d.replay, d.delay_ms })
  end)

  it("refuses a topic name Kafka would refuse, and unknown keys", function()
    for _, e in ipairs({ { replay = "a b" }, { replay = "" }, { replay = ("x"):rep(250) }, { replay = "t", when = 1 },
                         { replay = "t", after = "soon" } }) do
      assert.has_error(function() rt.decide(routed(function() return e end), R, {}, {}) end)
    end
    assert.has_error(function()
      decision.finalize({ action = "replay" }, R)
    end, 'invalid decision: replay needs "original" or a topic name (1 to 249 of A-Z a-z 0-9 . _ -), got nil')
  end)
end)
