-- errgate.backoff — the arithmetic of waiting between in-place retries.
--
-- Pure functions over a compiled schedule (see errgate.schedule for its
-- fields) and the retry number n (1 for the first retry after the first
-- failure of a class). The un-jittered delay is either fixed (base_ms) or
-- exponential (base_ms * multiplier^(n-1), multiplier 2 unless the schedule
-- says otherwise), capped at max_ms. Jitter then spreads it:
-- "none" keeps it, "full" draws uniformly from [0, d], "equal" keeps half and
-- draws the other half. A Retry-After the server sent, when the schedule
-- honours it, is a floor: we never come back sooner than the server asked
-- (capped at retry_after_cap_ms, so a hostile header cannot park a partition
-- for a day). Randomness is injected (`random` returns a number in [0, 1),
-- like math.random()) so tests can pin it. Delays are integer milliseconds.
-- A "list" schedule takes delay n from its list (the last one repeats).
-- A ladder rung's delay is raised to Retry-After the same way
-- (floor_retry_after, called by errgate.route).
-- "decorrelated" jitter (as in AWS's backoff study) draws from
-- [base_ms, 3 * previous delay], capped at max_ms; the previous delay comes
-- from the attempt context (ctx.last_delay_ms), base_ms when there is none.
local backoff = {}

local floor, min, max = math.floor, math.min, math.max
local type, tonumber = type, tonumber
-- POW2[k] == 2 ^ k for the exponents base() meets, without a pow() call
local POW2 = {}
for k = 1, 51 do POW2[k] = 2 ^ k end

-- backoff.JITTER: the jitter kinds a schedule may name.
backoff.JITTER = { none = true, full = true, equal = true, decorrelated = true }
-- backoff.KINDS: the backoff shapes a schedule may name.
backoff.KINDS = { exponential = true, fixed = true, list = true }

-- base(schedule, n) -> ms
-- The delay before retry n (n >= 1) without jitter: fixed -> base_ms;
-- exponential -> base_ms * multiplier^(n-1); both capped at max_ms.
local function base(schedule, n)
  local b, cap = schedule.base_ms, schedule.max_ms
  if schedule.backoff == "list" then
    local delays = schedule.delays
    return min(cap, delays[min(n, #delays)])
  end
  if schedule.backoff == "fixed" or n <= 1 or b == 0 then return min(b, cap) end
  local m = schedule.multiplier or 2
  if m == 2 then
    if n - 1 >= 52 then return cap end -- 2^52 * anything > any cap we accept
    return min(cap, b * (POW2[n - 1] or 2 ^ (n - 1)))
  end
  -- m^(n-1) is at most inf (never NaN: 1 <= m <= 10), and min() keeps the cap
  return floor(min(cap, b * m ^ (n - 1)))
end
backoff.base = base

-- jitter(kind, d, random) -> ms
-- Spreads the delay d (integer ms) according to kind ("none", "full",
-- "equal"). random() must return a number in [0, 1); values outside are
-- clamped so the result always stays within the documented bounds:
-- none -> d; full -> [0, d]; equal -> [floor(d/2), d].
local function jitter(kind, d, random)
  d = floor(d)
  if kind == "none" or d <= 0 then return max(d, 0) end
  local r = random()
  if type(r) ~= "number" or r ~= r or r < 0 then r = 0 end
  if kind == "full" then
    return min(d, floor(r * (d + 1)))
  end
  local half = floor(d / 2) -- "equal"
  return min(d, half + floor(r * (d - half + 1)))
end
backoff.jitter = jitter

-- decorrelated(schedule, prev_ms, random) -> ms
-- A draw from [base_ms, max(base_ms, 3 * prev_ms)], capped at max_ms.
local function decorrelated(schedule, prev_ms, random)
  local b = schedule.base_ms
  local hi = max(b, 3 * (tonumber(prev_ms) or 0))
  local r = random()
  if type(r) ~= "number" or r ~= r or r < 0 then r = 0 end
  return min(schedule.max_ms, min(hi, b + floor(r * (hi - b + 1))))
end
backoff.decorrelated = decorrelated

-- delay(schedule, n, random, prev_ms) -> ms
-- The jittered delay before retry n (prev_ms: the previous delay, for
-- decorrelated jitter).
local function delay(schedule, n, random, prev_ms)
  random = random or math.random
  if schedule.jitter == "decorrelated" then
    if n <= 1 or not prev_ms or prev_ms <= 0 then prev_ms = schedule.base_ms end
    return decorrelated(schedule, prev_ms, random)
  end
  return jitter(schedule.jitter, base(schedule, n), random)
end
backoff.delay = delay

-- floor_retry_after(schedule, d, retry_after_ms) -> ms, honoured
-- d raised to the failure's Retry-After (ms or nil), capped at the
-- schedule's retry_after_cap_ms, when the schedule honours it (in-place
-- schedules and ladders alike). honoured is true when Retry-After decided.
local function floor_retry_after(schedule, d, retry_after_ms)
  if schedule.honor_retry_after and type(retry_after_ms) == "number" and retry_after_ms > 0 then
    local ra = floor(min(retry_after_ms, schedule.retry_after_cap_ms))
    if ra > d then return ra, true end
  end
  return d, false
end
backoff.floor_retry_after = floor_retry_after

-- retry_delay(schedule, n, retry_after_ms, random, prev_ms) -> ms, honoured
-- The delay before retry n given the failure's Retry-After (ms or nil).
-- honoured is true when the Retry-After (capped) decided the delay.
local function retry_delay(schedule, n, retry_after_ms, random, prev_ms)
  if retry_after_ms == nil then return delay(schedule, n, random, prev_ms), false end -- nothing to floor
  return floor_retry_after(schedule, delay(schedule, n, random, prev_ms), retry_after_ms)
end
backoff.retry_delay = retry_delay

return backoff
