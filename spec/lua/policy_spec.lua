-- policy_spec.lua — errgate.policy: define() validation, the classify rule
-- forms, route entries, examples, a policy's own redact patterns, and the
-- testing helpers.
local policy = require "errgate.policy"
local t = require "errgate.testing"

-- spec(over) -> a valid spec with fields replaced by over (false removes one)
local function spec(over)
  local s = {
    name = "p", version = "1",
    classify = { { status = 503, class = "transient" }, { class = "unknown" } },
    retry = { fast = { attempts = 2, base = 10, jitter = "none" } },
    route = { transient = { retry = "fast" }, default = "dlq" },
  }
  for k, v in pairs(over or {}) do
    if v == false then s[k] = nil else s[k] = v end
  end
  return s
end

local function define_error(over)
  local ok, err = pcall(function()
    local pol = policy.define(spec(over)) -- not a tail call: the error names this line
    return pol
  end)
  assert.is_false(ok, "define accepted a bad spec")
  return err
end

local function classify_with(rules, f, record)
  local pol = policy.define(spec({ classify = rules, route = { default = "dlq" } }))
  return pol:classify(f, record)
end

describe("errgate.policy.define refuses", function()
  local cases = {
    { "a missing name", { name = false }, ":%d+: policy: name missing" },
    { "a missing version", { version = false }, "policy 'p': version missing" },
    { "an unknown field", { rety = {} }, "policy 'p': unknown field rety" },
    { "a missing classify", { classify = false }, "policy 'p': classify: missing" },
    { "a missing route", { route = false }, "policy 'p': route: missing" },
    { "a route table without default", { route = { transient = "dlq" } },
      "policy 'p': route: default entry missing" },
    { "an unknown route action", { route = { default = "dql" } },
      "policy 'p': route%.default: unknown action dql %(want dlq, quarantine, ignore, hold, stop" },
    { "retry without a schedule", { route = { default = "retry" } },
      "route%.default: retry needs a schedule" },
    { "a retry action without delay", { route = { default = { action = "retry" } } },
      "route%.default: action retry needs a delay" },
    { "a bare ladder action", { route = { default = "ladder" } },
      "route%.default: a ladder needs a schedule: write { ladder = \"name\" }" },
    { "an undefined schedule", { route = { transient = { retry = "fastt" }, default = "dlq" } },
      "route%.transient: retry schedule fastt is not defined in retry" },
    { "an exhausted entry that retries", { route = { transient = { retry = "fast", exhausted = "retry" },
      default = "dlq" } },
      "route%.transient%.exhausted: retry needs a schedule" },
    { "a delay on a dlq", { route = { default = { action = "dlq", delay = 5 } } },
      "route%.default: delay only applies to hold and retry" },
    { "an unknown key in a route entry", { route = { default = { action = "dlq", reson = "x" } } },
      "route%.default: unknown key reson" },
    { "a bad schedule", { retry = { fast = { attempts = 2 } } }, "retry%.fast: base missing" },
    { "a list as a route entry", { route = { default = { "dlq" } } },
      "route%.default: unknown key 1 %(a route entry's long form is { action = \"dlq\" | " },
    { "a route entry without an action", { route = { default = { reason = "x" } } },
      "route%.default: no action %(a route entry's long form is { action = .*delay = \"5s\", reason = " },
    { "a duration under its new and old names", { retry = { fast = { attempts = 2, base = "1s", base_ms = 5 } } },
      "retry%.fast: base and base_ms in one table: write only base" },
    { "a delay under both names", { route = { default = { action = "hold", delay = "1s", delay_ms = 5 } } },
      "route%.default: delay and delay_ms in one table: write only delay" },
    { "classify without a catch-all", { classify = { { status = 503, class = "transient" } } },
      "classify: the last rule must be a catch%-all default" },
    { "a catch-all before the end", { classify = { { class = "unknown" }, { status = 503, class = "x" } } },
      "classify rule 1: matches everything, so the rules after it never match" },
    { "a rule without class", { classify = { { status = 503 }, { class = "u" } } },
      "classify rule 1: needs a class" },
    { "an unknown rule key", { classify = { { stauts = 503, class = "x" }, { class = "u" } } },
      "classify rule 1: unknown key stauts" },
    { "a bad status", { classify = { { status = 5031, class = "x" }, { class = "u" } } },
      "classify rule 1: status 5031 not understood" },
    { "a bad status range", { classify = { { status = { range = { 599, 500 } }, class = "x" }, { class = "u" } } },
      "classify rule 1: status range must be" },
    { "an unknown kind", { classify = { { kind = "dns", class = "x" }, { class = "u" } } },
      "classify rule 1: kind dns unknown" },
    { "a malformed code pattern", { classify = { { code = "[", class = "x" }, { class = "u" } } },
      "classify rule 1: code pattern \"%[\": malformed pattern" },
    { "an explicit rule with a class", { classify = { { explicit = true, class = "x" }, { class = "u" } } },
      "classify rule 1: an explicit rule takes its class from the failure" },
    { "an empty rule list", { classify = {} }, "classify: needs at least one rule" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function()
      assert.matches(c[3], define_error(c[2]))
    end)
  end

  it("with an error that points at the caller's line", function()
    local err = define_error({ route = { default = "dql" } })
    assert.matches("^spec/lua/policy_spec%.lua:%d+: policy 'p': route%.default: unknown action dql", err)
  end)
end)

describe("classify rules", function()
  local UNKNOWN = { class = "unknown" }

  it("match a status list, a range and a class string like 5xx", function()
    local rules = {
      { status = { 408, 429 }, class = "a" },
      { status = { range = { 500, 502 } }, class = "b" },
      { status = "5xx", class = "c" },
      { status = { 418, { range = { 300, 302 } } }, class = "d" },
      UNKNOWN,
    }
    local got = {}
    for _, s in ipairs({ 408, 429, 500, 502, 503, 599, 418, 301, 404 }) do
      got[#got + 1] = (classify_with(rules, t.http(s)))
    end
    assert.are.same({ "a", "a", "b", "b", "c", "c", "d", "d", "unknown" }, got)
  end)

  it("match a kind or a list of kinds", function()
    local rules = { { kind = { "timeout", "connect" }, class = "net" }, UNKNOWN }
    assert.are.equal("net", (classify_with(rules, t.timeout())))
    assert.are.equal("net", (classify_with(rules, t.connect_refused())))
    assert.are.equal("unknown", (classify_with(rules, t.lua_error("x"))))
  end)

  it("match the service's code with a Lua pattern", function()
    local rules = { { code = "^RATE_", class = "transient" }, UNKNOWN }
    assert.are.same({ "transient", "RATE_LIMITED" }, { classify_with(rules, t.http(400, { code = "RATE_LIMITED" })) })
    assert.are.equal("unknown", (classify_with(rules, t.http(400, { code = "NO_RATE_" }))))
    assert.are.equal("unknown", (classify_with(rules, t.http(400))))
  end)

  it("match a plain substring of the message (no pattern magic)", function()
    local rules = { { message = "quota (daily)", class = "quota" }, UNKNOWN }
    assert.are.equal("quota", (classify_with(rules, t.http(403, { message = "over quota (daily) for acct" }))))
    assert.are.equal("unknown", (classify_with(rules, t.http(403, { message = "over quota daily" }))))
  end)

  it("match a record header by value or presence", function()
    local rules = {
      { header = { "tenant", "vip" }, class = "vip" },
      { header = { "x-replay" }, class = "replayed" },
      UNKNOWN,
    }
    local r = function(h) return t.record({ headers = h }) end
    assert.are.equal("vip", (classify_with(rules, t.http(500), r({ tenant = "vip" }))))
    assert.are.equal("unknown", (classify_with(rules, t.http(500), r({ tenant = "basic" }))))
    assert.are.equal("replayed", (classify_with(rules, t.http(500), r({ ["x-replay"] = "1" }))))
  end)

  it("AND their matchers together", function()
    local rules = { { status = 400, message = "duplicate", class = "dup" }, UNKNOWN }
    assert.are.equal("dup", (classify_with(rules, t.http(400, { message = "duplicate key" }))))
    assert.are.equal("unknown", (classify_with(rules, t.http(409, { message = "duplicate key" }))))
    assert.are.equal("unknown", (classify_with(rules, t.http(400, { message = "bad" }))))
  end)

  it("set the code with set_code, else keep the service's, else derive one", function()
    local rules = { { status = 503, class = "t", set_code = "busy" }, { status = 502, class = "t" }, UNKNOWN }
    assert.are.same({ "t", "busy" }, { classify_with(rules, t.http(503, { code = "E1" })) })
    assert.are.same({ "t", "E1" }, { classify_with(rules, t.http(502, { code = "E1" })) })
    assert.are.same({ "t", "http_502" }, { classify_with(rules, t.http(502)) })
  end)

  it("use the explicit class only when the service gave one", function()
    local rules = { { explicit = true }, { status = 503, class = "transient" }, UNKNOWN }
    assert.are.same({ "mine", "E9" }, { classify_with(rules, t.http(503, { class = "mine", code = "E9" })) })
    assert.are.equal("transient", (classify_with(rules, t.http(503))))
  end)

  it("may be a function; nil means unknown", function()
    local fn = function(f, record)
      if f.status == 503 then return "busy", "B" end
      if record.topic == "special" then return "special" end
    end
    assert.are.same({ "busy", "B" }, { classify_with(fn, t.http(503)) })
    assert.are.equal("special", (classify_with(fn, t.http(400), t.record({ topic = "special" }))))
    assert.are.equal("unknown", (classify_with(fn, t.http(400))))
  end)

  it("refuse a function that returns a non-string class at decide time", function()
    local pol = policy.define(spec({ classify = function() return 42 end, route = { default = "dlq" } }))
    assert.has_error(function() t.decide(pol, t.http(500)) end,
      "invalid decision: classify returned a class of type number")
  end)
end)

describe("route entries", function()
  it("apply a custom exhausted entry with its own reason", function()
    local pol = policy.define(spec({ route = {
      transient = { retry = "fast", exhausted = { action = "quarantine", reason = "gave_up" } },
      default = "dlq" } }))
    local ds = t.sequence(pol, t.http(503), 3)
    assert.are.same({ "retry", "retry", "quarantine" }, { ds[1].action, ds[2].action, ds[3].action })
    assert.are.equal("gave_up", ds[3].reason)
  end)

  it("exhaust at once with attempts = 0", function()
    local pol = policy.define(spec({ retry = { fast = { attempts = 0, base = 10 } } }))
    local d = t.decide(pol, t.http(503))
    assert.are.same({ "dlq", "exhausted" }, { d.action, d.reason })
  end)

  it("ask for approval before replay with { dlq = true, approval = true }", function()
    local pol = policy.define(spec({ route = {
      transient = { retry = "fast", exhausted = { quarantine = true, approval = true, reason = "gave_up" } },
      default = { dlq = true, approval = true } } }))
    local d = t.decide(pol, t.http(400))
    assert.are.same({ "dlq", true }, { d.action, d.approval })
    local ds = t.sequence(pol, t.http(503), 3)
    assert.are.same({ "quarantine", true, "gave_up" }, { ds[3].action, ds[3].approval, ds[3].reason })
    assert.is_nil(ds[1].approval) -- a retry never carries it
    local plain = policy.define(spec({ route = { default = { action = "dlq", approval = false } } }))
    assert.is_nil(t.decide(plain, t.http(400)).approval)
  end)

  it("refuse approval where it means nothing", function()
    assert.matches("approval applies to dlq and quarantine only",
      define_error({ route = { default = { action = "hold", approval = true } } }))
    assert.matches("approval must be true or false",
      define_error({ route = { default = { dlq = true, approval = 1 } } }))
    assert.matches("dlq must be true", define_error({ route = { default = { dlq = "yes" } } }))
    assert.matches("quarantine = true and action dlq",
      define_error({ route = { default = { action = "dlq", quarantine = true } } }))
  end)

  it("name a lane's payload protection with protect (dlq and quarantine only)", function()
    local pol = policy.define(spec({ route = {
      transient = { retry = "fast", exhausted = { quarantine = true, protect = "mask" } },
      default = { action = "dlq", protect = "pointer", approval = true } } }))
    local d = t.decide(pol, t.http(400))
    assert.are.same({ "dlq", "pointer", true }, { d.action, d.protect, d.approval })
    local ds = t.sequence(pol, t.http(503), 3)
    assert.are.same({ "quarantine", "mask" }, { ds[3].action, ds[3].protect })
    assert.is_nil(ds[1].protect) -- a retry never carries it
    assert.is_nil(t.decide(policy.define(spec({ route = { default = "dlq" } })), t.http(400)).protect)
    assert.matches("protect applies to dlq and quarantine only",
      define_error({ route = { default = { action = "hold", protect = "encrypt" } } }))
    assert.matches("protect must be \"mask\", \"encrypt\", \"pointer\" or \"none\"",
      define_error({ route = { default = { dlq = true, protect = "rot13" } } }))
    assert.matches("protect must be", define_error({ route = { default = { dlq = true, protect = true } } }))
  end)

  it("give a hold its own delay", function()
    local pol = policy.define(spec({ route = { default = { action = "hold", delay = "30s" } } }))
    assert.are.same({ "hold", 30000 }, { t.decide(pol, t.http(500)).action, t.decide(pol, t.http(500)).delay_ms })
  end)

  it("name the classes exempt from the dlq_guard (guard = false, also as an exhausted entry)", function()
    local pol = policy.define(spec({ route = {
      transient = { retry = "fast", exhausted = { action = "quarantine", guard = false } },
      unknown = { action = "dlq", guard = false },
      other = { action = "dlq", guard = true },
      default = "dlq" } }))
    assert.are.same({ "transient", "unknown" }, pol.unguarded)
    assert.are.equal("dlq", t.decide(pol, t.http(500)).action) -- the decision itself is unchanged
    assert.are.same({}, policy.define(spec()).unguarded)
  end)

  it("carry each class's hint, retryable and ladder steps (the lane record's envelope)", function()
    local pol = policy.define(spec({
      retry = { fast = { attempts = 2, base = 10, jitter = "none" },
                slow = { ladder = { "1s", { delay = "2s", times = 3 } } } },
      route = {
        transient = { retry = "fast", hint = "wait", exhausted = { ladder = "slow" } },
        laddered = { ladder = "slow", exhausted = { dlq = true, hint = "from the exhausted entry" } },
        permanent = { dlq = true, hint = "fix it", retryable = false },
        flaky = { action = "dlq", retryable = true },
        default = "hold",
      } }))
    assert.are.same({
      { class = "default", retryable = true },
      { class = "flaky", retryable = true },
      { class = "laddered", hint = "from the exhausted entry", retryable = true, steps = 4 },
      { class = "permanent", hint = "fix it", retryable = false },
      { class = "transient", hint = "wait", retryable = true, steps = 4 },
    }, pol.envelope)
    assert.are.same({ { class = "default", retryable = false } },
      policy.define(spec({ route = { default = "dlq" } })).envelope)
    assert.are.same({}, policy.define(spec({ route = function() return "dlq" end })).envelope)
  end)

  it("refuse a hint that is not a short string and a retryable that is not a boolean", function()
    assert.matches("hint must be a string of 1 to 255 bytes",
      define_error({ route = { default = { action = "dlq", hint = "" } } }))
    assert.matches("hint must be a string of 1 to 255 bytes",
      define_error({ route = { default = { action = "dlq", hint = ("x"):rep(256) } } }))
    assert.matches("route.x: hint must be a string",
      define_error({ route = { default = "dlq", x = { retry = "fast", hint = 5 } } }))
    assert.matches("retryable must be true or false",
      define_error({ route = { default = { action = "dlq", retryable = "yes" } } }))
  end)

  it("refuse guard on other actions, of another type, or on the default entry", function()
    assert.matches("guard only applies to dlq and quarantine",
      define_error({ route = { default = "dlq", x = { action = "hold", guard = false } } }))
    assert.matches("guard must be a boolean",
      define_error({ route = { default = "dlq", x = { action = "dlq", guard = "no" } } }))
    assert.matches("route.default: guard = false names the classes",
      define_error({ route = { default = { action = "dlq", guard = false } } }))
  end)
end)

describe("examples", function()
  it("run at define and pass for a consistent policy", function()
    local pol = policy.define(spec({ examples = {
      { failure = 503, expect = { action = "retry", delay_ms = 10 } },
      { failure = { kind = "http", status = 400 }, expect = "dlq" },
      { failure = 503, ctx = { last_class = "transient", class_attempts = 2 }, expect = { reason = "exhausted" } },
    } }))
    assert.are.equal(3, #pol.examples)
  end)

  it("refuse a policy that contradicts one, naming it", function()
    local err = define_error({ examples = {
      { failure = 503, expect = "retry" },
      { failure = 404, expect = "quarantine" },
    } })
    assert.matches("policy 'p': example 2 %(http 404%): expected action quarantine, got dlq", err)
    local err2 = define_error({ examples = {
      { name = "timeouts are transient", failure = "timeout", expect = { class = "transient" } } } })
    assert.matches("example 1 %(timeouts are transient%): expected class transient, got unknown", err2)
  end)

  it("report an example whose decide raises", function()
    local err = define_error({ examples = { { failure = { kind = "dns" }, expect = "dlq" } } })
    assert.matches("example 1 %(dns%): decide raised: invalid failure: unknown kind dns", err)
  end)

  it("refuse malformed examples", function()
    assert.matches("example 1: expect missing", define_error({ examples = { { failure = 503 } } }))
    assert.matches("example 1: failure missing", define_error({ examples = { { expect = "dlq" } } }))
    assert.matches("example 1: unknown key expected",
      define_error({ examples = { { failure = 503, expected = "dlq" } } }))
  end)
end)

describe("a Policy", function()
  it("carries its name, version and id", function()
    local pol = policy.define(spec({ version = 7 }))
    assert.are.same({ "p", "7", "p@7" }, { pol.name, pol.version, pol.id })
    assert.is_true(policy.is(pol))
    assert.is_false(policy.is({}))
  end)

  it("with_random returns a copy and leaves the original alone", function()
    local pol = policy.define(spec({ retry = { fast = { attempts = 2, base = 1000, jitter = "full" } } }))
    local pinned = pol:with_random(function() return 0 end)
    assert.are.equal(0, t.decide(pinned, t.http(503)).delay_ms)
    assert.are.equal(math.random, pol.random)
    assert.is_true(policy.is(pinned))
  end)

  it("decides directly without rt (plain Lua, no C)", function()
    local pol = policy.define(spec())
    local d = pol:decide({ kind = "http", status = 503 })
    assert.are.same({ "retry", "transient", 10 }, { d.action, d.class, d.delay_ms })
  end)
end)

describe("errgate.testing", function()
  it("builds failures with the given options", function()
    assert.are.same({ kind = "http", status = 503, class_hint = "c", code = "E", message = "m", body = "b",
      retry_after_ms = 5, latency_ms = 12 },
      t.http(503, { class = "c", code = "E", message = "m", body = "b", retry_after_ms = 5 }))
    assert.are.same({ kind = "lua", latency_ms = 0, message = "boom" }, t.lua_error("boom"))
    assert.are.equal("timeout", t.timeout().kind)
    assert.are.equal("connect", t.connect_refused().kind)
  end)

  it("builds records and contexts with defaults", function()
    local r = t.record({ key = "k1", headers = { a = "b" } })
    assert.are.same({ "orders", 0, 0, "k1", "b" }, { r.topic, r.partition, r.offset, r.key, r.headers.a })
    local c = t.ctx({ now_ms = 50 })
    assert.are.same({ 1, 0, "partition", 50, 50 }, { c.attempt, c.class_attempts, c.ordering, c.now_ms,
      c.first_failure_ms })
    assert.is_nil(c.last_class)
  end)

  it("models the C core's bookkeeping in next_ctx", function()
    local c = t.ctx({ now_ms = 0 })
    c = t.next_ctx(c, { class = "a", delay_ms = 100 })
    assert.are.same({ 2, "a", 1, 100 }, { c.attempt, c.last_class, c.class_attempts, c.now_ms })
    c = t.next_ctx(c, { class = "a", delay_ms = 0 })
    assert.are.same({ 3, "a", 2 }, { c.attempt, c.last_class, c.class_attempts })
    c = t.next_ctx(c, { class = "b", delay_ms = 0 })
    assert.are.same({ 4, "b", 1 }, { c.attempt, c.last_class, c.class_attempts })
  end)

  it("load raises the loader's error", function()
    assert.has_error(function() t.load("policies/does-not-exist.lua") end)
  end)
end)

describe("a policy's redact patterns", function()
  local function def(redact)
    return policy.define { name = "r", version = "1", redact = redact,
      classify = { { class = "unknown" } }, route = { default = "dlq" } }
  end

  it("remove matches from decision messages, after the built-in secrets", function()
    local pol = def({ "acct%-%d+", "%d%d%d%d%-%d%d%d%d%-%d%d%d%d%-%d%d%d%d" })
    local d = pol:decide({ kind = "http", status = 400,
      message = "acct-123456 card 4111-1111-1111-1111 password=hunter2 rejected" })
    assert.are.equal("[REDACTED] card [REDACTED] password=[REDACTED] rejected", d.message)
  end)

  it("are checked at define: type, syntax, and cost on a 4 KiB message", function()
    assert.has_error(function() def("acct") end, "policy 'r': redact: expected a list of Lua patterns, got string")
    assert.has_error(function() def({ "[a" }) end)
    local ok, err = pcall(def, { "a-a-a-b" })
    assert.is_false(ok)
    assert.matches("redact%[1%]: pattern \"a%-a%-a%-b\" is too costly on a 4 KiB message", err)
  end)
end)
