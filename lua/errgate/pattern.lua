-- errgate.pattern — bounding the cost of Lua patterns before they run.
--
-- Lua's matcher backtracks: each *, + or - quantifier can retry over the
-- whole subject, and an unanchored pattern is tried at every start, so the
-- worst case grows like len ^ (quantifiers + 1 if unanchored). One string.find
-- is a single C call that the count hook cannot interrupt, so the sandbox's
-- pattern functions and the policy's redact patterns are checked against
-- BUDGET steps before they run (2e7 steps: some 40 ms here). Back
-- references (%1..%9) and balanced matches (%b) rescan the subject like a
-- quantifier and count as one; a long pattern costs its length at each
-- start (the len * #pat term), as a plain find costs #s * #needle.
-- BUDGET is a local: the exported copy is for reading, changing it (in a
-- state where the module is writable at all) does not lift the guard.
local pattern = {}

local BUDGET = 2e7
pattern.BUDGET = BUDGET

local exponents, cached = {}, 0
local CACHE_MAX = 1024 -- patterns built at run time must not grow it forever

-- the real functions, held before errgate.sandbox guards string methods
-- (the guard calls this module: it must not call itself)
local byte, max = string.byte, math.max
local PCT, LBR, RBR, CARET, STAR, PLUS, MINUS = byte("%[]^*+-", 1, 7)
local B, D0, D9 = byte("b09", 1, 3)

-- exponent(pat) -> quantifiers of pat (and back references, balanced
-- matches), plus 1 when it is unanchored.
local function exponent(pat)
  local q, i, n = 0, 1, #pat
  local anchored = byte(pat, 1) == CARET
  while i <= n do
    local c = byte(pat, i)
    if c == PCT then
      local e = byte(pat, i + 1)
      if e == B then
        q, i = q + 1, i + 4
      else
        if e and e >= D0 and e <= D9 then q = q + 1 end
        i = i + 2
      end
    elseif c == LBR then
      local j = i + 1
      if byte(pat, j) == CARET then j = j + 1 end
      if byte(pat, j) == RBR then j = j + 1 end
      while j <= n and byte(pat, j) ~= RBR do
        if byte(pat, j) == PCT then j = j + 1 end
        j = j + 1
      end
      i = j + 1
    else
      i = i + 1
    end
    local nxt = byte(pat, i)
    if nxt == STAR or nxt == PLUS or nxt == MINUS then q = q + 1; i = i + 1 end
  end
  return q + (anchored and 0 or 1)
end

-- cost(pat, len) -> estimated worst-case matcher steps of pat on len bytes.
function pattern.cost(pat, len)
  len = max(len, 1)
  local scan = len * #pat
  if scan > BUDGET then return scan end -- over already: no need to parse a long pattern
  local e = exponents[pat]
  if not e then
    e = exponent(pat)
    if cached >= CACHE_MAX then exponents, cached = {}, 0 end
    exponents[pat], cached = e, cached + 1
  end
  return len ^ e + scan
end

-- affordable(pat, len) -> boolean: cost(pat, len) is within BUDGET.
function pattern.affordable(pat, len)
  return pattern.cost(pat, len) <= BUDGET
end

-- plain_affordable(needle, len) -> boolean: a plain find of needle in len
-- bytes (worst case len * #needle comparisons) is within BUDGET.
function pattern.plain_affordable(needle, len)
  return len * #needle <= BUDGET
end

return pattern
