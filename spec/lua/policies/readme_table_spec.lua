-- policies/readme_table_spec.lua — the README's table of the default policy
-- (under "## The default policy") against spec/cases/default.jsonl, the statement of
-- what policies/default.lua decides. Fails when they disagree:
--   * every failure a row names has a first-attempt case (no ctx but the
--     breaker's state, no Error-Class, Error-Code, body or Retry-After) of the row's class and
--     action, and every such case is in the row of its class (or, not named
--     anywhere, under "anything else");
--   * a retry row's "up to N more attempts ... then ACTION, reason
--     `exhausted`" and "`Retry-After` honoured up to S s", and a hold row's
--     "S s", match the cases that state them;
--   * the Error-Class row: an explicit known class takes that class's
--     route, an unknown one the row's fallback.
-- A row naming a failure this check cannot read fails too, so the table and
-- this check change together.
local cjson = require "cjson"

local function read(path)
  local fh = assert(io.open(path, "rb"))
  local s = fh:read("*a")
  fh:close()
  return s
end

-- the rows of the first table headed "| failure | class | action |"
local function readme_rows()
  local rows, inside = {}, false
  for line in read("README.md"):gmatch("([^\n]*)\n") do
    if line == "| failure | class | action |" then
      inside = true
    elseif inside and not line:match("^|") then
      break
    elseif inside and not line:match("^|%-") then
      local f, c, a = line:match("^| (.-) | (.-) | (.-) |$")
      assert(f, "README table row not in three cells: " .. line)
      rows[#rows + 1] = { failure = f, class = c:match("^`(.-)`$") or c, action = a, line = line }
    end
  end
  assert(#rows > 0, "README.md has no table headed | failure | class | action |")
  return rows
end

-- failure phrases of the table -> the failure a case states
local PHRASES = {
  ["connection refused"] = { kind = "connect" },
  ["circuit breaker open"] = { kind = "circuit_open" },
  ["timeout"] = { kind = "timeout" },
  ["an error raised by a Lua target"] = { kind = "lua" },
}
local EXPLICIT = "`Error-Class` header or JSON `error.class`"
local ELSE = "anything else"

-- the first word of an action cell -> the decision's action
local ACTIONS = { hold = "hold", retry = "retry", DLQ = "dlq", quarantine = "quarantine", ignore = "ignore",
  stop = "stop" }

local function key(f) return f.kind == "http" and ("http " .. f.status) or f.kind end

local function load_cases()
  local out = {}
  for line in read("spec/cases/default.jsonl"):gmatch("[^\n]+") do
    if not line:match("^%s*#") then
      local c = cjson.decode(line)
      if type(c.failure) == "number" then c.failure = { kind = "http", status = c.failure } end
      if type(c.failure) == "string" then c.failure = { kind = c.failure } end
      if type(c.expect) == "string" then c.expect = { action = c.expect } end
      local f = c.failure
      local first = true -- a first attempt: no ctx but the breaker's state
      for k in pairs(c.ctx or {}) do first = first and k == "breaker" end
      c.simple = first and f.class_hint == nil and f.code == nil and f.body == nil and f.retry_after_ms == nil
      out[#out + 1] = c
    end
  end
  return out
end

describe("README's default-policy table against spec/cases/default.jsonl", function()
  local rows, cases = readme_rows(), load_cases()
  local row_of = {} -- failure key -> row
  local by_class = {} -- class -> row
  local else_row, explicit_row
  for _, r in ipairs(rows) do
    r.act = ACTIONS[r.action:match("^(%a+)")]
    if r.failure == EXPLICIT then
      explicit_row = r
    else
      assert(r.act, "README row with an action this check cannot read: " .. r.line)
      by_class[r.class] = r
      if r.failure == ELSE then
        else_row = r
      else
        for item in (r.failure .. ","):gmatch("%s*(.-),") do
          local f = PHRASES[item] or (item:match("^%d+$") and { kind = "http", status = tonumber(item) })
          assert(f, ("README row names a failure this check cannot read: '%s' in %s"):format(item, r.line))
          row_of[key(f)] = r
        end
      end
    end
  end

  it("has the Error-Class row and the catch-all row", function()
    assert.is_truthy(explicit_row)
    assert.is_truthy(else_row)
  end)

  it("backs every failure a row names with a case of that class and action", function()
    for k, r in pairs(row_of) do
      local found
      for _, c in ipairs(cases) do
        if c.simple and key(c.failure) == k then found = c end
      end
      assert(found, ("README names %s (%s) but spec/cases/default.jsonl has no case for it"):format(k, r.line))
      assert.are.same({ r.class, r.act }, { found.expect.class, found.expect.action }, k)
    end
  end)

  it("lists every first-attempt case in the row of its class", function()
    for _, c in ipairs(cases) do
      if c.simple then
        local k = key(c.failure)
        local r = row_of[k] or else_row
        assert.are.same({ r.class, r.act }, { c.expect.class, c.expect.action },
          ("case %s: README says %s"):format(k, r.line))
      end
    end
  end)

  it("states the retry rows' attempts, exhaustion and Retry-After cap as the cases do", function()
    local checked = 0
    for class, r in pairs(by_class) do
      local n = tonumber(r.action:match("up to (%d+) more attempts"))
      if n then
        checked = checked + 1
        local after = ACTIONS[r.action:match("then (%a+), reason `exhausted`")]
        local cap = tonumber(r.action:match("`Retry%-After` honoured up to (%d+) s"))
        assert(after and cap, "retry row without 'then ACTION, reason `exhausted`' or a Retry-After cap: " .. r.line)
        local last, over, capped
        for _, c in ipairs(cases) do
          local ctx, e = c.ctx or {}, c.expect
          if ctx.last_class == class and ctx.class_attempts == n - 1 and e.action == "retry" then last = true end
          if ctx.last_class == class and ctx.class_attempts == n and e.action == after and e.reason == "exhausted" then
            over = true
          end
          local ra = c.failure.retry_after_ms
          if ra and ra > cap * 1000 and e.delay_ms == cap * 1000 then capped = true end
        end
        assert(last, ("no case: attempt %d of %s still retries"):format(n, class))
        assert(over, ("no case: after %d retries %s goes %s, reason exhausted"):format(n, class, after))
        assert(capped, ("no case: a Retry-After over %d s waits %d s"):format(cap, cap))
      end
    end
    assert.is_true(checked > 0, "the README table has no retry row")
  end)

  it("states the hold rows' delay as the cases do", function()
    for class, r in pairs(by_class) do
      if r.act == "hold" then
        local s = assert(tonumber(r.action:match("(%d+) s")), "hold row without its delay: " .. r.line)
        local stated = 0
        for _, c in ipairs(cases) do
          if c.simple and c.expect.class == class and c.expect.delay_ms then
            assert.are.equal(s * 1000, c.expect.delay_ms, key(c.failure))
            stated = stated + 1
          end
        end
        assert.is_true(stated > 0, "no case states the hold delay of " .. class)
      end
    end
  end)

  it("routes an explicit Error-Class by its name, an unknown one as the row says", function()
    local fallback = ACTIONS[explicit_row.action:match("unknown classes: (%a+)")]
    assert(fallback, "the Error-Class row does not say where unknown classes go: " .. explicit_row.line)
    local known, unknown = 0, 0
    for _, c in ipairs(cases) do
      local hint = c.failure.class_hint
      if hint and c.ctx == nil then
        local r = by_class[hint]
        assert.are.equal(r and r.act or fallback, c.expect.action, "explicit class " .. hint)
        if r then known = known + 1 else unknown = unknown + 1 end
      end
    end
    assert.is_true(known > 0 and unknown > 0, "cases need an explicit known class and an unknown one")
  end)
end)
