-- errgate.route — from a class to what happens to the record.
--
-- A route table maps class names to entries; the reserved key `default`
-- (required) catches every class the table does not name. An entry is:
--   "dlq" | "quarantine" | "ignore" | "hold" | "stop"
--   { retry = "schedule", exhausted = "dlq" }   retry in place with the named
--        schedule; once its attempts are used up, the `exhausted` entry
--        (any terminal entry, default "dlq") applies with reason "exhausted"
--   { ladder = "name", exhausted = "dlq" }      climb the named ladder: the
--        record goes to its next rung topic (see "Ladders" below); after the
--        last rung the `exhausted` entry (a terminal entry, default "dlq")
--        applies with reason "exhausted"
--   { retry = "quick", exhausted = { ladder = "name" [, exhausted = ...] } }
--        escalation: retry in place first, then climb the ladder
--   { replay = "original" | "TOPIC", after = "5s" }   inbox mode: republish the
--        record (key, value, headers) to its original topic or the named one,
--        not before `after` (default 0): it waits on the inbox's replay rung
--   { action = "hold", delay = "5s", reason = ..., code = ..., message = ... }
--        the long form of a terminal entry; action = "retry" is allowed here
--        with an explicit delay (the old name delay_ms is still read, with a
--        note: errgate.renamed)
--   { dlq = true, approval = true }   (or quarantine = true, or action =
--        "dlq", with the long form's other keys) a lane write whose item
--        starts pending-approval: the record carries errgate.approval:
--        required and `errgate replay` leaves it until `errgate dlq approve`
--   { action = "dlq", guard = false }   (dlq and quarantine only) this class
--        always dead-letters, even while the gateway's dead-letter flood
--        guard (dlq_guard) holds other classes' dead letters; also as the
--        exhausted entry of a retry or ladder. In a route table only, under
--        a class's own name (not `default`); see route.unguarded_classes
--   any entry (terminal, retry, ladder, replay) may also say what a person
--        reading the dead letter needs: hint = "..." (a remediation hint, 1
--        to 255 bytes, the lane record's errgate.hint) and retryable = true
--        or false (errgate.retryable; default: true for an entry that
--        retries, climbs, replays or holds, false otherwise); in a route
--        table they belong to the class (route.class_envelope)
-- The bare action "ladder" is refused: a ladder needs a schedule, so write
-- { ladder = "name" }.
-- One long form, and shorthands of it: a terminal entry is
--   { action = "dlq"|"quarantine"|"ignore"|"hold"|"stop"|"retry",
--     delay = "5s", reason = "...", code = "...", message = "...",
--     approval = true, guard = false }
-- and "dlq" stands for { action = "dlq" }, { dlq = true } for the same,
-- { retry = "s" } / { ladder = "l" } / { replay = ... } are the schedule,
-- ladder and replay entries. A table that is none of these is refused with
-- the long form in the message (LONG_FORM).
-- A route may instead be a function(failure, record, ctx) returning an entry
-- in any of these forms; ctx is then the C core's ctx plus class, code and
-- streak (see errgate.policy). The class itself is not a route's to change:
-- the retry count is kept per class, so a route that relabels would reset it.
-- Retry counting: streak = failures of this class in a row, including this
-- one (1 after a class change); retry n = streak while streak <= attempts.
--
-- Ladders. ctx.retry_count is the number of rungs the record has climbed
-- (its retry.count header; 0 for a source record), on any ladder. The next
-- rung is retry_count + 1: while the ladder has it, the draft is
--   { action = "ladder", rung = <rung name>, rung_index = retry_count + 1,
--     delay_ms = <rung delay, raised to Retry-After (capped) if honoured> }
-- and past the last rung the ladder's exhausted entry applies. An escalation
-- entry applies its in-place retries only to a record that has not climbed
-- yet (retry_count == 0); a record consumed from a rung climbs on at once,
-- so an outage does not cost a burst of in-place retries at every rung.
--
-- Retry budget. When an entry resolves to an in-place retry and
-- ctx.retry_budget is false (the target's retry budget has no room now):
-- an escalation entry climbs its ladder at once (reason "retry_budget");
-- any other retry becomes a hold with the retry's delay (reason
-- "retry_budget"). A hold waits without a request, so it spends no budget.
-- compile-time errors are "route...: ..." strings without position.
-- A draft travels as separate values (action, reason, delay_ms, code,
-- message, rung, rung_index), not as a table: resolve_values() and the
-- compiled route return them, errgate.decision.finalize_values() takes
-- them; resolve() packs them for callers that want the table.
local backoff = require "errgate.backoff"
local duration = require "errgate.duration"
local renamed = require "errgate.renamed"

local floor_retry_after, retry_delay, delay = backoff.floor_retry_after, backoff.retry_delay, backoff.delay
local type, tonumber, floor = type, tonumber, math.floor

local route = {}

local TERMINAL = { dlq = true, quarantine = true, ignore = true, hold = true, stop = true }
local LONG_KEYS = { action = true, delay = true, delay_ms = true, reason = true, code = true, message = true,
                    approval = true, dlq = true, quarantine = true, guard = true, protect = true, hint = true,
                    retryable = true }
local PROTECT = { none = true, mask = true, encrypt = true, pointer = true }
local RETRY_KEYS = { retry = true, exhausted = true, hint = true, retryable = true }
local LADDER_KEYS = { ladder = true, exhausted = true, hint = true, retryable = true }
local REPLAY_KEYS = { replay = true, after = true, hint = true, retryable = true }

local function fail(where, fmt, ...)
  error(where .. ": " .. fmt:format(...), 0)
end

local LONG_FORM = "a route entry's long form is { action = \"dlq\" | \"quarantine\" | \"ignore\" | \"hold\" | "
  .. "\"stop\" | \"retry\", delay = \"5s\", reason = \"...\", code = \"...\", message = \"...\", "
  .. "approval = true, guard = false, protect = \"mask\" | \"encrypt\" | \"pointer\" | \"none\", "
  .. "hint = \"...\", retryable = true }; "
  .. "\"dlq\" is short for { action = \"dlq\" }, and { retry = \"schedule\" }, "
  .. "{ ladder = \"name\" }, { replay = \"original\" } name a schedule, a ladder, a replay"

-- long_form(where, fmt, ...): fail, pointing at the long form
local function long_form(where, fmt, ...)
  error(where .. ": " .. fmt:format(...) .. " (" .. LONG_FORM .. ")", 0)
end

local function check_keys(where, t, known)
  for k in pairs(t) do
    if not known[k] then fail(where, "unknown key %s", tostring(k)) end
  end
end

local function check_action(where, a, allow_retry)
  if a == "ladder" then fail(where, "a ladder needs a schedule: write { ladder = \"name\" }") end
  if a == "retry" and not allow_retry then
    fail(where, "retry needs a schedule: { retry = \"name\" }")
  end
  if not TERMINAL[a] and a ~= "retry" then
    fail(where, "unknown action %s (want dlq, quarantine, ignore, hold, stop, { retry = \"schedule\" }"
      .. " or { ladder = \"name\" })", tostring(a))
  end
end

local function opt_string(where, t, key)
  local v = t[key]
  if v ~= nil and (type(v) ~= "string" or v == "") then fail(where, "%s must be a non-empty string", key) end
  return v
end

-- envelope(where, e, out) -> out with e's hint and retryable checked and
-- copied (what the lane record's errgate.hint and errgate.retryable say)
local function envelope(where, e, out)
  if e.hint ~= nil and (type(e.hint) ~= "string" or e.hint == "" or #e.hint > 255) then
    fail(where, "hint must be a string of 1 to 255 bytes")
  end
  if e.retryable ~= nil and type(e.retryable) ~= "boolean" then fail(where, "retryable must be true or false") end
  out.hint, out.retryable = e.hint, e.retryable
  return out
end

-- compile_terminal(where, e, allow_retry) -> entry; fixed is set on every
-- terminal entry but a retry (whose over-budget hold depends on the ctx):
-- it resolves to the same draft whatever the failure and ctx
local function compile_terminal(where, e, allow_retry)
  if type(e) == "string" then
    check_action(where, e, false)
    return { action = e, fixed = true }
  end
  if type(e) ~= "table" then fail(where, "expected an action string or table, got %s", type(e)) end
  if e.class ~= nil then fail(where, "class is decided by classify; a route cannot change it") end
  for k in pairs(e) do
    if not LONG_KEYS[k] then long_form(where, "unknown key %s", tostring(k)) end
  end
  local action = e.action
  for _, lane in ipairs({ "dlq", "quarantine" }) do -- { dlq = true, ... }: the lane as a flag
    if e[lane] ~= nil then
      if e[lane] ~= true then fail(where, "%s must be true", lane) end
      if action ~= nil and action ~= lane then fail(where, "%s = true and action %s in one entry", lane, action) end
      action = lane
    end
  end
  if action == nil then long_form(where, "no action") end
  check_action(where, action, allow_retry)
  if e.approval ~= nil and type(e.approval) ~= "boolean" then fail(where, "approval must be true or false") end
  if e.approval and action ~= "dlq" and action ~= "quarantine" then
    fail(where, "approval applies to dlq and quarantine only")
  end
  if e.protect ~= nil then
    if not PROTECT[e.protect] then fail(where, "protect must be \"mask\", \"encrypt\", \"pointer\" or \"none\"") end
    if action ~= "dlq" and action ~= "quarantine" then fail(where, "protect applies to dlq and quarantine only") end
  end
  local out = {
    action = action,
    approval = e.approval or nil,
    protect = e.protect,
    reason = opt_string(where, e, "reason"),
    code = opt_string(where, e, "code"),
    message = opt_string(where, e, "message"),
    fixed = action ~= "retry",
  }
  envelope(where, e, out)
  if e.guard ~= nil then
    if type(e.guard) ~= "boolean" then fail(where, "guard must be a boolean") end
    if e.action ~= "dlq" and e.action ~= "quarantine" then fail(where, "guard only applies to dlq and quarantine") end
    out.guard = e.guard
  end
  local wait = renamed.get(where, e, "delay", "delay_ms")
  if wait ~= nil then
    if action ~= "hold" and action ~= "retry" then fail(where, "delay only applies to hold and retry") end
    local ms, err = duration.parse(wait)
    if not ms then fail(where, "delay: %s", err) end
    out.delay_ms = ms
  elseif action == "retry" then
    fail(where, "action retry needs a delay (or use { retry = \"schedule\" })")
  end
  return out
end

-- schedule_named(where, kind, name, schedules, shape) -> schedule of that shape
local function schedule_named(where, key, name, schedules, shape)
  local s = type(name) == "string" and schedules[name] or nil
  if not s then fail(where, "%s schedule %s is not defined in retry", key, tostring(name)) end
  if s.shape ~= shape then
    if shape == "ladder" then
      fail(where, "retry.%s is an in-place schedule, not a ladder: write { retry = \"%s\" }", name, name)
    end
    fail(where, "retry.%s is a ladder: write { ladder = \"%s\" }", name, name)
  end
  return s
end

-- compile_ladder(where, e, schedules) -> { action = "ladder", ladder, exhausted }
local function compile_ladder(where, e, schedules)
  check_keys(where, e, LADDER_KEYS)
  local s = schedule_named(where, "ladder", e.ladder, schedules, "ladder")
  local ex = e.exhausted
  if ex == nil then ex = "dlq" end
  if type(ex) == "table" and ex.ladder ~= nil then
    fail(where .. ".exhausted",
      "after a ladder comes a terminal entry (dlq, quarantine, ignore, hold, stop), not another ladder")
  end
  return envelope(where, e,
    { action = "ladder", ladder = s, exhausted = compile_terminal(where .. ".exhausted", ex, false) })
end

-- compile_entry(where, e, schedules) -> entry
-- One route entry in any accepted form, checked against the schedules.
-- Raises "<where>: ..." when it is malformed.
function route.compile_entry(where, e, schedules)
  if type(e) == "table" and e.retry ~= nil then
    if e.ladder ~= nil then
      fail(where, "retry and ladder in one entry: escalate with { retry = \"%s\", exhausted = { ladder = \"%s\" } }",
        tostring(e.retry), tostring(e.ladder))
    end
    check_keys(where, e, RETRY_KEYS)
    local s = schedule_named(where, "retry", e.retry, schedules, "backoff")
    local ex = e.exhausted
    if ex == nil then ex = "dlq" end
    if type(ex) ~= "string" and type(ex) ~= "table" then fail(where .. ".exhausted", "expected an action") end
    local exhausted
    if type(ex) == "table" and ex.ladder ~= nil then
      exhausted = compile_ladder(where .. ".exhausted", ex, schedules)
    else
      exhausted = compile_terminal(where .. ".exhausted", ex, false)
    end
    return envelope(where, e, { action = "retry", schedule = s, exhausted = exhausted })
  end
  if type(e) == "table" and e.ladder ~= nil then return compile_ladder(where, e, schedules) end
  if type(e) == "table" and e.replay ~= nil then
    check_keys(where, e, REPLAY_KEYS)
    local to = e.replay
    if type(to) ~= "string" or to == "" or #to > 249 or not to:find("^[A-Za-z0-9._-]+$") then
      fail(where, "replay must be \"original\" or a topic name (1 to 249 of A-Z a-z 0-9 . _ -)")
    end
    local ms, err = 0, nil
    if e.after ~= nil then ms, err = duration.parse(e.after) end
    if not ms then fail(where, "after: %s", err) end
    return envelope(where, e, { action = "replay", replay_to = e.replay, delay_ms = ms, fixed = true })
  end
  if type(e) ~= "string" and type(e) ~= "table" then
    fail(where, "expected an action string or table, got %s", type(e))
  end
  return compile_terminal(where, e, true)
end

-- ladder_of(entry) -> the ladder schedule a compiled entry can climb, or nil.
function route.ladder_of(e)
  if e.ladder then return e.ladder end
  if e.schedule and e.exhausted.ladder then return e.exhausted.ladder end
  return nil
end

-- retry_count(v) -> ctx.retry_count as a route reads it: an integer >= 0 (0
-- for nil or anything malformed: a corrupt retry.count header must not
-- wedge a record)
function route.retry_count(v)
  if type(v) == "number" and v >= 0 and v % 1 == 0 then return v end
  v = tonumber(v)
  if v == nil or v ~= v or v < 0 then return 0 end
  return floor(v)
end
local retry_count = route.retry_count

-- elapsed_ms(now_ms, first_failure_ms) -> ms since the record's first
-- failure, as a route reads the ctx (first_failure_ms defaults to now_ms,
-- both to 0)
local function elapsed_ms(now_ms, first_failure_ms)
  now_ms = tonumber(now_ms)
  return (now_ms or 0) - (tonumber(first_failure_ms) or now_ms or 0)
end

-- terminal(e, reason) -> draft values of a compiled terminal entry
local function terminal(e, reason)
  return e.action, reason, e.delay_ms, e.code, e.message, e.replay_to, nil, e.approval, e.protect
end

-- climb(e, f, rcount, reason) -> draft values for a compiled ladder entry:
-- the next rung after rcount (ctx.retry_count), or the exhausted entry past
-- the last one.
local function climb(e, f, rcount, reason)
  local s = e.ladder
  local i = rcount + 1
  local rung = s.rungs[i]
  if not rung then return terminal(e.exhausted, e.exhausted.reason or "exhausted") end
  return "ladder", reason, (floor_retry_after(s, rung.delay_ms, f.retry_after_ms)), nil, nil, rung.name, i
end

-- resolve_values(e, f, random, streak, retry_count, retry_budget, now_ms,
--                first_failure_ms, last_delay_ms)
--   -> action, reason, delay_ms, code, message, rung, rung_index, approval, protect
-- Applies a compiled entry to the failure f given those fields of the ctx
-- (see errgate.policy; the only ones a route entry reads, passed as values
-- so that a route table needs no ctx table). streak (a number) and
-- last_delay_ms (a number or nil) must be checked already; retry_count,
-- retry_budget, now_ms and first_failure_ms may come as given (to a route
-- function's ctx or by the C core) and are read as the ctx's defaults say,
-- each only when the entry needs it. An entry with e.fixed reads none of
-- them, nor f: resolve_values(e) is enough. The draft values are finalized
-- by errgate.decision.finalize_values.
function route.resolve_values(e, f, random, streak, rcount, budget, now_ms, first_failure_ms, last_delay_ms)
  if e.ladder then return climb(e, f, retry_count(rcount)) end
  local s = e.schedule
  if s then
    local ex = e.exhausted
    if ex.ladder then
      rcount = retry_count(rcount)
      if rcount > 0 then return climb(ex, f, rcount) end -- already on the ladder
    end
    local max_elapsed = s.max_elapsed_ms
    if streak <= s.attempts and not (max_elapsed and elapsed_ms(now_ms, first_failure_ms) >= max_elapsed) then
      -- over the retry budget: an escalation climbs its ladder at once (no
      -- delay is drawn for it), any other retry holds for the retry's delay
      if budget == false and ex.ladder then return climb(ex, f, rcount, "retry_budget") end
      local ra, ms = f.retry_after_ms
      if ra == nil then
        ms = delay(s, streak, random, last_delay_ms) -- no Retry-After to floor it
      else
        ms = retry_delay(s, streak, ra, random, last_delay_ms)
      end
      if budget == false then return "hold", "retry_budget", ms end
      return "retry", nil, ms
    end
    if ex.ladder then return climb(ex, f, rcount) end
    return terminal(ex, ex.reason or "exhausted")
  end
  if e.action == "retry" and budget == false then return "hold", "retry_budget", e.delay_ms end -- over budget
  return terminal(e, e.reason)
end
local resolve_values = route.resolve_values

-- resolve_ctx(e, f, ctx, random) -> resolve_values with the fields read from
-- the ctx table
local function resolve_ctx(e, f, ctx, random)
  return resolve_values(e, f, random, ctx.streak, ctx.retry_count, ctx.retry_budget, ctx.now_ms,
                        ctx.first_failure_ms, ctx.last_delay_ms)
end

-- resolve(e, f, ctx, random) -> draft
-- Applies a compiled entry to the failure f given ctx (streak, retry_count,
-- retry_budget, now_ms, first_failure_ms, last_delay_ms): resolve_values as
-- a table { action, reason, delay_ms, code, message, rung, rung_index }
-- (absent fields nil), for errgate.decision.finalize.
function route.resolve(e, f, ctx, random)
  local action, reason, delay_ms, code, message, rung, rung_index, approval, protect = resolve_ctx(e, f, ctx, random)
  return { action = action, reason = reason, delay_ms = delay_ms, code = code, message = message,
           rung = rung, rung_index = rung_index, approval = approval, protect = protect }
end

-- unguarded_classes(entries) -> sorted list of the class names whose entry
-- (or its exhausted entry, at any depth) says guard = false: their dead
-- letters pass the gateway's flood guard. Raises for guard = false on the
-- default entry (it would exempt every class the table does not name).
function route.unguarded_classes(entries)
  local out = {}
  for class, e in pairs(entries or {}) do
    local x, free = e, false
    while x do
      if x.guard == false then free = true end
      x = x.exhausted
    end
    if free and class == "default" then
      fail("route.default", "guard = false names the classes it exempts: put it on their own entries")
    end
    if free then out[#out + 1] = class end
  end
  table.sort(out)
  return out
end

-- class_envelope(entries) -> array of { class, hint, retryable, steps }, one per
-- class of a route table (default included), sorted by class: hint is the
-- entry's own, else its exhausted entry's (at any depth), or nil;
-- retryable the entry's own, else true for an entry that retries, climbs,
-- replays or holds and false for one that dead-letters, quarantines,
-- ignores or stops; steps the steps of the ladder the entry climbs (a
-- repeated rung counts its times), or nil. nil entries (a route function):
-- an empty array.
local RETRYING = { retry = true, ladder = true, replay = true, hold = true }
function route.class_envelope(entries)
  local out = {}
  for class, e in pairs(entries or {}) do
    local hint, x = nil, e
    while x and not hint do
      hint = x.hint
      x = x.exhausted
    end
    local retryable = e.retryable
    if retryable == nil then retryable = RETRYING[e.action] == true end
    local ladder = route.ladder_of(e)
    out[#out + 1] = { class = class, hint = hint, retryable = retryable, steps = ladder and #ladder.rungs or nil }
  end
  table.sort(out, function(a, b) return a.class < b.class end)
  return out
end

local function compile_table(spec, schedules)
  local entries = {}
  for class, e in pairs(spec) do
    if type(class) ~= "string" then fail("route", "keys must be class names, got %s", tostring(class)) end
    entries[class] = route.compile_entry("route." .. class, e, schedules)
  end
  if not entries.default then fail("route", "default entry missing (every route table needs one)") end
  local default = entries.default
  return function(class, f, _, ctx, random)
    return resolve_ctx(entries[class] or default, f, ctx, random)
  end, entries
end

local function compile_function(fn, schedules)
  return function(_, f, record, ctx, random)
    local e = fn(f, record, ctx)
    if e == nil then error("invalid decision: route function returned nothing", 0) end
    local ok, compiled = pcall(route.compile_entry, "route function result", e, schedules)
    if not ok then error("invalid decision: " .. tostring(compiled), 0) end
    return resolve_ctx(compiled, f, ctx, random) -- ctx as the function left it
  end
end

-- compile(spec, schedules) -> fn(class, failure, record, ctx, random) -> draft values, entries
-- spec: a route table or a function(failure, record, ctx); schedules: the
-- compiled retry section. ctx must carry streak and retry_count (see
-- errgate.policy). entries: class -> compiled entry (nil for a function;
-- its `default` catches every other class), for errgate.lint
-- (route.ladder_of) and for resolve_values without a ctx table.
function route.compile(spec, schedules)
  if type(spec) == "function" then return compile_function(spec, schedules) end
  if type(spec) ~= "table" then fail("route", "missing (want a table of class -> action, or a function)") end
  return compile_table(spec, schedules)
end

return route
