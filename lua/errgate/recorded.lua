-- errgate.recorded — a failure recorded on a lane topic, turned back into a
-- case a policy can decide again (`errgate policy test FILE --from-topic`),
-- and (inbox(), at the end) a record of any DLQ dialect read as the failure
-- it records, for inbox mode and the DLQ commands: the one mapper of
-- recorded failures.
--
-- Input: one lane record as the C side reads it (src/commands/lane_cases.h):
--   { lane = { topic, partition, offset, timestamp }, key,
--     errgate = {...}, dlq = {...}, origin = {...}, headers = {...} }
-- with every value a string, {hex = "..."} (bytes that are not text) or
-- JSON null. case(rec) rebuilds { failure, record, ctx, decided } from
-- errgate's headers when the record carries them, else from the first
-- foreign dialect it carries:
--
-- errgate (DESIGN §4, headers.h):
--   failure.kind     error.kind; a record written before error.kind existed
--                    gets "http" with the status of an http_NNN error.code,
--                    the code itself when it names a kind (timeout, connect,
--                    lua, circuit_open), else "http" without a status; the
--                    row then says "rebuilt"
--   failure.status   error.status (or from http_NNN, as above)
--   failure.code     error.code, unless it is only the default code
--                    (http_NNN or the kind), which the policy derives anyway
--   failure.message  error.message;  failure.retry_after_ms  error.retry-after-ms
--   failure.class_hint  error.class-hint (the service's Error-Class)
--   decided          errgate.action (dlq | quarantine | ladder); without it,
--                    from the lane's name: *.dlq -> dlq, *.quarantine ->
--                    quarantine, *.retry.* -> ladder (also with - or _);
--                    class error.class, code error.code, by errgate.policy,
--                    reason errgate.reason
--   ctx              retry_count = retry.count (minus the rung this write
--                    climbed, for a ladder: lanes.c increments it then);
--                    breaker "open" for a circuit_open failure
--
-- foreign: every dialect inbox mode reads (spring, connect, streams,
-- share-group, x-dlq-metadata; see inbox() below: the same reader, on the
-- record's `dlq` headers, tried in the order of `auto`): the failure was an
-- exception thrown in a consumer, which errgate's vocabulary calls an
-- in-process handler error:
--   failure.kind     "lua"
--   failure.code     the exception class's simple name (the part after the
--                    last "."; Spring: the cause's class when present, since
--                    the top-level one is the container's
--                    ListenerExecutionFailedException wrapper; a share-group
--                    record names none); a class that is not a class name
--                    gives the code "invalid_class_name" (see inbox())
--   failure.message  the exception message
--   surfaced instead, when the exception says so:
--     HTTP status    a Spring HTTP exception class (HttpClientErrorException$
--                    NotFound, HttpServerErrorException$ServiceUnavailable,
--                    WebClientResponseException$..., the nested name gives
--                    the status); or the message: "503 Service Unavailable"
--                    at its start (Spring's RestTemplate/WebClient format,
--                    only for a class with Http or Response in its name),
--                    "HTTP 503", "status 503", "status code 503", "status=503"
--                    anywhere -> kind "http", status N, code left to the
--                    default (http_N)
--     timeout        a class named *TimeoutException -> kind "timeout"
--     connect        java.net.ConnectException -> kind "connect" (both keep
--                    the class's simple name as the code; Kafka Connect's
--                    own ConnectException is its generic error, kind "lua")
--   failure.status   also the status the dialect states (x-dlq-metadata's
--                    error_info.status)
--   decided          dlq (ladder for a Spring retry topic: a lane named
--                    *-retry or *-retry-N); no class or policy is recorded,
--                    so only the action is compared; by names the system
--                    (spring-kafka, kafka-connect, kafka-streams,
--                    share-group, x-dlq-metadata)
--
-- record: the original coordinates (original.* / the dialect's original
-- topic, partition, offset from `origin`; the lane's own when absent), the key and the
-- record's own headers (every header that is not a profile's), which is
-- what the policy saw when it decided. Not recorded anywhere, hence not
-- rebuilt: the response body (the service's Error-Class hint is, as
-- error.class-hint, on records written since that header exists),
-- the source's ordering (ctx.ordering defaults to "partition").
--
-- replay(pol, case) asks the policy what it would decide now, the way the
-- gateway would have reached a lane: in-place retries are followed
-- (errgate.testing.next_ctx models the C core's bookkeeping between
-- attempts) until a decision that is not `retry`, at most MAX_RETRIES times,
-- so a record dead-lettered after its retries were exhausted compares equal
-- when the candidate would also give up. diff(decided, now) names what
-- changed.
local json = require "errgate.json"
local failure = require "errgate.failure"
local testing = require "errgate.testing"

local recorded = {}

-- The real pattern functions: the C core's states guard string methods
-- (errgate.sandbox.harden) by cost on the subject's length, and a lane
-- record's values are long. Every subject below is capped or the pattern
-- is linear.
local find, match, gsub = string.find, string.match, string.gsub
local lower, sub, char = string.lower, string.sub, string.char
local CLASS_MAX, SCAN_MAX = 512, 512

-- recorded.MAX_RETRIES: in-place retries followed before giving up on a
-- policy that never stops retrying ("retry" is then what it decides).
recorded.MAX_RETRIES = 100

-- Spring's HTTP exceptions: the nested class names of HttpClientErrorException,
-- HttpServerErrorException and WebClientResponseException.
local SPRING_STATUS = {
  BadRequest = 400, Unauthorized = 401, Forbidden = 403, NotFound = 404, MethodNotAllowed = 405,
  NotAcceptable = 406, Conflict = 409, Gone = 410, UnsupportedMediaType = 415,
  UnprocessableEntity = 422, TooManyRequests = 429, InternalServerError = 500,
  NotImplemented = 501, BadGateway = 502, ServiceUnavailable = 503, GatewayTimeout = 504,
}

-- text(v) -> string | nil: a header value as the C side wrote it.
local function text(v)
  if type(v) == "string" then return v end
  if type(v) == "table" and type(v.hex) == "string" then
    return (gsub(v.hex, "%x%x", function(h) return char(tonumber(h, 16)) end))
  end
  return nil
end

local function int(v)
  local s = text(v)
  local digits = s and match(s, "^%s*(%-?%d+)%s*$")
  return digits and tonumber(digits)
end

local function num(s)
  return s and tonumber(s)
end

local function status_ok(n)
  return n and n >= 100 and n <= 599 and n or nil
end

-- lane_action(topic) -> action the lane's name implies (errgate's templates), or nil
local function lane_action(topic)
  if type(topic) ~= "string" then return nil end
  if find(topic, "[._-]dlq$") then return "dlq" end
  if find(topic, "[._-]quarantine$") then return "quarantine" end
  if find(topic, "[._-]retry[._-]") then return "ladder" end
  return nil
end

-- simple_name("org.x.HttpServerErrorException$ServiceUnavailable")
--   -> "HttpServerErrorException$ServiceUnavailable"
local function simple_name(fqcn)
  if not fqcn or fqcn == "" then return nil end
  return match(sub(fqcn, 1, CLASS_MAX), "([^%.]+)$")
end

-- How a message states an HTTP status (matched on the lower-cased message).
local MESSAGE_STATUS = {
  "http/%d%.%d (%d%d%d)%f[%D]", "http[ :]?(%d%d%d)%f[%D]",
  "status code[ :=]*(%d%d%d)%f[%D]", "status[ :=]*(%d%d%d)%f[%D]",
}

-- message_status(msg, http_class) -> HTTP status the message states, or nil
local function message_status(msg, http_class)
  if not msg then return nil end
  local m = lower(sub(msg, 1, SCAN_MAX))
  if http_class then
    local n = status_ok(num(match(m, "^%s*(%d%d%d) ")))
    if n then return n end
  end
  for _, p in ipairs(MESSAGE_STATUS) do
    local n = status_ok(num(match(m, p)))
    if n then return n end
  end
  return nil
end

-- exception_failure(class, msg) -> failure for a JVM exception (see the top).
function recorded.exception_failure(fqcn, msg)
  local name = simple_name(fqcn)
  local nested = name and match(name, "%$(%w+)$")
  local status = nested and find(name, "Exception$", 1, true) and SPRING_STATUS[nested]
  local httpish = name and (find(name, "Http", 1, true) or find(name, "Response", 1, true)) and true or false
  status = status or message_status(msg, httpish)
  if status then return { kind = "http", status = status, message = msg } end
  local base = name and gsub(name, "%$.*$", "") or ""
  if find(base, "TimeoutException$") then return { kind = "timeout", message = msg, code = name } end
  -- java.net's only: Kafka Connect's own ConnectException is its generic error
  if fqcn == "java.net.ConnectException" then return { kind = "connect", message = msg, code = name } end
  return { kind = "lua", code = name, message = msg }
end

-- coordinates(p, lane) -> topic, partition, offset of the original record
local function coordinates(p, lane)
  local topic = text(p.original_topic)
  local partition, offset = int(p.original_partition), int(p.original_offset)
  if topic and partition and offset then return topic, partition, offset end
  return lane.topic, lane.partition, lane.offset
end

-- own_headers(h) -> the record's own headers as name -> string
local function own_headers(h)
  local out = {}
  if type(h) == "table" then
    for k, v in pairs(h) do out[k] = text(v) end
  end
  return out
end

local function native(rec, e)
  local lane = rec.lane
  local code = text(e.code)
  local kind, status = text(e.kind), int(e.status)
  local rebuilt
  if not kind then
    local s = code and match(code, "^http_(%d%d%d)$")
    if s then
      kind, status, rebuilt = "http", status or tonumber(s), "rebuilt: kind from error.code"
    elseif code and failure.KINDS[code] then
      kind, rebuilt = code, "rebuilt: kind from error.code"
    else
      kind, rebuilt = "http", "rebuilt: no error.kind, kind guessed http"
    end
  end
  if not failure.KINDS[kind] then
    return nil, ("error.kind %q is not a kind this errgate knows (%s)"):format(kind, failure.KIND_LIST or "")
  end
  local f = { kind = kind, status = status, message = text(e.message), retry_after_ms = int(e.retry_after_ms),
              class_hint = text(e.class_hint) }
  if code and code ~= failure.default_code(f) then f.code = code end
  local action = text(e.action) or lane_action(lane.topic)
  if not action then
    return nil, ("no errgate.action header, and the lane name %s does not say (.dlq, .quarantine, .retry.)"):format(
      tostring(lane.topic))
  end
  local topic, partition, offset = coordinates(e, lane)
  local rc = int(e.retry_count) or 0
  if action == "ladder" then rc = rc - 1 end
  return {
    profile = "errgate",
    id = text(e.id) or ("%s/%d/%d"):format(topic, partition, offset),
    failure = f,
    record = { topic = topic, partition = partition, offset = offset, key = text(rec.key),
               headers = own_headers(rec.headers) },
    ctx = { retry_count = math.max(rc, 0), breaker = kind == "circuit_open" and "open" or nil },
    decided = { action = action, class = text(e.class), code = code, by = text(e.policy), reason = text(e.reason) },
    rebuilt = rebuilt,
  }
end

-- read_dlq(h, list) -> format, class, message, status, outer class,
-- delivery count of the first format in list whose headers h carries
-- (INBOX_READ, below), or nothing. Assigned with the inbox reader.
local read_dlq

-- The system each foreign dialect is written by, as decided.by.
local WRITTEN_BY = { spring = "spring-kafka", connect = "kafka-connect", streams = "kafka-streams",
                     ["share-group"] = "share-group", ["x-dlq-metadata"] = "x-dlq-metadata" }
local FOREIGN = { "spring", "connect", "streams", "share-group", "x-dlq-metadata" }

local function foreign(rec)
  local lane = rec.lane
  local h = {}
  if type(rec.dlq) == "table" then
    for k, v in pairs(rec.dlq) do h[k] = text(v) end
  end
  local profile, fqcn, msg, status = read_dlq(h, FOREIGN)
  if not profile then
    return nil, "no errgate, Spring Kafka, Kafka Connect, Kafka Streams, share-group or x-dlq-metadata error headers"
  end
  local f = recorded.exception_failure(fqcn, msg)
  if status and not f.status then f = { kind = "http", status = status, message = msg } end
  local o = type(rec.origin) == "table" and rec.origin or {}
  local topic, partition, offset = lane.topic, lane.partition, lane.offset
  if type(o.topic) == "string" and type(o.partition) == "number" and type(o.offset) == "number" then
    topic, partition, offset = o.topic, o.partition, o.offset
  end
  local action = "dlq"
  if profile == "spring" and type(lane.topic) == "string" and
      (find(lane.topic, "%-retry$") or find(lane.topic, "%-retry%-%d+$")) then
    action = "ladder"
  end
  return {
    profile = profile,
    id = ("%s/%d/%d"):format(topic, partition, offset),
    failure = f,
    record = { topic = topic, partition = partition, offset = offset, key = text(rec.key),
               headers = own_headers(rec.headers) },
    ctx = {},
    decided = { action = action, by = WRITTEN_BY[profile] },
  }
end

-- case(rec) -> case | nil, why
-- case = { lane = "topic[p]@offset", profile, id, failure, record, ctx,
-- decided = { action, class, code, by, reason } (decided then), rebuilt =
-- a note when the failure was pieced together, now_ms = the lane record's
-- timestamp } | nil, why, lane label: why says what made the record
-- unreadable.
function recorded.case(rec)
  if type(rec) ~= "table" or type(rec.lane) ~= "table" then return nil, "not a lane record", "-" end
  local lane = rec.lane
  local label = ("%s[%s]@%s"):format(tostring(lane.topic), tostring(lane.partition), tostring(lane.offset))
  local c, why
  if type(rec.errgate) == "table" then
    c, why = native(rec, rec.errgate)
  else
    c, why = foreign(rec)
  end
  if not c then return nil, why, label end
  c.lane = label
  c.now_ms = tonumber(lane.timestamp)
  return c
end

-- ---------------------------------------------------------------- inbox
-- inbox(record, format) -> failure: a record of a DLQ another system wrote,
-- read as the failure it records (source.inbox; run by the inbox target,
-- errgate.runtime.inbox_target, on the record's headers, name -> last value,
-- bytes as they are). format is "auto" (the first of the formats below the
-- record carries, in this order) or one of them:
--   errgate        error.code / error.message / error.status (DESIGN §4)
--   spring         kafka_dlt-exception-fqcn, -exception-cause-fqcn,
--                  -exception-message (spring-kafka KafkaHeaders); a key
--                  that did not deserialize: kafka_dlt-key-exception-fqcn,
--                  -message; Spring's retry topics (and the DLT after them):
--                  kafka_exception-fqcn, -cause-fqcn, -message, and the
--                  delivery count from retry_topic-attempts (minus one)
--   connect        __connect.errors.exception.class.name, .exception.message
--                  (Kafka Connect DeadLetterQueueReporter)
--   streams        __streams.errors.exception (the class: Kafka 4.4.0's
--                  real dead letters hold getClass().getName(); "class:
--                  message", Throwable.toString, reads the same), .message
--                  (Kafka Streams ExceptionHandlerUtils, KIP-1034)
--   share-group    __dlq.errors.message, .delivery.count (Kafka
--                  ShareGroupDLQRecordHelper, KIP-1191: no exception class)
--   x-dlq-metadata the JSON header's error_info: a string "CLASS: message"
--                  (Throwable.toString; errgate's profile writes it), or an
--                  object {exception|class_name|code, message, status}
-- The failure: kind "recorded"; code = the innermost exception class's
-- simple name (Spring's cause class when there is one: the outer class is
-- usually the container's ListenerExecutionFailedException wrapper), or
-- error.code for errgate's own records; message as recorded (multi-line
-- kept); status when the format or the exception states an HTTP status
-- (recorded.exception_failure); body: JSON {format, exception (the outer
-- class as recorded), delivery_count (share group), original (the origin
-- argument)}, which errgate.failure turns into failure fields. A record that
-- carries no headers of the format gets code "inbox_unrecognized" and a
-- message saying so: the policy routes it like any other failure.
local INBOX_FORMATS = { "errgate", "spring", "connect", "streams", "share-group", "x-dlq-metadata" }
recorded.INBOX_FORMATS = INBOX_FORMATS

local function hdr(h, name)
  local v = h[name]
  return type(v) == "string" and v ~= "" and v or nil
end

-- the class name Throwable.toString() starts with ("a.b.C: message" -> "a.b.C")
local function to_string_class(s)
  if not s then return nil end
  local head = sub(s, 1, CLASS_MAX + 1)
  return match(head, "^([^:%s]+):") or match(head, "^(%S+)%s*$") or head
end

-- spring_deliveries(v) -> the deliveries a Spring retry-topic record has had: its
-- retry_topic-attempts header (the attempt its next delivery would be: a 4-byte big-endian
-- int, 1 byte in old releases; Spring's DeadLetterPublishingRecovererFactory) minus one
local function spring_deliveries(v)
  if type(v) ~= "string" then return nil end
  local n
  if #v == 1 then n = v:byte(1)
  elseif #v == 4 then
    local a, b, c, d = v:byte(1, 4)
    if a >= 128 then return nil end
    n = ((a * 256 + b) * 256 + c) * 256 + d
  end
  return n and n >= 2 and n - 1 or nil
end

-- INBOX_READ[format](headers) -> class, message, status, outer class,
-- delivery count when the record carries the format's headers, else nothing.
local INBOX_READ = {
  errgate = function(h)
    local code = hdr(h, "error.code")
    if not code and not hdr(h, "errgate.id") then return end
    return code or false, hdr(h, "error.message"), int(h["error.status"])
  end,
  spring = function(h)
    -- one set whole: the DLT recoverer's value exception, its key exception (a key that did
    -- not deserialize: the cause header is shared), the retry topics' (kafka_exception-*)
    local outer, cause = hdr(h, "kafka_dlt-exception-fqcn"), hdr(h, "kafka_dlt-exception-cause-fqcn")
    local msg = hdr(h, "kafka_dlt-exception-message")
    if not outer and not msg then
      outer, msg = hdr(h, "kafka_dlt-key-exception-fqcn"), hdr(h, "kafka_dlt-key-exception-message")
    end
    if not outer and not cause and not msg then
      outer, cause = hdr(h, "kafka_exception-fqcn"), hdr(h, "kafka_exception-cause-fqcn")
      msg = hdr(h, "kafka_exception-message")
    end
    if not outer and not cause and not msg then return end
    return cause or outer or false, msg, nil, outer, spring_deliveries(h["retry_topic-attempts"])
  end,
  connect = function(h)
    local class = hdr(h, "__connect.errors.exception.class.name")
    local msg = hdr(h, "__connect.errors.exception.message")
    if not class and not msg and not hdr(h, "__connect.errors.topic") then return end
    return class or false, msg, nil, class
  end,
  streams = function(h)
    local ex = hdr(h, "__streams.errors.exception")
    if not ex and not hdr(h, "__streams.errors.topic") then return end
    local class = to_string_class(ex)
    return class or false, hdr(h, "__streams.errors.message"), nil, class
  end,
  ["share-group"] = function(h)
    if not hdr(h, "__dlq.errors.topic") then return end
    return false, hdr(h, "__dlq.errors.message"), nil, nil, int(h["__dlq.errors.delivery.count"])
  end,
  ["x-dlq-metadata"] = function(h)
    local doc = hdr(h, "x-dlq-metadata") and json.decode(h["x-dlq-metadata"])
    if type(doc) ~= "table" then return end
    -- error_info: "CLASS: message" (Throwable.toString(); errgate's profile since issue 29)
    -- or an object (errgate's before, and other writers)
    if type(doc.error_info) == "string" and doc.error_info ~= "" then
      local s = doc.error_info
      local class = to_string_class(s)
      local msg = #s > #class + 2 and sub(s, 1, #class + 2) == class .. ": " and sub(s, #class + 3) or nil
      return class, msg, nil, class
    end
    local e = type(doc.error_info) == "table" and doc.error_info or {}
    local class = e.exception or e.exception_class or e.class_name or e.code
    class = type(class) == "string" and class or nil
    return class or false, type(e.message) == "string" and e.message or nil,
      type(e.status) == "number" and status_ok(e.status) or nil, class
  end,
}

-- JSON text of a string or number (the body below holds nothing else).
local function jv(v)
  if type(v) == "number" then return ("%.17g"):format(v) end
  return '"' .. gsub(v, '[%c"\\]', function(ch) return ("\\u%04x"):format(ch:byte()) end) .. '"'
end

-- body_of(fields) -> a flat JSON object of the string and number fields
-- (origin, a table of them, nested once), keys in a fixed order
local BODY_KEYS = { "format", "exception", "delivery_count" }
local ORIGIN_KEYS = { "format", "topic", "partition", "offset", "timestamp", "group" }
local function body_of(fields, origin)
  local out = {}
  for _, k in ipairs(BODY_KEYS) do
    if fields[k] ~= nil then out[#out + 1] = jv(k) .. ":" .. jv(fields[k]) end
  end
  if type(origin) == "table" then
    local o = {}
    for _, k in ipairs(ORIGIN_KEYS) do
      local v = origin[k]
      if type(v) == "string" or type(v) == "number" then o[#o + 1] = jv(k) .. ":" .. jv(v) end
    end
    out[#out + 1] = '"original":{' .. table.concat(o, ",") .. "}"
  end
  return "{" .. table.concat(out, ",") .. "}"
end

-- Foreign bytes, one rule per field (man errgate, LANES, "Foreign DLQ records: what is trusted"):
--   class      a JVM binary class name: ASCII identifiers ([%a_$][%w_$]*)
--              joined by ".", at most CLASS_MAX bytes; anything else reads
--              as the class INVALID_CLASS (code "invalid_class_name"), the
--              outer class as absent, so no foreign byte reaches a code
--   code       errgate's own error.code: 1 to 128 bytes of printable ASCII,
--              else "invalid_code"
--   delivery   a share group's count: 0 to 2^31-1, else absent
--   status     100 to 599 (status_ok), else absent
--   message    kept as recorded (multi-line), capped where it is written
local INVALID_CLASS, INVALID_CODE, CODE_MAX = "invalid_class_name", "invalid_code", 128
recorded.INVALID_CLASS, recorded.INVALID_CODE = INVALID_CLASS, INVALID_CODE

local function class_ok(s)
  return #s <= CLASS_MAX and find(s, "^[%a_%$][%w_%$%.]*$") and not find(s, "%.%.") and not find(s, "%.$") and
    not find(s, "%.%d") and true or false
end

local function delivery_ok(n)
  return n and n >= 0 and n <= 2147483647 and n == math.floor(n) and n or nil
end

read_dlq = function(h, list)
  for _, name in ipairs(list) do
    local read = INBOX_READ[name]
    local class, msg, status, outer, delivery
    if read then class, msg, status, outer, delivery = read(h) end
    if class ~= nil then
      class = class or nil
      if class and name == "errgate" then
        if #class > CODE_MAX or find(class, "[^\32-\126]") then class = INVALID_CODE end
      elseif class and not class_ok(class) then
        class = INVALID_CLASS
      end
      if outer and not class_ok(outer) then outer = nil end
      return name, class, msg, status, outer, delivery_ok(delivery)
    end
  end
end

-- inbox(record, format[, origin]) -> failure (see above). origin, when
-- given, is where the record was born ({format, topic, partition, offset,
-- timestamp, group}, the C side's reading of the same headers, kept only
-- when its format is the dialect the record is read as): with the
-- format read, the outer exception class and a share group's delivery
-- count it travels in failure.body as JSON, which errgate.failure turns
-- into failure.format, .exception, .original and .delivery_count.
function recorded.inbox(rec, format, origin)
  local h = type(rec) == "table" and type(rec.headers) == "table" and rec.headers or {}
  local name, class, msg, status, outer, delivery = read_dlq(h, format == "auto" and INBOX_FORMATS or { format })
  -- the origin is the read dialect's own, never another dialect's copied headers (issue 28)
  if type(origin) == "table" and origin.format ~= name then origin = nil end
  if name then
    local code = class and (name == "errgate" and class or simple_name(class))
    if name ~= "errgate" and not status then status = recorded.exception_failure(class, msg).status end
    return { kind = "recorded", code = code, message = msg, status = status_ok(status),
             body = body_of({ format = name, exception = outer and sub(outer, 1, CLASS_MAX),
                              delivery_count = delivery }, origin) }
  end
  return { kind = "recorded", code = "inbox_unrecognized",
           message = format == "auto" and "no DLQ headers errgate knows (errgate, spring, connect, streams, " ..
             "share-group, x-dlq-metadata)" or ("no %s DLQ headers"):format(tostring(format)),
           body = body_of({}, origin) }
end

-- decode(line) -> case() of one JSON line.
function recorded.decode(line)
  local rec, err = json.decode(line)
  if type(rec) ~= "table" then return nil, tostring(err), "-" end
  return recorded.case(rec)
end

-- replay(pol, case) -> decision (plus retries = in-place retries followed) |
-- nil, error raised by the policy. pol should have its jitter pinned
-- (errgate.examples.pin) so delays, and so max-elapsed caps, are repeatable.
function recorded.replay(pol, c)
  local fields = {}
  for k, v in pairs(c.ctx or {}) do fields[k] = v end
  if c.now_ms and c.now_ms > 0 then fields.now_ms = c.now_ms end
  local ctx = testing.ctx(fields)
  for i = 0, recorded.MAX_RETRIES do
    local ok, d = pcall(pol.decide, pol, c.failure, c.record, ctx)
    if not ok then return nil, tostring(d) end
    if d.action ~= "retry" or i == recorded.MAX_RETRIES then
      d.retries = i
      return d
    end
    ctx = testing.next_ctx(ctx, d)
  end
end

-- diff(decided, now) -> nil when the same, else "action", "class" or
-- "action, class". class is compared only when it was recorded.
function recorded.diff(t, now)
  local out = {}
  if t.action ~= now.action then out[#out + 1] = "action" end
  if t.class and t.class ~= now.class then out[#out + 1] = "class" end
  if #out == 0 then return nil end
  return table.concat(out, ", ")
end

return recorded
