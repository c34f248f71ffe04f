-- errgate.failure — one normal form for what the target reported.
--
-- The C core (or a test) hands the policy a failure table: kind ("http",
-- "timeout", "connect", "lua", "circuit_open"), status, code (Error-Code
-- header), class_hint (Error-Class header), message, retry_after_ms,
-- latency_ms, body (<= 4 KiB). "circuit_open" is not an answer from the
-- target: the C core did not send the record because the target's circuit
-- breaker is open, and asks the policy what to do instead (message
-- "circuit open", no status; ctx.breaker says "open"). "recorded" is not an
-- answer either: in inbox mode (source.inbox) the record is a failure another
-- system recorded on a DLQ, mapped by errgate.recorded.inbox; no target ran;
-- its body is that mapper's JSON, read into format, exception, original and
-- delivery_count (recorded_fields below).
-- normalize() returns a fresh table (the caller's table may be reused by C
-- and is never modified) with types checked, strings capped so later pattern
-- matching stays cheap, and the body mined (errgate.json) for a structured error: a JSON
-- object `{"error": {"class": ..., "code": ..., "message": ...}}` fills
-- class_hint, code and message where headers did not already set them
-- (headers win: they are the service's deliberate answer). `"error": "text"`
-- fills message only. Normalizing twice gives the same result. fill() is the
-- same normal form written from separate values into a given table: the C
-- core's decision path passes scalars, not a table (errgate.policy).
-- default_code() and describe() keep the strings they made per status, so
-- the hot path formats each "http_503" once.
local json = require "errgate.json"

local failure = {}

-- the real functions, held before errgate.sandbox.harden() guards string
-- methods: the one pattern here is anchored and ours
local find, format, floor = string.find, string.format, math.floor
local type, tonumber = type, tonumber

-- failure.KINDS: the kinds of failure a target (or the breaker) can report.
failure.KINDS = { http = true, timeout = true, connect = true, lua = true, circuit_open = true, recorded = true }
-- failure.KIND_LIST: the same, in a stable order for messages.
failure.KIND_LIST = "http, timeout, connect, lua, circuit_open, recorded"

local CAP = { code = 128, class_hint = 64, message = 4096, body = 4096 }
local CAP_CODE, CAP_HINT, CAP_MESSAGE, CAP_BODY = CAP.code, CAP.class_hint, CAP.message, CAP.body
local KINDS = failure.KINDS

local function str(v, cap)
  if type(v) == "number" then v = tostring(v) end
  if type(v) ~= "string" or v == "" then return nil end
  return #v > cap and v:sub(1, cap) or v
end

local function num(v)
  v = tonumber(v)
  if v == nil or v ~= v then return nil end
  return v
end

-- json_error(body) -> body_error(body) for a body that starts like a JSON object
local function json_error(body)
  local doc = json.decode(body)
  if type(doc) ~= "table" then return nil end
  local e = doc.error
  if type(e) == "string" then return nil, nil, str(e, CAP.message) end
  if type(e) ~= "table" then return nil end
  return str(e.class, CAP.class_hint), str(e.code, CAP.code), str(e.message, CAP.message)
end

-- body_error(body) -> class, code, message (each string or nil)
-- The structured error in a JSON response body, if there is one.
function failure.body_error(body)
  if type(body) ~= "string" or not find(body, "^%s*{") then return nil end
  if #body > CAP_BODY then return nil end -- a body is capped first (fill): no larger one is decoded
  return json_error(body)
end

-- fill(n, kind, status, code, class_hint, message, body, retry_after_ms,
--      latency_ms) -> n
-- Writes the normal form of a failure given field by field into n (every
-- field is assigned, so a reused n keeps nothing of its previous failure;
-- nil: a fresh table) and returns n. Raises "invalid failure: ..." when kind
-- is unknown.
-- recorded_fields(n, kind, body): a recorded failure's (inbox mode) body is
-- errgate.recorded.inbox's JSON {format, exception, delivery_count,
-- original = {format, topic, partition, offset, timestamp, group}}: set as
-- n.format, n.exception, n.delivery_count, n.original (a fresh table), each
-- only with the right type; cleared for any other kind (a reused n).
local function recorded_fields(n, kind, body)
  local doc = kind == "recorded" and body and json.decode(body)
  if type(doc) ~= "table" then doc = {} end
  local o = doc.original
  n.format = type(doc.format) == "string" and doc.format or nil
  n.exception = type(doc.exception) == "string" and doc.exception or nil
  n.delivery_count = type(doc.delivery_count) == "number" and doc.delivery_count or nil
  if type(o) == "table" and type(o.topic) == "string" then
    n.original = { format = type(o.format) == "string" and o.format or nil, topic = o.topic,
                   partition = type(o.partition) == "number" and o.partition or nil,
                   offset = type(o.offset) == "number" and o.offset or nil,
                   timestamp = type(o.timestamp) == "number" and o.timestamp or nil,
                   group = type(o.group) == "string" and o.group or nil }
  else
    n.original = nil
  end
end

function failure.fill(n, kind, status, code, class_hint, message, body, retry_after_ms, latency_ms)
  if not KINDS[kind] then
    error("invalid failure: unknown kind " .. tostring(kind) .. " (" .. failure.KIND_LIST .. ")", 0)
  end
  -- the constructor sizes a fresh table for every field assigned below
  n = n or { kind = true, status = true, code = true, class_hint = true, message = true, body = true,
             retry_after_ms = true, latency_ms = true }
  n.kind = kind
  -- most fields are absent or already well-formed (the C core's are): the
  -- checks below call num() and str() only for the others
  if status ~= nil and (type(status) ~= "number" or status ~= status) then status = num(status) end
  n.status = status
  if code ~= nil and (type(code) ~= "string" or code == "" or #code > CAP_CODE) then code = str(code, CAP_CODE) end
  if class_hint ~= nil and (type(class_hint) ~= "string" or class_hint == "" or #class_hint > CAP_HINT) then
    class_hint = str(class_hint, CAP_HINT)
  end
  if message ~= nil and (type(message) ~= "string" or message == "" or #message > CAP_MESSAGE) then
    message = str(message, CAP_MESSAGE)
  end
  if body ~= nil and (type(body) ~= "string" or body == "" or #body > CAP_BODY) then body = str(body, CAP_BODY) end
  n.body = body
  if retry_after_ms ~= nil then
    retry_after_ms = num(retry_after_ms)
    if retry_after_ms and retry_after_ms < 0 then retry_after_ms = nil end
  end
  n.retry_after_ms = retry_after_ms
  if type(latency_ms) ~= "number" or latency_ms ~= latency_ms then latency_ms = num(latency_ms) or 0 end
  n.latency_ms = latency_ms
  if body and not (class_hint and code and message) and find(body, "^%s*{") then
    local bclass, bcode, bmessage = json_error(body)
    class_hint, code, message = class_hint or bclass, code or bcode, message or bmessage
  end
  n.code, n.class_hint, n.message = code, class_hint, message
  if kind == "recorded" or n.format ~= nil then recorded_fields(n, kind, body) end
  return n
end

-- normalize(f) -> failure
-- A fresh, checked copy of f. Raises "invalid failure: ..." when f is not a
-- table or its kind is unknown. Fields: kind, status (number|nil), code,
-- class_hint, message, body (string|nil, capped), retry_after_ms (number|nil,
-- >= 0), latency_ms (number, default 0).
function failure.normalize(f)
  if type(f) ~= "table" then
    error("invalid failure: expected a table, got " .. type(f), 0)
  end
  return failure.fill(nil, f.kind, f.status, f.code, f.class_hint, f.message, f.body, f.retry_after_ms, f.latency_ms)
end

-- made per integer status (and per timeout latency): a few hundred short
-- strings at most, reset when full
local HTTP_CODE, HTTP_TEXT, TIMEOUT_TEXT = {}, {}, {}
local timeout_texts, TIMEOUT_TEXT_MAX = 0, 256

local function small_int(v)
  return v % 1 == 0 and v >= 0 and v < 1000
end

-- default_code(f) -> string
-- The code a failure gets when neither the policy nor the service named one:
-- "http_503" for an HTTP status, otherwise the kind ("timeout", "connect",
-- "lua", "circuit_open").
function failure.default_code(f)
  local s = f.status
  if f.kind ~= "http" or not s then return f.kind end
  local c = HTTP_CODE[s]
  if c then return c end
  c = format("http_%d", floor(s))
  if small_int(s) then HTTP_CODE[s] = c end
  return c
end

-- describe(f) -> string
-- A short human description used when the failure carries no message:
-- "HTTP 503", "timeout after 5000 ms", "connection failed", "circuit open",
-- "lua error".
function failure.describe(f)
  local kind = f.kind
  if kind == "http" then
    local s = f.status
    if not s then return "HTTP error" end
    local t = HTTP_TEXT[s]
    if t then return t end
    t = format("HTTP %d", floor(s))
    if small_int(s) then HTTP_TEXT[s] = t end
    return t
  elseif kind == "timeout" then
    local ms = f.latency_ms or 0
    local t = TIMEOUT_TEXT[ms]
    if t then return t end
    t = format("timeout after %d ms", ms)
    if ms % 1 == 0 then -- not NaN or infinite: a usable key
      if timeout_texts >= TIMEOUT_TEXT_MAX then TIMEOUT_TEXT, timeout_texts = {}, 0 end
      TIMEOUT_TEXT[ms], timeout_texts = t, timeout_texts + 1
    end
    return t
  elseif kind == "connect" then
    return "connection failed"
  elseif kind == "circuit_open" then
    return "circuit open"
  elseif kind == "recorded" then
    return "recorded failure"
  end
  return "lua error"
end

return failure
