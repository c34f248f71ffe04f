-- errgate.decision — the one shape a decision has when it leaves Lua.
--
-- Whatever produced it (a route table, a route function, a ladder), a
-- decision is finalized here before the C core sees it:
--   { action, class, code, reason, delay_ms, message }
-- and, for action "ladder" only, also
--   rung        the name of the rung to write to (its topic is
--               lanes.retry with {rung} = this name), RUNG_PATTERN, <= 32 bytes
--   rung_index  its position in the ladder (integer >= 1; retry.count of the
--               record written there)
-- and, for action "dlq" or "quarantine" when the route entry asked for it,
--   approval    true: the lane record carries errgate.approval: required
--               (the item starts pending-approval)
-- action is one of ACTIONS; class, code, reason and message are strings;
-- delay_ms is a non-negative integer, meaningful for retry, hold and ladder
-- (for a ladder: the rung's delay, raised to Retry-After; a ladder or retry
-- draft must give it), 0 for every other action. Defaults: class "unknown";
-- code the service's own code, else "http_<status>" or the failure kind;
-- reason the class; hold waits HOLD_DEFAULT_MS; message the failure's
-- message (or a short description), redacted and cut to MESSAGE_MAX bytes.
-- Anything that cannot be made valid raises "invalid decision: ..." (error
-- level 0, no position) so the C core applies its fallback and logs the
-- reason verbatim. finalize_values() is the same check on separate values,
-- returning separate values: the C core's decision path reads them off the
-- stack, so no draft or decision table is built for it.
local duration = require "errgate.duration"
local failure = require "errgate.failure"
local redact = require "errgate.redact"

local decision = {}

-- decision.ACTIONS: every action the C core understands.
decision.ACTIONS = {
  retry = true, ladder = true, dlq = true, quarantine = true,
  ignore = true, hold = true, stop = true, replay = true,
}
-- decision.ACTION_LIST: the same, in a stable order for messages.
decision.ACTION_LIST = "retry, ladder, dlq, quarantine, ignore, hold, stop, replay"
-- replay (inbox mode): the decision's rung field carries where to, "original"
-- or a topic name (TOPIC_PATTERN, <= TOPIC_MAX bytes); delay_ms is `after`.
decision.TOPIC_MAX = 249
decision.TOPIC_PATTERN = "^[A-Za-z0-9._-]+$"
decision.HOLD_DEFAULT_MS = 1000
decision.MESSAGE_MAX = 512
decision.NAME_MAX = 128 -- class, code and reason become header values
decision.RUNG_MAX = 32 -- a rung name becomes part of a topic name
decision.RUNG_PATTERN = "^[A-Za-z0-9._-]+$"

local function invalid(fmt, ...)
  error("invalid decision: " .. fmt:format(...), 0)
end

local function name(v, field, default)
  if v == nil or v == "" then return default end
  if type(v) ~= "string" then invalid("%s must be a string, got %s", field, type(v)) end
  if #v > decision.NAME_MAX then invalid("%s longer than %d bytes", field, decision.NAME_MAX) end
  return v
end

local ACTIONS = decision.ACTIONS
local type, floor, HUGE = type, math.floor, math.huge
local MESSAGE_MAX = decision.MESSAGE_MAX
local RUNG_MAX, RUNG_PATTERN = decision.RUNG_MAX, decision.RUNG_PATTERN
local redact_message, describe, default_code = redact.message, failure.describe, failure.default_code
-- names (class, code, reason) and rung names already found valid: they
-- come from compiled rules and routes and from services' codes, so few;
-- emptied when full
local good_names, good_names_n, GOOD_NAMES_MAX = {}, 0, 1024
local good_rungs, good_rungs_n, GOOD_RUNGS_MAX = {}, 0, 256

-- checked_name(v, field) -> v, a string of 1 to NAME_MAX bytes (raises
-- otherwise, as name() does), remembered as valid
local function checked_name(v, field)
  name(v, field)
  if good_names_n >= GOOD_NAMES_MAX then good_names, good_names_n = {}, 0 end
  good_names[v], good_names_n = true, good_names_n + 1
  return v
end
-- the real match, held before errgate.sandbox.harden() guards string
-- methods: RUNG_PATTERN is anchored and ours
local match = string.match
local PROTECT_MODES = { none = true, mask = true, encrypt = true, pointer = true }

-- finalize_values(f, redact_patterns, class, class_code, action, reason,
--                 delay_ms, code, message, rung, rung_index, approval, protect)
--   -> action, class, code, reason, delay_ms, message, rung, rung_index, approval, protect
-- The draft's fields given one by one (see finalize): first the
-- classification (class, and class_code, the code used when the draft has
-- none), then the route's draft in the order errgate.route's
-- resolve_values returns it, so that its results can be passed on as they
-- come. f is the normalized failure it answers. Returns the decision's
-- fields in the order above (rung and rung_index nil unless action is
-- "ladder"; for "replay", rung is where to: "original" or a topic; approval
-- true or nil, true only for "dlq" and "quarantine"; protect "mask",
-- "encrypt", "pointer" or "none" for those two lanes, else nil), or
-- raises "invalid decision: ...".
function decision.finalize_values(f, redact_patterns, class, class_code, action, reason, delay_ms, code, message,
                                  rung, rung_index, approval, protect)
  if code == nil then code = class_code end
  if not ACTIONS[action] then
    invalid("unknown action %s (want one of %s)", tostring(action), decision.ACTION_LIST)
  end
  -- as name() does
  if class == nil or class == "" then
    class = "unknown"
  elseif not good_names[class] then
    checked_name(class, "class")
  end
  if code == nil or code == "" then
    code = f.code or default_code(f)
  elseif not good_names[code] then
    checked_name(code, "code")
  end
  if reason == nil or reason == "" then
    reason = class
  elseif not good_names[reason] then
    checked_name(reason, "reason")
  end
  local ms = 0
  if action == "ladder" then
    if type(rung) ~= "string" or rung == "" then invalid("ladder needs a rung name") end
    if not good_rungs[rung] then
      if #rung > RUNG_MAX or not match(rung, RUNG_PATTERN) then
        invalid("rung %q must be 1 to %d of A-Z a-z 0-9 . _ -", rung, RUNG_MAX)
      end
      if good_rungs_n >= GOOD_RUNGS_MAX then good_rungs, good_rungs_n = {}, 0 end
      good_rungs[rung], good_rungs_n = true, good_rungs_n + 1
    end
    if type(rung_index) ~= "number" or rung_index < 1 or rung_index % 1 ~= 0 then
      invalid("ladder needs rung_index, an integer >= 1, got %s", tostring(rung_index))
    end
  elseif action == "replay" then
    if type(rung) ~= "string" or #rung > decision.TOPIC_MAX or not match(rung, decision.TOPIC_PATTERN) then
      invalid("replay needs \"original\" or a topic name (1 to %d of A-Z a-z 0-9 . _ -), got %s", decision.TOPIC_MAX,
        tostring(rung))
    end
    rung_index = nil
  else
    rung, rung_index = nil, nil
  end
  if action == "retry" or action == "hold" or action == "ladder" or action == "replay" then
    local raw = delay_ms
    if raw == nil then
      if action ~= "hold" and action ~= "replay" then invalid("%s needs delay_ms", action) end
      raw = action == "hold" and decision.HOLD_DEFAULT_MS or 0
    end
    if type(raw) == "number" and raw >= 0 and raw < HUGE then
      ms = floor(raw + 0.5) -- duration.parse of a number, without the call
    else
      local err
      ms, err = duration.parse(raw)
      if not ms then invalid("delay_ms: %s", err) end
    end
  end
  if message ~= nil and type(message) ~= "string" then
    invalid("message must be a string, got %s", type(message))
  end
  message = redact_message(message or f.message or describe(f), MESSAGE_MAX, redact_patterns)
  if approval ~= nil and approval ~= false and approval ~= true then
    invalid("approval must be true or false, got %s", type(approval))
  end
  approval = approval and (action == "dlq" or action == "quarantine") or nil
  if protect ~= nil and not PROTECT_MODES[protect] then
    invalid("protect must be \"mask\", \"encrypt\", \"pointer\" or \"none\", got %s", tostring(protect))
  end
  if action ~= "dlq" and action ~= "quarantine" then protect = nil end
  return action, class, code, reason, ms, message, rung, rung_index, approval, protect
end

-- pack(action, class, code, reason, delay_ms, message, rung, rung_index,
--      approval) -> decision
-- The table form of finalize_values' results: exactly the six fields (eight
-- for a ladder, seven for a replay; one more with approval).
function decision.pack(action, class, code, reason, delay_ms, message, rung, rung_index, approval, protect)
  local d = { action = action, class = class, code = code, reason = reason, delay_ms = delay_ms, message = message }
  if action == "ladder" then d.rung, d.rung_index = rung, rung_index end
  if action == "replay" then d.replay = rung end
  if approval then d.approval = true end
  if protect then d.protect = protect end
  return d
end

-- finalize(draft, f[, redact_patterns]) -> decision
-- draft: table with action and optionally class, code, reason, delay_ms
-- (ms or duration string), message. f: the normalized failure it answers.
-- Returns a fresh table of exactly the six fields above (eight for a
-- ladder: plus rung, rung_index), or raises "invalid decision: ...".
function decision.finalize(draft, f, redact_patterns)
  if type(draft) ~= "table" then invalid("expected a table, got %s", type(draft)) end
  return decision.pack(decision.finalize_values(f, redact_patterns, draft.class, nil, draft.action, draft.reason,
    draft.delay_ms, draft.code, draft.message, draft.rung, draft.rung_index, draft.approval, draft.protect))
end

return decision
