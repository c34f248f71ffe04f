-- paths/ladder_spec.lua — retry ladders: the `ladder` schedule shape, the
-- { ladder = ... } route entries and escalation from in-place retry, rung
-- resolution from ctx.retry_count with Retry-After, rt.ladder_rungs, and
-- the errgate.testing helpers for them (decision_spec checks what a ladder
-- decision must carry).
local policy = require "errgate.policy"
local rt = require "errgate.runtime"
local schedule = require "errgate.schedule"
local t = require "errgate.testing"

local F503 = { kind = "http", status = 503 }

-- def(over) -> a policy with a transient class routed as over.route says
local function def(over)
  over = over or {}
  return policy.define {
    name = "lad", version = "1",
    classify = { { status = 503, class = "transient" }, { status = 429, class = "throttled" }, { class = "unknown" } },
    retry = over.retry or {
      quick = { attempts = 2, base = 100, jitter = "none" },
      provider = { ladder = { "30s", "5m", "1h" } },
    },
    route = over.route or {
      transient = { retry = "quick", exhausted = { ladder = "provider" } },
      throttled = { ladder = "provider" },
      default = "dlq",
    },
    examples = over.examples,
  }
end

local function define_error(over)
  local ok, err = pcall(def, over)
  assert.is_false(ok, "define accepted a bad spec")
  return err
end

local function compile_error(spec)
  local ok, err = pcall(schedule.compile_all, spec)
  assert.is_false(ok, "compile_all accepted a bad retry section")
  return err
end

describe("a ladder schedule", function()
  it("compiles duration strings: each is both the rung's name and its delay", function()
    local s = schedule.compile("p", { ladder = { "30s", "5m", "1h" } })
    assert.are.equal("ladder", s.shape)
    assert.are.same({ { name = "30s", delay_ms = 30000 }, { name = "5m", delay_ms = 300000 },
      { name = "1h", delay_ms = 3600000 } }, s.rungs)
    assert.is_true(s.honor_retry_after)
    assert.are.equal(3600000, s.retry_after_cap_ms) -- a ladder's default cap is 1 h
  end)

  it("lets a rung keep its name (its topic) with another delay", function()
    local s = schedule.compile("p", { ladder = { "30s", { name = "5m", delay = "15m" } },
      honor_retry_after = false, retry_after_cap = "10m" })
    assert.are.same({ name = "5m", delay_ms = 900000 }, s.rungs[2])
    assert.is_false(s.honor_retry_after)
    assert.are.equal(600000, s.retry_after_cap_ms)
  end)

  it("accepts 10 rungs and names up to 32 bytes of A-Z a-z 0-9 . _ -", function()
    local list = {}
    for i = 1, 10 do list[i] = { name = ("r_%d.x-Y"):format(i), delay = i .. "s" } end
    list[10].name = ("n"):rep(32)
    assert.are.equal(10, #schedule.compile("p", { ladder = list }).rungs)
  end)

  local bad = {
    { "no rungs", { ladder = {} }, "retry%.p: ladder: 1 to 10 rungs, got 0" },
    { "11 rungs", { ladder = { "1s", "2s", "3s", "4s", "5s", "6s", "7s", "8s", "9s", "10s", "11s" } },
      "retry%.p: ladder: 1 to 10 rungs, got 11" },
    { "a ladder that is not a list", { ladder = "30s, 5m" }, "retry%.p: ladder: expected a list of rungs" },
    { "a rung name with a space", { ladder = { "1m 30s" } },
      "retry%.p: rung 1: name \"1m 30s\" must be 1 to 32 of A%-Z a%-z 0%-9 %. _ %-" },
    { "a rung name with a slash", { ladder = { { name = "a/b", delay = "1s" } } }, "rung 1: name \"a/b\" must be" },
    { "a rung name of 33 bytes", { ladder = { { name = ("n"):rep(33), delay = "1s" } } },
      "rung 1: name \"n+\" must be 1 to 32" },
    { "an empty rung name", { ladder = { "30s", { name = "", delay = "1s" } } }, "rung 2: name \"\" must be" },
    { "a rung without a unit", { ladder = { "30" } }, "retry%.p: rung 1: invalid duration \"30\": a unit is required" },
    { "a number for a rung", { ladder = { 30000 } }, "rung 1: expected a duration string such as \"30s\"" },
    { "a table rung without delay", { ladder = { { name = "30s" } } }, "rung 1: delay missing" },
    { "a table rung without name", { ladder = { { delay = "30s" } } }, "rung 1: name missing" },
    { "an unknown rung key", { ladder = { { name = "a", delay = "1s", dealy = "2s" } } }, "rung 1: unknown key dealy" },
    { "a rung twice", { ladder = { "30s", "5m", "30s" } },
      "retry%.p: rung 3: name \"30s\" is already rung 1 of this ladder" },
    { "a backoff field in a ladder", { ladder = { "30s" }, attempts = 3 },
      "retry%.p: unknown field attempts %(a ladder takes ladder, honor_retry_after, retry_after_cap%)" },
    { "a bad honor_retry_after", { ladder = { "30s" }, honor_retry_after = "yes" },
      "honor_retry_after must be true or false" },
    { "a bad cap", { ladder = { "30s" }, retry_after_cap = "soon" }, "retry_after_cap: invalid duration" },
  }
  for _, row in ipairs(bad) do
    it("refuses " .. row[1], function()
      assert.matches(row[3], compile_error({ p = row[2] }))
    end)
  end

  it("may share a rung name with another ladder when the delays agree", function()
    local _, rungs = schedule.compile_all({ a = { ladder = { "30s", "5m" } }, b = { ladder = { "5m", "1h" } } })
    assert.are.same({ "30s", "5m", "1h" }, { rungs[1].name, rungs[2].name, rungs[3].name })
  end)

  it("refuses one rung name with two delays in two ladders (one topic, one delay)", function()
    local err = compile_error({ a = { ladder = { "30s" } }, b = { ladder = { { name = "30s", delay = "45s" } } } })
    assert.are.equal("retry.b: rung \"30s\" has delay 45000 ms here but 30000 ms in ladder a"
      .. " (one rung name is one topic, with one delay)", err)
  end)

  it("is refused by define() with the policy's name when rungs conflict", function()
    local err = define_error({ retry = { a = { ladder = { "1m" } },
      b = { ladder = { { name = "1m", delay = "2m" } } } },
      route = { default = { ladder = "a" } } })
    assert.matches("policy 'lad': retry%.b: rung \"1m\" has delay 120000 ms here but 60000 ms in ladder a", err)
  end)
end)

describe("ladder route entries", function()
  local bad = {
    { "the bare action ladder", { transient = "ladder", default = "dlq" },
      "route%.transient: a ladder needs a schedule: write { ladder = \"name\" }" },
    { "the long form action ladder", { transient = { action = "ladder" }, default = "dlq" },
      "route%.transient: a ladder needs a schedule: write { ladder = \"name\" }" },
    { "an undefined ladder", { transient = { ladder = "provder" }, default = "dlq" },
      "route%.transient: ladder schedule provder is not defined in retry" },
    { "a ladder named in retry", { transient = { retry = "provider" }, default = "dlq" },
      "route%.transient: retry%.provider is a ladder: write { ladder = \"provider\" }" },
    { "an in-place schedule named in ladder", { transient = { ladder = "quick" }, default = "dlq" },
      "route%.transient: retry%.quick is an in%-place schedule, not a ladder: write { retry = \"quick\" }" },
    { "retry and ladder in one entry", { transient = { retry = "quick", ladder = "provider" }, default = "dlq" },
      "route%.transient: retry and ladder in one entry: escalate with"
        .. " { retry = \"quick\", exhausted = { ladder = \"provider\" } }" },
    { "a ladder after a ladder",
      { transient = { ladder = "provider", exhausted = { ladder = "provider" } }, default = "dlq" },
      "route%.transient%.exhausted: after a ladder comes a terminal entry" },
    { "a retry after a ladder", { transient = { ladder = "provider", exhausted = "retry" }, default = "dlq" },
      "route%.transient%.exhausted: retry needs a schedule" },
    { "an unknown key in a ladder entry", { transient = { ladder = "provider", reason = "x" }, default = "dlq" },
      "route%.transient: unknown key reason" },
    { "an unknown key in an escalation's ladder",
      { transient = { retry = "quick", exhausted = { ladder = "provider", delay_ms = 1 } },
      default = "dlq" }, "route%.transient%.exhausted: unknown key delay_ms" },
  }
  for _, row in ipairs(bad) do
    it("refuse " .. row[1], function()
      assert.matches(row[3], define_error({ route = row[2] }))
    end)
  end
end)

describe("climbing a ladder", function()
  local pol = def()

  it("goes to rung retry_count + 1 with its name, index and delay", function()
    local want = { { "30s", 30000 }, { "5m", 300000 }, { "1h", 3600000 } }
    for count = 0, 2 do
      local d = pol:decide({ kind = "http", status = 429 }, nil, { retry_count = count })
      assert.are.same({ "ladder", "throttled", want[count + 1][1], count + 1, want[count + 1][2] },
        { d.action, d.class, d.rung, d.rung_index, d.delay_ms })
      assert.are.equal("throttled", d.reason)
    end
  end)

  it("is exhausted past the last rung: the default exhausted entry is dlq, reason exhausted", function()
    for _, count in ipairs({ 3, 4, 1000 }) do
      local d = pol:decide({ kind = "http", status = 429 }, nil, { retry_count = count })
      assert.are.same({ "dlq", "exhausted", 0 }, { d.action, d.reason, d.delay_ms })
      assert.is_nil(d.rung)
      assert.is_nil(d.rung_index)
    end
  end)

  it("applies a custom exhausted entry, with its own reason or exhausted", function()
    local p = def({ route = { throttled = { ladder = "provider", exhausted = "quarantine" },
      transient = { ladder = "provider", exhausted = { action = "hold", delay = "1m", reason = "parked" } },
      default = "dlq" } })
    local q = p:decide({ kind = "http", status = 429 }, nil, { retry_count = 3 })
    assert.are.same({ "quarantine", "exhausted" }, { q.action, q.reason })
    local h = p:decide(F503, nil, { retry_count = 3 })
    assert.are.same({ "hold", "parked", 60000 }, { h.action, h.reason, h.delay_ms })
  end)

  it("treats a missing or malformed retry_count as 0 (a source record)", function()
    for _, v in ipairs({ false, "x", -1, 0 / 0 }) do
      local d = pol:decide({ kind = "http", status = 429 }, nil, { retry_count = v })
      assert.are.same({ "30s", 1 }, { d.rung, d.rung_index })
    end
    assert.are.equal(2, pol:decide({ kind = "http", status = 429 }, nil, { retry_count = "1" }).rung_index)
    assert.are.equal(1, pol:decide({ kind = "http", status = 429 }).rung_index)
  end)

  it("raises a rung's delay to Retry-After, capped", function()
    local p = def({ retry = { quick = { attempts = 1, base = 1 },
      provider = { ladder = { "30s", "5m" }, retry_after_cap = "2m" } } })
    local function delay(ra, count)
      return p:decide({ kind = "http", status = 429, retry_after_ms = ra }, nil, { retry_count = count or 0 }).delay_ms
    end
    assert.are.equal(45000, delay(45000))     -- longer than the rung: the provider's wish wins
    assert.are.equal(30000, delay(10000))     -- shorter: the rung's delay stays
    assert.are.equal(120000, delay(86400000)) -- capped
    assert.are.equal(300000, delay(200000, 1)) -- the cap never lowers a rung
  end)

  it("ignores Retry-After when the ladder does not honour it", function()
    local p = def({ retry = { quick = { attempts = 1, base = 1 },
      provider = { ladder = { "30s" }, honor_retry_after = false } } })
    assert.are.equal(30000, p:decide({ kind = "http", status = 429, retry_after_ms = 90000 }).delay_ms)
  end)

  it("counts rungs on any ladder: retry_count selects the rung of whichever ladder the class routes to", function()
    local p = def({ retry = { quick = { attempts = 1, base = 1 }, a = { ladder = { "1s", "2s" } },
      b = { ladder = { "10s", "20s", "40s" } } },
      route = { transient = { ladder = "a" }, throttled = { ladder = "b" }, default = "dlq" } })
    assert.are.equal("dlq", p:decide(F503, nil, { retry_count = 2 }).action)
    assert.are.equal("40s", p:decide({ kind = "http", status = 429 }, nil, { retry_count = 2 }).rung)
  end)

  it("may be returned by a route function, which sees retry_count and rung", function()
    local seen
    local p = def({ route = function(_, _, ctx)
      seen = ctx
      if ctx.rung == "5m" then return "quarantine" end
      return { ladder = "provider", exhausted = "stop" }
    end })
    local d = p:decide(F503, nil, { retry_count = 1, rung = "30s" })
    assert.are.same({ "ladder", "5m", 2 }, { d.action, d.rung, d.rung_index })
    assert.are.same({ 1, "30s" }, { seen.retry_count, seen.rung })
    assert.are.equal("quarantine", p:decide(F503, nil, { retry_count = 2, rung = "5m" }).action)
    assert.are.same({ "stop", "exhausted" }, { p:decide(F503, nil, { retry_count = 3, rung = "1h" }).action,
      p:decide(F503, nil, { retry_count = 3, rung = "1h" }).reason })
  end)

  it("refuses a bare ladder returned by a route function as an invalid decision", function()
    local p = def({ route = function() return "ladder" end })
    local ok, err = pcall(p.decide, p, F503)
    assert.is_false(ok)
    assert.matches("^invalid decision: route function result: a ladder needs a schedule: write { ladder = \"name\" }",
      err)
  end)
end)

describe("escalation from in-place retry to a ladder", function()
  local pol = def()

  it("retries in place, then climbs the first rung once the attempts are used up", function()
    local ds = t.sequence(pol, F503, 6)
    local got = {}
    for i, d in ipairs(ds) do got[i] = d.action .. (d.rung and ":" .. d.rung or "") end
    -- a sequence walks the rungs: a record consumed from a rung climbs on at once
    assert.are.same({ "retry", "retry", "ladder:30s", "ladder:5m", "ladder:1h", "dlq" }, got)
    assert.are.same({ 100, 200, 30000, 300000, 3600000, 0 }, { ds[1].delay_ms, ds[2].delay_ms, ds[3].delay_ms,
      ds[4].delay_ms, ds[5].delay_ms, ds[6].delay_ms })
    assert.are.equal("transient", ds[3].reason)
    assert.are.equal("exhausted", ds[6].reason)
  end)

  it("skips the in-place retries for a record already on the ladder", function()
    local d = t.decide(pol, t.http(503), nil, { retry_count = 1, rung = "30s" })
    assert.are.same({ "ladder", "5m", 2 }, { d.action, d.rung, d.rung_index })
  end)

  it("climbs after max_elapsed_ms as after the attempts", function()
    local p = def({ retry = { quick = { attempts = 9, base = 10, max_elapsed = "1s" },
      provider = { ladder = { "30s" } } } })
    local d = p:decide(F503, nil, { last_class = "transient", class_attempts = 1, first_failure_ms = 0, now_ms = 1000 })
    assert.are.same({ "ladder", "30s" }, { d.action, d.rung })
  end)
end)

describe("rt.ladder_rungs", function()
  it("is the union of all ladders' rungs, unique by name: ladders by name, rungs in order", function()
    local p = def({ retry = { zeta = { ladder = { "1h", "30s" } }, alpha = { ladder = { "30s", "5m" } },
      quick = { attempts = 1, base = 1 } }, route = { transient = { ladder = "zeta" }, default = "dlq" } })
    assert.are.same({ { name = "30s", delay_ms = 30000 }, { name = "5m", delay_ms = 300000 },
      { name = "1h", delay_ms = 3600000 } }, rt.ladder_rungs(p))
  end)

  it("carries a rung's current delay, not the one its name suggests", function()
    local p = def({ retry = { quick = { attempts = 1, base = 1 },
      provider = { ladder = { "30s", { name = "5m", delay = "15m" } } } } })
    assert.are.same({ name = "5m", delay_ms = 900000 }, rt.ladder_rungs(p)[2])
  end)

  it("is an empty table without ladders", function()
    assert.are.same({}, rt.ladder_rungs(t.load("policies/default.lua")))
  end)

  it("returns a fresh table each call", function()
    local p = def()
    local a = rt.ladder_rungs(p)
    a[1].delay_ms = 1
    a[2] = nil
    assert.are.same({ name = "30s", delay_ms = 30000 }, rt.ladder_rungs(p)[1])
    assert.are.equal(3, #rt.ladder_rungs(p))
  end)

  it("refuses something that is not a policy", function()
    assert.has_error(function() rt.ladder_rungs({}) end, "invalid policy object (use rt.load_policy)")
  end)
end)

describe("examples of ladder decisions", function()
  it("compare rung and rung_index", function()
    local p = def({ examples = {
      { failure = 429, ctx = { retry_count = 2 }, expect = { action = "ladder", rung = "1h", rung_index = 3 } } } })
    assert.are.equal(1, #p.examples)
    local err = define_error({ examples = {
      { name = "second rung", failure = 429, ctx = { retry_count = 1 },
        expect = { action = "ladder", rung = "1h" } } } })
    assert.matches("example 1 %(second rung%): expected rung 1h, got 5m", err)
    err = define_error({ examples = { { failure = 429, expect = { rung_index = 2 } } } })
    assert.matches("example 1 %(http 429%): expected rung_index 2, got 1", err)
  end)
end)

describe("errgate.testing for ladders", function()
  local pol = def()

  it("fills a partial ctx given to decide from t.ctx", function()
    local d = t.decide(pol, t.http(429), nil, { retry_count = 2 })
    assert.are.same({ "ladder", "1h", 3 }, { d.action, d.rung, d.rung_index })
    local seen
    local p = def({ route = function(_, _, ctx) seen = ctx; return "dlq" end })
    t.decide(p, t.http(503), nil, { retry_count = 1 })
    assert.are.same({ t.ctx().now_ms, t.ctx().now_ms, 1 }, { seen.now_ms, seen.first_failure_ms, seen.retry_count })
  end)

  it("builds contexts with the ladder, breaker and budget fields", function()
    local c = t.ctx()
    assert.are.same({ 0, "closed", true }, { c.retry_count, c.breaker, c.retry_budget })
    assert.is_nil(c.rung)
    c = t.ctx({ retry_count = 2, rung = "5m", breaker = "half_open", retry_budget = false, last_delay_ms = 7 })
    assert.are.same({ 2, "5m", "half_open", false, 7 }, { c.retry_count, c.rung, c.breaker, c.retry_budget,
      c.last_delay_ms })
  end)

  it("on_rung gives the ctx of a record consumed from rung i", function()
    local c = t.on_rung(pol, 2, { breaker = "open" })
    assert.are.same({ 2, "5m", 1, "open" }, { c.retry_count, c.rung, c.attempt, c.breaker })
    assert.are.equal("1h", t.decide(pol, t.http(503), nil, c).rung)
    assert.has_error(function() t.on_rung(pol, 4) end, "on_rung: policy lad@1 has no rung 4")
  end)

  it("rungs is rt.ladder_rungs", function()
    assert.are.same(rt.ladder_rungs(pol), t.rungs(pol))
  end)

  it("next_ctx after a ladder decision is the record consumed from that rung", function()
    local c = t.ctx({ now_ms = 0, last_class = "transient", class_attempts = 2, attempt = 3, breaker = "half_open" })
    c = t.next_ctx(c, { action = "ladder", class = "transient", rung = "30s", rung_index = 1, delay_ms = 30000 })
    assert.are.same({ 1, 0, 1, "30s", 30000, "half_open" },
      { c.attempt, c.class_attempts, c.retry_count, c.rung, c.now_ms, c.breaker })
    assert.is_nil(c.last_class)
    c = t.next_ctx(c, { action = "retry", class = "transient", delay_ms = 100 })
    assert.are.same({ 2, "transient", 1, 1, "30s", 100 },
      { c.attempt, c.last_class, c.class_attempts, c.retry_count, c.rung, c.last_delay_ms })
  end)

  it("sequence starts from a given partial ctx", function()
    local ds = t.sequence(pol, t.http(503), 2, nil, { retry_count = 2 })
    assert.are.same({ "ladder", "dlq" }, { ds[1].action, ds[2].action })
  end)
end)
