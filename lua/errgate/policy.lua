-- errgate.policy — the policy DSL: define() and the decide() pipeline.
--
-- A policy file returns define{ name, version, classify, retry, route,
-- examples [, description] }. define() compiles each part once (see
-- errgate.classify, errgate.schedule, errgate.route, errgate.examples),
-- runs the examples, and returns a Policy object. Any problem is raised as
-- one line, "<file>:<line>: policy '<name>': <what>", pointing at the
-- define call, so `errgate policy check` and hot reload can report it as is.
-- (`return define{...}` is a tail call and leaves no frame behind, so there
-- the loader can only name the file; <what> names the offending field.)
-- Unknown top-level fields are errors (a misspelt `rety` must not silently
-- mean "no retries"); later sections are added to KNOWN and compiled in
-- build(). Ladders live in `retry` (errgate.schedule); retry budgets and
-- circuit breakers are the C core's (config), seen here through ctx.
--
-- Policy:decide(failure, record, ctx) is the whole decision in plain Lua:
--   normalize the failure -> classify -> streak for that class -> route ->
--   finalize (errgate.decision).
-- The ctx the C core passes (every field optional, defaults in brackets):
--   attempt [1], last_class [nil], class_attempts [0], ordering
--   ["partition"], now_ms [0], first_failure_ms [now_ms], last_delay_ms,
--   retry_count [0]  rungs the record has climbed (its retry.count header)
--   rung [nil]       the rung the record was consumed from (nil: a source record)
--   breaker ["closed"]  the target's circuit breaker: "closed" | "open" | "half_open"
--   retry_budget [true] false: an in-place retry does not fit the target's
--                    retry budget now (errgate.route escalates or holds)
-- Malformed values of the last four fall back to their defaults rather than
-- raise: a corrupt retry.count header must not wedge a record in fallback
-- holds. Policy.rungs is the union of the ladders' rungs (errgate.schedule).
-- decide is what busted specs and errgate.runtime's rt.decide call. The C
-- core decides through scalar_decider(): the same pipeline (decider()
-- below; decide goes through it too) fed with the failure and ctx fields as
-- separate values and returning the decision's fields as separate values,
-- so no failure, ctx, draft or decision table crosses the C boundary. It is
-- on the DLQ path of every failed record, so it does little: a route table
-- gets the six ctx fields it reads as values (only a route function gets a
-- ctx table), an entry that resolves the same whatever the ctx (dlq,
-- quarantine, ignore, stop, hold) skips the ctx entirely, and when no
-- function of the policy's own sees them (classify is a rule list and route
-- a table) the failure is normalized into one reused table and the record
-- is handed over only when a classify rule matches on a header.
-- A Policy is treated as immutable once built; with_random() returns a copy
-- with another random source (tests, examples).
local classify = require "errgate.classify"
local decision = require "errgate.decision"
local examples = require "errgate.examples"
local failure = require "errgate.failure"
local pattern = require "errgate.pattern"
local renamed = require "errgate.renamed"
local route = require "errgate.route"
local schedule = require "errgate.schedule"

local policy = {}

-- Policy's methods live in their own table: a policy object's metatable is
-- locked (__metatable) and reachable from no field (pol.__index is nil), so
-- policy code cannot change the methods or metamethods the runtime and the
-- C core use, nor set another metatable on the object. is() knows the
-- objects define() built from a weak set, not from their metatable.
local Policy = {}
local POLICY_MT = { __index = Policy, __metatable = "errgate.policy" }
local built = setmetatable({}, { __mode = "k" })

-- new_policy(t) -> t as a Policy object
local function new_policy(t)
  setmetatable(t, POLICY_MT)
  built[t] = true
  return t
end

local KNOWN = {
  name = true, version = true, description = true,
  classify = true, retry = true, route = true, examples = true, redact = true,
}
local EMPTY = {}
local MESSAGE_SCAN_MAX = 4096 -- the longest message a policy's patterns see (errgate.redact)

local function fail(fmt, ...)
  error(fmt:format(...), 0)
end

-- shape(spec, entries, schedules) -> what errgate.lint reads: the classes
-- the classify rules name (rule index -> class, the last rule being the
-- catch-all), whether classify and route are functions, the route table's
-- class names, the ladder each route can climb (class -> ladder name) and
-- the names of all ladder schedules.
local function shape(spec, entries, schedules)
  local s = { classify_fn = type(spec.classify) == "function", route_fn = type(spec.route) == "function",
              rules = {}, routes = {}, ladders = {}, ladder_names = schedule.ladder_names(schedules) }
  if not s.classify_fn then
    for i, rule in ipairs(spec.classify) do
      s.rules[i] = { class = rule.class, explicit = rule.explicit == true }
    end
  end
  for class, e in pairs(entries or EMPTY) do
    s.routes[class] = true
    local ladder = route.ladder_of(e)
    if ladder then s.ladders[class] = ladder.name end
  end
  return s
end

-- compile_redact(v) -> list of Lua patterns whose matches are replaced by
-- [REDACTED] in decision messages, after the built-in secrets. Each must be
-- affordable on a message of the longest size a policy sees (4 KiB).
local function compile_redact(v)
  if v == nil then return EMPTY end
  if type(v) ~= "table" then fail("redact: expected a list of Lua patterns, got %s", type(v)) end
  local out = {}
  for i, pat in ipairs(v) do
    if type(pat) ~= "string" or pat == "" then fail("redact[%d]: expected a non-empty Lua pattern", i) end
    local ok, err = pcall(string.find, "", pat)
    if not ok then fail("redact[%d]: %s", i, tostring(err):gsub("^.-: ", "")) end
    if not pattern.affordable(pat, MESSAGE_SCAN_MAX) then
      fail("redact[%d]: pattern %q is too costly on a 4 KiB message", i, pat)
    end
    out[i] = pat
  end
  return out
end

-- build(spec) -> Policy; raises a message without the "policy 'x':" prefix.
local function build(spec)
  for k in pairs(spec) do
    if not KNOWN[k] then fail("unknown field %s", tostring(k)) end
  end
  local version = spec.version
  if type(version) == "number" then version = tostring(version) end
  if type(version) ~= "string" or version == "" then
    fail("version missing (a string such as \"3\" or \"2024-06-01\")")
  end
  if spec.description ~= nil and type(spec.description) ~= "string" then
    fail("description must be a string")
  end
  local schedules, rungs = schedule.compile_all(spec.retry)
  local route_fn, entries = route.compile(spec.route, schedules)
  local route_entries = type(spec.route) ~= "function" and entries or nil
  local pol = new_policy({
    name = spec.name,
    version = version,
    id = spec.name .. "@" .. version,
    description = spec.description,
    schedules = schedules,
    rungs = rungs,
    random = math.random,
    _route = route_fn,
    _route_entries = route_entries, -- nil: the route is a function
    redact = compile_redact(spec.redact),
    -- no function of the policy's own sees failure, ctx or record
    _private = type(spec.classify) ~= "function" and type(spec.route) ~= "function",
  })
  local classify_reads
  pol._classify, classify_reads = classify.compile(spec.classify)
  pol._reads_record = classify_reads or type(spec.route) == "function"
  pol.shape = shape(spec, entries, schedules)
  pol.unguarded = route.unguarded_classes(route_entries)
  pol.envelope = route.class_envelope(route_entries)
  pol.examples = examples.compile(spec.examples)
  local ok, err = examples.run(pol, pol.examples)
  if not ok then error(err, 0) end
  return pol
end

-- define(spec) -> Policy
-- Compiles and self-tests a policy spec. Raises (at the caller's line)
-- "policy '<name>': <problem>" when anything is wrong.
-- pol.deprecations lists what the spec says under an old name and what to
-- write instead (errgate.renamed), for errgate.lint and the C core's load log.
function policy.define(spec)
  if type(spec) ~= "table" then
    error("policy: define expects a table, got " .. type(spec), 2)
  end
  local name = spec.name
  if type(name) ~= "string" or not name:match("^[%w_][%w_%.%-]*$") then
    error("policy: name missing or invalid (a non-empty string of letters, digits, _ . -)", 2)
  end
  local close = renamed.collect()
  local ok, pol = pcall(build, spec)
  local notes = close()
  table.sort(notes)
  if not ok then error(("policy '%s': %s"):format(name, tostring(pol)), 2) end
  pol.deprecations = notes
  return pol
end

-- is(v) -> boolean: v is a Policy built by define().
function policy.is(v)
  return built[v] == true
end

-- Policy:classify(failure, record) -> class, code
-- The classification alone (failure need not be normalized). class is never
-- nil ("unknown" at worst); code is the full default-filled code.
function Policy:classify(f, record)
  f = failure.normalize(f)
  if type(record) ~= "table" then record = {} end
  local class, code = self._classify(f, record)
  return class or "unknown", code or f.code or failure.default_code(f)
end

local BREAKER = { closed = true, open = true, half_open = true }
local type, tonumber = type, tonumber
local fill, default_code = failure.fill, failure.default_code
local resolve_values, finalize_values = route.resolve_values, decision.finalize_values

local retry_count = route.retry_count

-- decider(pol, reuse) -> decide_fields (see Policy:scalar_decider)
-- The whole decision, in one function so that no value is passed twice:
-- normalize the failure -> classify -> the route's ctx (the C core's fields
-- checked and defaulted as described at the top of this file, plus class,
-- code and streak) -> route -> finalize (errgate.decision). A route table
-- reads only six of the ctx's fields: they are passed to it as values and
-- no ctx table is made (none of them for an entry marked fixed); a route
-- function gets a fresh ctx table. With
-- reuse (only for a policy with no function of its own that could keep a
-- reference), the normalized failure is written into the same table at
-- every call and a missing record is one shared empty table.
local function decider(pol, reuse)
  local classify_fn, route_fn, entries = pol._classify, pol._route, pol._route_entries
  local patterns, random = pol.redact, pol.random
  local default_entry = entries and entries.default
  local f_reused = reuse and fill(nil, "lua") or nil
  local no_record = {}
  return function(kind, status, code, class_hint, message, body, retry_after_ms, latency_ms,
                  attempt, last_class, class_attempts, ordering, now_ms, first_failure_ms, last_delay_ms,
                  rcount, rung, breaker, retry_budget, record)
    local f = fill(f_reused, kind, status, code, class_hint, message, body, retry_after_ms, latency_ms)
    if type(record) ~= "table" then
      record = reuse and no_record or {} -- fresh when user code may write to it
    end
    local class
    class, code = classify_fn(f, record)
    class = class or "unknown"
    code = code or f.code or default_code(f)
    local e = entries and (entries[class] or default_entry)
    if e and e.fixed then -- the same draft whatever the ctx (errgate.route)
      return finalize_values(f, patterns, class, code, resolve_values(e))
    end
    class_attempts = tonumber(class_attempts) or 0
    local same = class == last_class
    local streak = same and class_attempts + 1 or 1
    -- the previous retry's delay, for decorrelated jitter (same class only)
    last_delay_ms = same and tonumber(last_delay_ms) or nil
    if e then -- the route reads retry_count, retry_budget and the times as they came, when it needs them
      return finalize_values(f, patterns, class, code,
        resolve_values(e, f, random, streak, rcount, retry_budget, now_ms, first_failure_ms, last_delay_ms))
    end
    local now = tonumber(now_ms)
    local ctx = {
      retry_count = retry_count(rcount),
      rung = type(rung) == "string" and rung or nil,
      breaker = BREAKER[breaker] and breaker or "closed",
      retry_budget = retry_budget ~= false,
      attempt = tonumber(attempt) or 1,
      last_class = last_class,
      class_attempts = class_attempts,
      ordering = ordering or "partition",
      now_ms = now or 0,
      first_failure_ms = tonumber(first_failure_ms) or now or 0,
      last_delay_ms = last_delay_ms,
      class = class,
      code = code,
      streak = streak,
    }
    return finalize_values(f, patterns, class, code, route_fn(class, f, record, ctx, random))
  end
end

-- Policy:decide(failure, record, ctx) -> decision
-- failure: see errgate.failure; record: { topic, partition, offset, key,
-- timestamp, headers }; ctx: see the top of this file (record and ctx may
-- be nil in tests). Returns { action, class, code, reason, delay_ms,
-- message [, rung, rung_index] } (see errgate.decision); raises on an
-- invalid failure or decision.
function Policy:decide(f, record, ctx)
  f = failure.normalize(f)
  if type(record) ~= "table" then record = {} end -- fresh: user code may write to it
  if type(ctx) ~= "table" then ctx = EMPTY end
  return decision.pack(decider(self, false)(f.kind, f.status, f.code, f.class_hint, f.message, f.body,
    f.retry_after_ms, f.latency_ms, ctx.attempt, ctx.last_class, ctx.class_attempts, ctx.ordering, ctx.now_ms,
    ctx.first_failure_ms, ctx.last_delay_ms, ctx.retry_count, ctx.rung, ctx.breaker, ctx.retry_budget, record))
end

-- Policy:scalar_decider() -> decide_fields, reads_record
-- The decision as the C core makes it, for this policy object:
--   decide_fields(kind, status, code, class_hint, message, body,
--                 retry_after_ms, latency_ms,                  -- the failure
--                 attempt, last_class, class_attempts, ordering, now_ms,
--                 first_failure_ms, last_delay_ms, retry_count, rung,
--                 breaker, retry_budget,                       -- the ctx
--                 record)
--     -> action, class, code, reason, delay_ms, message, rung, rung_index, approval, protect
-- gives the fields of decide(failure, record, ctx) for the same values (nil
-- for a field left out; decide goes through the same function), and raises
-- where decide raises. reads_record is false when the policy never looks at
-- the record: the caller may then pass nil for it. Not re-entrant (it may
-- reuse its tables between calls).
function Policy:scalar_decider()
  return decider(self, self._private), self._reads_record
end

-- Policy:with_random(fn) -> Policy
-- A copy of this policy whose jitter draws from fn (returns [0, 1)).
function Policy:with_random(fn)
  local copy = {}
  for k, v in pairs(self) do copy[k] = v end
  copy.random = fn
  return new_policy(copy)
end

return policy
