-- paths/decide_spec.lua — the decision as the C core makes it (rt.decider:
-- separate values in and out, reused tables, classify plans, route entries
-- resolved without a ctx table, remembered strings) gives exactly the
-- decision of a plain reference pipeline written here from the documented
-- rules (first matching classify rule, the documented ctx defaults,
-- route.resolve on a ctx table, decision.finalize), over thousands of
-- failures and contexts, for the shipped policies and for policies with a
-- header rule, redact patterns, a long-form retry, decorrelated jitter and
-- a time cap; plus the pieces one by one.
local backoff = require "errgate.backoff"
local classify = require "errgate.classify"
local decision = require "errgate.decision"
local failure = require "errgate.failure"
local policy = require "errgate.policy"
local redact = require "errgate.redact"
local route = require "errgate.route"
local rt = require "errgate.runtime"
local t = require "errgate.testing"

local function const(v) return function() return v end end

-- load_with_spec(path) -> policy, the spec table its file passed to define
local function load_with_spec(path)
  local define, captured = policy.define, nil
  policy.define = function(spec)
    captured = spec
    return define(spec)
  end
  local ok, pol = pcall(t.load, path)
  policy.define = define
  assert(ok, pol)
  return pol, captured
end

-- ---------------------------------------------------------------- reference

local function status_matches(want, s)
  if type(want) == "number" then return s == want end
  if type(want) == "string" then
    local lo = tonumber(want:sub(1, 1)) * 100
    return s ~= nil and s >= lo and s <= lo + 99
  end
  if want.range then return s ~= nil and s >= want.range[1] and s <= want.range[2] end
  for _, w in ipairs(want) do
    if status_matches(w, s) then return true end
  end
  return false
end

-- the first rule whose matchers all hold (errgate.classify's header)
local function ref_classify(rules, f, record)
  for _, r in ipairs(rules) do
    local ok = true
    if r.explicit then ok = f.class_hint ~= nil end
    if ok and r.kind then
      ok = false
      for _, k in ipairs(type(r.kind) == "table" and r.kind or { r.kind }) do
        if k == f.kind then ok = true end
      end
    end
    if ok and r.status then ok = status_matches(r.status, f.status) end
    if ok and r.code then ok = f.code ~= nil and string.find(f.code, r.code) ~= nil end
    if ok and r.message then ok = f.message ~= nil and string.find(f.message, r.message, 1, true) ~= nil end
    if ok and r.header then
      local h = record.headers
      local got = type(h) == "table" and h[r.header[1]] or nil
      if r.header[2] == nil then ok = got ~= nil else ok = got == r.header[2] end
    end
    if ok then
      if r.explicit then return f.class_hint, r.set_code or f.code end
      return r.class, r.set_code
    end
  end
end

-- the ctx a route sees, from errgate.policy's header
local function ref_ctx(ctx, class, code)
  local n = tonumber(ctx.retry_count)
  local prev = tonumber(ctx.class_attempts) or 0
  local same = class == ctx.last_class
  return {
    retry_count = (n == nil or n ~= n or n < 0) and 0 or math.floor(n),
    rung = type(ctx.rung) == "string" and ctx.rung or nil,
    breaker = ({ closed = true, open = true, half_open = true })[ctx.breaker] and ctx.breaker or "closed",
    retry_budget = ctx.retry_budget ~= false,
    attempt = tonumber(ctx.attempt) or 1,
    last_class = ctx.last_class,
    class_attempts = prev,
    ordering = ctx.ordering or "partition",
    now_ms = tonumber(ctx.now_ms) or 0,
    first_failure_ms = tonumber(ctx.first_failure_ms) or tonumber(ctx.now_ms) or 0,
    last_delay_ms = same and tonumber(ctx.last_delay_ms) or nil,
    class = class,
    code = code,
    streak = same and prev + 1 or 1,
  }
end

-- ref_decide(pol, spec, f, record, ctx) -> decision, or nil and the error
local function ref_decide(pol, spec, f, record, ctx)
  return pcall(function()
    f = failure.normalize(f)
    local class, code = ref_classify(spec.classify, f, record or {})
    class = class or "unknown"
    code = code or f.code or failure.default_code(f)
    local _, entries = route.compile(spec.route, pol.schedules)
    local draft = route.resolve(entries[class] or entries.default, f, ref_ctx(ctx, class, code), pol.random)
    draft.class = class
    draft.code = draft.code or code
    return decision.finalize(draft, f, pol.redact)
  end)
end

-- ------------------------------------------------------------------ inputs

-- a small deterministic generator, so a failure is reproducible by its index
local function lcg(seed)
  local s = seed
  return function(n)
    s = (s * 1103515245 + 12345) % 2147483648
    return math.floor(s / 65536) % n + 1 -- the high bits: the low ones cycle
  end
end

local function pick(r, list) return list[r(#list)] end

local KINDS = { "http", "http", "http", "http", "timeout", "connect", "lua", "circuit_open" }
local STATUSES = { false, 400, 404, 406, 409, 410, 412, 413, 415, 418, 422, 425, 429, 500, 501, 502, 503, 504,
                   599, 503.5, "503", 1200, 0 }
local CODES = { false, false, false, "overloaded", "schema_v2", "invalid_amount", "parse_error",
                "missing_reference", "stale", "", "E42" }
local HINTS = { false, false, false, false, "permanent", "duplicate", "transient", "made_up" }
local MESSAGES = { false, false, "deadlock detected", "connection reset by peer", "token=abc123 rejected",
                   "quota exceeded", ("long "):rep(80) }
local BODIES = { false, false, "plain text", '{"error": {"code": "parse_error", "message": "bad json"}}',
                 ' {"error": "database is down"}', '{"error": {"class": "duplicate"}}' }
local RETRY_AFTER = { false, false, 0, 2000, 90000, -5 }
local NOW = 1700000000000

local function gen_failure(r)
  local f = { kind = pick(r, KINDS), latency_ms = pick(r, { 3, 5000, false, "12" }) or nil }
  if f.kind == "http" then f.status = pick(r, STATUSES) or nil end
  f.code = pick(r, CODES) or nil
  f.class_hint = pick(r, HINTS) or nil
  f.message = pick(r, MESSAGES) or nil
  f.body = pick(r, BODIES) or nil
  f.retry_after_ms = pick(r, RETRY_AFTER) or nil
  return f
end

local function gen_ctx(r)
  local classes = { false, "transient", "overload", "reference", "throttled", "c" }
  return {
    attempt = pick(r, { 1, 2, 5, false, "3" }) or nil,
    last_class = pick(r, classes) or nil,
    class_attempts = pick(r, { 0, 1, 2, 3, 4, 6, 10, false, "2" }) or nil,
    ordering = pick(r, { "partition", "key", "none", false }) or nil,
    now_ms = pick(r, { NOW, NOW, false }) or nil,
    first_failure_ms = pick(r, { NOW, NOW - 150, NOW - 7200000, false, "x" }) or nil,
    last_delay_ms = pick(r, { false, 100, 2500, "700" }) or nil,
    retry_count = pick(r, { 0, 0, 1, 2, 3, 4, -1, "2", 1.5, false, "x" }) or nil,
    rung = pick(r, { false, "30s", "5m", 7 }) or nil,
    breaker = pick(r, { "closed", "open", "half_open", "bogus", false }) or nil,
    retry_budget = pick(r, { true, true, false, false, nil }),
  }
end

local function gen_record(r)
  return t.record { headers = pick(r, { {}, { ["x-tenant"] = "vip" }, { ["x-tenant"] = "std" }, { trace = "1" } }) }
end

-- ---------------------------------------------------------------- policies

local function spec_policy(spec)
  local pol = policy.define(spec)
  return pol, spec
end

local extra = {
  { "a header rule, redact patterns and a long-form retry", function()
    return spec_policy {
      name = "extra", version = "1",
      classify = {
        { explicit = true },
        { header = { "x-tenant", "vip" }, status = "5xx", class = "vip" },
        { header = { "trace" }, class = "traced", set_code = "TRACED" },
        { code = "^E%d+$", message = "quota", class = "quota" },
        { status = { range = { 400, 499 } }, class = "client" },
        { kind = { "timeout", "connect" }, class = "transient" },
        { class = "other" },
      },
      retry = {
        transient = { attempts = 3, base = 100, jitter = "decorrelated", max_elapsed = "1h" },
      },
      route = {
        vip = { action = "retry", delay = "2s" },
        traced = { action = "hold", delay = 1500, reason = "traced", code = "T", message = "password=x held" },
        quota = "quarantine",
        client = "dlq",
        transient = { retry = "transient", exhausted = { action = "hold", reason = "gave_up" } },
        other = "ignore",
        default = "stop",
      },
      redact = { "%d%d%d%d+" },
    }
  end },
}

local pols = {}
for _, name in ipairs({ "default", "payments", "pipeline" }) do
  local pol, spec = load_with_spec("policies/" .. name .. ".lua")
  pols[#pols + 1] = { name, pol, spec }
end
for _, e in ipairs(extra) do
  local pol, spec = e[2]()
  pols[#pols + 1] = { e[1], pol, spec }
end

-- ------------------------------------------------------------------- specs

describe("the C core's decision path", function()
  for _, p in ipairs(pols) do
    local name, pol, spec = p[1], p[2]:with_random(const(0.37)), p[3]
    it(name .. ": the same decision as the reference pipeline, over 3000 failures, in one reused decider", function()
      local r = lcg(#name)
      for i = 1, 3000 do
        local f, ctx, record = gen_failure(r), gen_ctx(r), gen_record(r)
        local ok, want = ref_decide(pol, spec, f, record, ctx)
        local got_ok, got = pcall(t.decide_fields, pol, f, record, ctx)
        local lua_ok, lua = pcall(pol.decide, pol, f, record, ctx)
        if ok ~= got_ok or ok ~= lua_ok then
          error(("case %d: reference %s, C path %s, decide %s"):format(i, tostring(want), tostring(got), tostring(lua)))
        end
        if ok then
          assert.are.same(want, got, "case " .. i)
          assert.are.same(want, lua, "case " .. i)
        else
          assert.are.equal(want, got, "case " .. i)
        end
      end
    end)
  end

  it("a record is asked for only by a policy that reads it", function()
    local function reads(classify_spec, route_spec)
      local _, reads_record = rt.decider(policy.define {
        name = "r", version = "1", classify = classify_spec, route = route_spec or { default = "dlq" } })
      return reads_record
    end
    local _, default_reads = rt.decider(t.load("policies/default.lua"))
    assert.is_false(default_reads)
    assert.is_false(reads({ { status = 503, class = "c" }, { class = "u" } }, { c = "dlq", u = "dlq",
      default = "dlq" }))
    assert.is_true(reads({ { header = { "h" }, class = "c" }, { class = "u" } }, { c = "dlq", u = "dlq",
      default = "dlq" }))
    assert.is_true(reads(function() return "c" end))
    assert.is_true(reads({ { class = "c" } }, function() return "dlq" end))
    assert.has_error(function() rt.decider({}) end, "invalid policy object (use rt.load_policy)")
  end)

  it("functions of the policy's own get fresh tables at every call", function()
    local seen = {}
    local pol = policy.define {
      name = "fresh", version = "1",
      classify = function(f, record) seen[#seen + 1] = { f = f, record = record } return "c" end,
      route = function(_, _, ctx) seen[#seen].ctx = ctx return "dlq" end,
    }
    local fn = rt.decider(pol)
    fn("http", 500, nil, nil, nil, nil, nil, 1, 1, nil, 0, "partition", NOW, NOW, nil, 0, nil, "closed", true, nil)
    fn("timeout", nil, nil, nil, nil, nil, nil, 9, 1, nil, 0, "partition", NOW, NOW, nil, 0, nil, "closed", true, nil)
    assert.are_not.equal(seen[1].f, seen[2].f)
    assert.are_not.equal(seen[1].record, seen[2].record)
    assert.are_not.equal(seen[1].ctx, seen[2].ctx)
    assert.are.equal(500, seen[1].f.status)
    assert.are.same({ "timeout", 9 }, { seen[2].f.kind, seen[2].f.latency_ms })
    assert.are.same({ "c", "http_500", 1 }, { seen[1].ctx.class, seen[1].ctx.code, seen[1].ctx.streak })
  end)

  it("raises as decide does", function()
    local fn = rt.decider(t.load("policies/default.lua"))
    assert.has_error(function() fn("dns") end, "invalid failure: unknown kind dns (" .. failure.KIND_LIST .. ")")
    local bad = rt.decider(policy.define { name = "b", version = "1", classify = { { class = "c" } },
      route = function() return { action = "explode" } end })
    assert.has_error(function() bad("http", 500) end)
  end)
end)

describe("errgate.failure.fill", function()
  it("writes every field, so a reused table keeps nothing of the last failure", function()
    local n = failure.fill(nil, "http", 503, "E1", "permanent", "m", "b", 1000, 7)
    failure.fill(n, "timeout", nil, nil, nil, nil, nil, nil, nil)
    assert.are.same({ kind = "timeout", latency_ms = 0 }, n)
  end)

  it("is normalize on separate values", function()
    local given = { kind = "http", status = "503", code = ("C"):rep(200), message = "", body = '{"error": "down"}',
                    retry_after_ms = -1, latency_ms = 0 / 0 }
    local n = failure.fill({}, given.kind, given.status, given.code, given.class_hint, given.message, given.body,
      given.retry_after_ms, given.latency_ms)
    assert.are.same(failure.normalize(given), n)
    assert.are.same({ 503, 128, "down", 0 }, { n.status, #n.code, n.message, n.latency_ms })
  end)
end)

describe("errgate.failure default codes and descriptions", function()
  it("are the same strings made once or again, for any status", function()
    for _, s in ipairs({ 503, 503, 418, 0, 999, 1000, 1e9, 503.7, -4 }) do
      local f = { kind = "http", status = s }
      assert.are.equal(("http_%d"):format(math.floor(s)), failure.default_code(f))
      assert.are.equal(("HTTP %d"):format(math.floor(s)), failure.describe(f))
    end
    for _, ms in ipairs({ 5000, 5000, 1, 0 }) do
      assert.are.equal(("timeout after %d ms"):format(ms), failure.describe({ kind = "timeout", latency_ms = ms }))
    end
    for i = 1, 600 do -- more latencies than are kept
      assert.are.equal(("timeout after %d ms"):format(i), failure.describe({ kind = "timeout", latency_ms = i }))
    end
    assert.are.equal("HTTP error", failure.describe({ kind = "http" }))
    assert.are.equal("connect", failure.default_code({ kind = "connect", status = 503 }))
  end)
end)

describe("errgate.classify plans", function()
  local fn = classify.compile {
    { explicit = true, set_code = "X" },
    { status = 503, code = "^slow", class = "slow" },
    { status = 503, message = "reset", class = "reset" },
    { status = 503, class = "unavailable" },
    { status = "4xx", class = "client" },
    { class = "other" },
  }
  local function c(f) return (fn(failure.normalize(f), {})) end

  it("tell apart failures of one status by what they carry, in any order", function()
    for _ = 1, 2 do -- the second round runs on kept plans
      assert.are.equal("unavailable", c { kind = "http", status = 503 })
      assert.are.equal("slow", c { kind = "http", status = 503, code = "slowdown" })
      assert.are.equal("unavailable", c { kind = "http", status = 503, code = "other" })
      assert.are.equal("reset", c { kind = "http", status = 503, message = "connection reset" })
      assert.are.equal("slow", c { kind = "http", status = 503, code = "slow", message = "reset" })
      assert.are.equal("explicit", c { kind = "http", status = 503, class_hint = "explicit" })
      assert.are.same({ "explicit", "X" }, { fn(failure.normalize { kind = "http", status = 503,
        class_hint = "explicit" }, {}) })
      assert.are.equal("client", c { kind = "http", status = 404 })
      assert.are.equal("other", c { kind = "timeout" })
      assert.are.equal("client", c { kind = "http", status = 404.5 })
      assert.are.equal("other", c { kind = "http", status = 4040 })
    end
  end)

  it("report whether classifying reads the record", function()
    assert.is_false(select(2, classify.compile { { status = 503, class = "c" }, { class = "u" } }))
    assert.is_true(select(2, classify.compile { { header = { "h", "v" }, class = "c" }, { class = "u" } }))
    assert.is_true(select(2, classify.compile(function() return "c" end)))
  end)
end)

describe("errgate.redact.message remembers", function()
  it("the same answer for the same message, per pattern list and limit", function()
    local a, b = { "secret%d" }, { "abc" }
    for _ = 1, 2 do
      assert.are.equal("x [REDACTED] abc", redact.message("x secret7 abc", 512, a))
      assert.are.equal("x secret7 [REDACTED]", redact.message("x secret7 abc", 512, b))
      assert.are.equal("x secret7 abc", redact.message("x secret7 abc", 512))
      assert.are.equal("x sec", redact.message("x secret7 abc", 5))
      assert.are.equal("token=[REDACTED]", redact.message("token=hunter2", 512))
    end
  end)

  it("long messages and more messages than it keeps", function()
    local long = ("a"):rep(300) .. " password=hunter2"
    assert.are.equal(("a"):rep(300) .. " password=[REDACTED]", redact.message(long, 512))
    for i = 1, 700 do
      assert.are.equal("n" .. i .. " pwd=[REDACTED]", redact.message("n" .. i .. " pwd=p" .. i, 512))
    end
    assert.are.equal("n1 pwd=[REDACTED]", redact.message("n1 pwd=p1", 512))
    assert.are.equal("a b", redact.message("a\tb", 512))
  end)
end)

describe("errgate.decision.finalize_values", function()
  it("takes the classification, then the route's draft as it comes, and is finalize without tables", function()
    local f = failure.normalize { kind = "http", status = 503 }
    assert.are.same({ "retry", "c", "http_503", "c", 250, "HTTP 503" },
      { decision.finalize_values(f, nil, "c", "http_503", "retry", nil, 250) })
    assert.are.same({ "ladder", "c", "R", "why", 30000, "m", "30s", 1 },
      { decision.finalize_values(f, nil, "c", "http_503", "ladder", "why", "30s", "R", "m", "30s", 1) })
    assert.are.same(decision.finalize({ action = "hold", class = "c" }, f),
      decision.pack(decision.finalize_values(f, nil, "c", nil, "hold")))
    for _ = 1, 2 do -- a name found valid once is remembered; a bad one never is
      assert.has_error(function() decision.finalize_values(f, nil, ("c"):rep(129), nil, "dlq") end,
        "invalid decision: class longer than 128 bytes")
      assert.has_error(function()
        decision.finalize_values(f, nil, "c", nil, "ladder", nil, 5, nil, nil, "bad rung!", 1)
      end)
    end
  end)
end)

describe("errgate.route entries", function()
  local schedules = require("errgate.schedule").compile_all {
    quick = { attempts = 2, base = 100 },
    up = { ladder = { "30s", "5m" } },
  }
  local f = failure.normalize { kind = "http", status = 503 }
  local function never() error("no delay may be drawn") end

  it("mark the ones that resolve the same whatever the ctx", function()
    assert.is_true(route.compile_entry("r", "dlq", schedules).fixed)
    assert.is_true(route.compile_entry("r", { action = "hold", delay = 5 }, schedules).fixed)
    assert.is_false(route.compile_entry("r", { action = "retry", delay = 5 }, schedules).fixed)
    assert.is_nil(route.compile_entry("r", { retry = "quick" }, schedules).fixed)
    assert.are.same({ "hold", nil, 5 }, { route.resolve_values(route.compile_entry("r", { action = "hold",
      delay_ms = 5 }, schedules)) })
  end)

  it("read retry_count and the times as given, with the ctx's defaults", function()
    local up = route.compile_entry("r", { ladder = "up" }, schedules)
    local esc = route.compile_entry("r", { retry = "quick", exhausted = { ladder = "up" } }, schedules)
    local capped = route.compile_entry("r", { retry = "quick" }, require("errgate.schedule").compile_all {
      quick = { attempts = 2, base = 100, max_elapsed = 1000 } })
    assert.are.equal("30s", select(6, route.resolve_values(up, f, never, 1, nil)))
    assert.are.equal("5m", select(6, route.resolve_values(up, f, never, 1, "1")))
    assert.are.equal("30s", select(6, route.resolve_values(up, f, never, 1, -3)))
    assert.are.equal("5m", select(6, route.resolve_values(esc, f, never, 1, 1.7)))
    -- over budget, an escalation climbs without drawing a delay
    local action, reason = route.resolve_values(esc, f, never, 1, 0, false)
    assert.are.same({ "ladder", "retry_budget" }, { action, reason })
    -- first_failure_ms defaults to now_ms: nothing has elapsed
    assert.are.equal("retry", (route.resolve_values(capped, f, const(0), 1, 0, true, NOW, nil)))
    assert.are.equal("dlq", (route.resolve_values(capped, f, const(0), 1, 0, true, NOW, NOW - 1000)))
  end)
end)

describe("errgate.backoff.base", function()
  it("doubles exactly, as 2 ^ (n - 1) does, up to and past the table it keeps", function()
    local s = { backoff = "exponential", base_ms = 3, max_ms = 2 ^ 60 }
    for n = 1, 60 do
      local want = n - 1 >= 52 and s.max_ms or math.min(s.max_ms, 3 * 2 ^ (n - 1))
      assert.are.equal(want, backoff.base(s, n))
    end
    assert.are.equal(3 * 2 ^ 1.5, backoff.base(s, 2.5))
  end)
end)
