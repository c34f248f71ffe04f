-- errgate.testing — helpers for busted specs of policies.
--
-- Specs load a policy exactly as the gateway does (testing.load goes through
-- the sandboxed loader), build failures, records and contexts with terse
-- builders, and decide through errgate.runtime, so a spec exercises the same
-- path as production minus the C core. testing.next_ctx is the reference
-- model of the bookkeeping the C core does between attempts of one record
-- (attempt, last_class, class_attempts); testing.sequence replays a series
-- of failures of one record through it. Builders take an optional table of
-- overrides; anything not given gets a plausible default. Not available to
-- sandboxed files.
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

-- ctx(fields) -> ctx for the first failure of a record unless overridden:
-- attempt 1, last_class nil, class_attempts 0, ordering "partition",
-- now_ms NOW, first_failure_ms = now_ms.
function testing.ctx(fields)
  fields = fields or {}
  local now = fields.now_ms or NOW_MS
  return {
    attempt = fields.attempt or 1,
    last_class = fields.last_class,
    class_attempts = fields.class_attempts or 0,
    ordering = fields.ordering or "partition",
    now_ms = now,
    first_failure_ms = fields.first_failure_ms or now,
  }
end

-- decide(pol, failure, record, ctx) -> decision, through rt.decide, with
-- testing.record{} / testing.ctx{} when record / ctx are nil.
function testing.decide(pol, f, record, ctx)
  return rt.decide(pol, f, record or testing.record(), ctx or testing.ctx())
end

-- next_ctx(ctx, d) -> ctx for the next failure of the same record after
-- decision d: attempt + 1; class_attempts + 1 if d.class == last_class, else
-- 1; last_class = d.class; the clock advanced by d.delay_ms.
function testing.next_ctx(ctx, d)
  local same = d.class == ctx.last_class
  local now = ctx.now_ms + (d.delay_ms or 0)
  return {
    attempt = ctx.attempt + 1,
    last_class = d.class,
    class_attempts = same and ctx.class_attempts + 1 or 1,
    ordering = ctx.ordering,
    now_ms = now,
    first_failure_ms = ctx.first_failure_ms,
  }
end

-- sequence(pol, failures, n, record) -> { decision, ... }
-- The decisions for consecutive failures of one record: failures is a list
-- of failures, or a single failure repeated n times. Every failure is
-- decided, whatever the previous decision was.
function testing.sequence(pol, failures, n, record)
  if failures.kind then
    local list = {}
    for i = 1, n or 1 do list[i] = failures end
    failures = list
  end
  record = record or testing.record()
  local ctx, out = testing.ctx(), {}
  for i, f in ipairs(failures) do
    out[i] = rt.decide(pol, f, record, ctx)
    ctx = testing.next_ctx(ctx, out[i])
  end
  return out
end

return testing
