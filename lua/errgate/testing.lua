-- errgate.testing — helpers for busted specs of policies.
--
-- Specs load a policy exactly as the gateway does (testing.load goes through
-- the sandboxed loader), build failures, records and contexts with terse
-- builders, and decide through errgate.runtime, so a spec exercises the same
-- path as production minus the C core. testing.next_ctx is the reference
-- model of the bookkeeping the C core does between attempts of one record
-- (attempt, last_class, class_attempts; and after a ladder decision, the
-- record consumed again from its rung: retry_count, rung);
-- testing.sequence replays a series of failures of one record through it.
-- Builders take an optional table of overrides; anything not given gets a
-- plausible default. Not available to sandboxed files.
--
-- Ladders, breaker and retry budget in a spec:
--   local d = t.decide(pol, t.http(503), nil, { retry_count = 2 })
--   assert.are.same({ "ladder", "1h", 3 }, { d.action, d.rung, d.rung_index })
--   t.decide(pol, t.circuit_open(), nil, { breaker = "open" })  -- the breaker
--   t.decide(pol, t.http(503), nil, { retry_budget = false })    -- no budget
--   t.on_rung(pol, 2)          -- the ctx of a record consumed from rung 2
--   t.rungs(pol)               -- what the C core gets from rt.ladder_rungs
-- A ctx given to t.decide may be partial: t.ctx fills the rest.
-- t.decide_fields decides through the function the C core calls
-- (rt.decider: the failure and ctx as separate values), for specs that
-- check both paths agree.
local decision = require "errgate.decision"
local rt = require "errgate.runtime"

local testing = {}

local NOW_MS = 1700000000000

-- load(path) -> policy. Raises the loader's one-line error.
function testing.load(path)
  local pol, err = rt.load_policy(path)
  if not pol then error(err, 2) end
  return pol
end

-- load_target(path) -> fn(record). Raises the loader's one-line error.
function testing.load_target(path)
  local fn, err = rt.load_target(path)
  if not fn then error(err, 2) end
  return fn
end

-- http(status, opts) -> failure of kind "http".
-- opts: retry_after_ms, class (the Error-Class header), code (Error-Code),
-- message, body, latency_ms.
function testing.http(status, opts)
  opts = opts or {}
  return {
    kind = "http", status = status,
    class_hint = opts.class, code = opts.code,
    message = opts.message, body = opts.body,
    retry_after_ms = opts.retry_after_ms, latency_ms = opts.latency_ms or 12,
  }
end

-- timeout(opts) -> failure of kind "timeout" (opts: latency_ms, message).
function testing.timeout(opts)
  opts = opts or {}
  return { kind = "timeout", latency_ms = opts.latency_ms or 5000, message = opts.message }
end

-- connect_refused(opts) -> failure of kind "connect" (opts: message).
function testing.connect_refused(opts)
  opts = opts or {}
  return { kind = "connect", latency_ms = 1, message = opts.message or "connection refused" }
end

-- lua_error(msg) -> failure of kind "lua" (an error raised by a Lua target).
function testing.lua_error(msg)
  return { kind = "lua", latency_ms = 0, message = msg or "lua target error" }
end

-- circuit_open() -> failure of kind "circuit_open", as the C core reports a
-- record it did not send because the target's breaker is open (pair it with
-- ctx { breaker = "open" }).
function testing.circuit_open()
  return { kind = "circuit_open", latency_ms = 0, message = "circuit open" }
end

-- record(fields) -> record: topic "orders", partition 0, offset 0, key nil,
-- timestamp NOW, headers {} unless given.
function testing.record(fields)
  fields = fields or {}
  return {
    topic = fields.topic or "orders",
    partition = fields.partition or 0,
    offset = fields.offset or 0,
    key = fields.key,
    timestamp = fields.timestamp or NOW_MS,
    headers = fields.headers or {},
  }
end

-- ctx(fields) -> ctx for the first failure of a source record unless
-- overridden: attempt 1, last_class nil, class_attempts 0, ordering
-- "partition", now_ms NOW, first_failure_ms = now_ms, last_delay_ms nil,
-- retry_count 0, rung nil, breaker "closed", retry_budget true.
function testing.ctx(fields)
  fields = fields or {}
  local now = fields.now_ms or NOW_MS
  local budget = fields.retry_budget
  if budget == nil then budget = true end
  return {
    attempt = fields.attempt or 1,
    last_class = fields.last_class,
    class_attempts = fields.class_attempts or 0,
    ordering = fields.ordering or "partition",
    now_ms = now,
    first_failure_ms = fields.first_failure_ms or now,
    last_delay_ms = fields.last_delay_ms,
    retry_count = fields.retry_count or 0,
    rung = fields.rung,
    breaker = fields.breaker or "closed",
    retry_budget = budget,
  }
end

-- rungs(pol) -> rt.ladder_rungs(pol): { { name, delay_ms }, ... }
function testing.rungs(pol)
  return rt.ladder_rungs(pol)
end

-- on_rung(pol, i, fields) -> ctx of a record consumed from rung i (the i-th
-- of rt.ladder_rungs(pol), i.e. having climbed i rungs): retry_count = i,
-- rung = its name, otherwise testing.ctx(fields). Raises when there is no
-- such rung.
function testing.on_rung(pol, i, fields)
  local r = rt.ladder_rungs(pol)[i]
  if not r then error(("on_rung: policy %s has no rung %s"):format(pol.id, tostring(i)), 2) end
  local c = testing.ctx(fields)
  c.retry_count, c.rung = i, r.name
  return c
end

-- decide(pol, failure, record, ctx) -> decision, through rt.decide, with
-- testing.record{} when record is nil and testing.ctx(ctx) (the defaults
-- filled in under a partial ctx, nil meaning all defaults).
function testing.decide(pol, f, record, ctx)
  return rt.decide(pol, f, record or testing.record(), testing.ctx(ctx))
end

-- decide_fields(pol, failure, record, ctx) -> decision, through the
-- function the C core calls (rt.decider(pol), made once per policy object
-- and reused, as the gateway does), with record and ctx given as they are
-- (nil stays nil: the C core always passes a full ctx, a spec may not).
local deciders = setmetatable({}, { __mode = "k" })
function testing.decide_fields(pol, f, record, ctx)
  local fn = deciders[pol]
  if not fn then
    fn = rt.decider(pol)
    deciders[pol] = fn
  end
  ctx = ctx or {}
  return decision.pack(fn(f.kind, f.status, f.code, f.class_hint, f.message, f.body, f.retry_after_ms,
    f.latency_ms, ctx.attempt, ctx.last_class, ctx.class_attempts, ctx.ordering, ctx.now_ms,
    ctx.first_failure_ms, ctx.last_delay_ms, ctx.retry_count, ctx.rung, ctx.breaker, ctx.retry_budget, record))
end

-- next_ctx(ctx, d) -> ctx for the next failure of the same record after
-- decision d: the clock advanced by d.delay_ms; after a ladder decision,
-- the record as consumed from rung d.rung: retry_count = d.rung_index,
-- rung = d.rung, a fresh attempt count (attempt 1, no last_class); after
-- any other decision, attempt + 1, class_attempts + 1 if d.class ==
-- last_class else 1, last_class = d.class, last_delay_ms = d.delay_ms.
-- first_failure_ms, ordering, breaker and retry_budget are kept.
function testing.next_ctx(ctx, d)
  local c = {}
  for k, v in pairs(ctx) do c[k] = v end
  c.now_ms = ctx.now_ms + (d.delay_ms or 0)
  if d.action == "ladder" then
    c.attempt, c.last_class, c.class_attempts, c.last_delay_ms = 1, nil, 0, nil
    c.retry_count, c.rung = d.rung_index, d.rung
    return c
  end
  local same = d.class == ctx.last_class
  c.attempt = ctx.attempt + 1
  c.last_class = d.class
  c.class_attempts = same and ctx.class_attempts + 1 or 1
  c.last_delay_ms = d.delay_ms
  return c
end

-- sequence(pol, failures, n, record, ctx) -> { decision, ... }
-- The decisions for consecutive failures of one record: failures is a list
-- of failures, or a single failure repeated n times. Every failure is
-- decided, whatever the previous decision was; ctx (partial, optional) is
-- the first failure's, then next_ctx models the C core (ladder decisions
-- included: a sequence walks the rungs).
function testing.sequence(pol, failures, n, record, ctx)
  if failures.kind then
    local list = {}
    for i = 1, n or 1 do list[i] = failures end
    failures = list
  end
  record = record or testing.record()
  local out = {}
  ctx = testing.ctx(ctx)
  for i, f in ipairs(failures) do
    out[i] = rt.decide(pol, f, record, ctx)
    ctx = testing.next_ctx(ctx, out[i])
  end
  return out
end

return testing
