-- errgate.pattern — bounding the cost of Lua patterns before they run.
--
-- Lua's matcher backtracks: each *, + or - quantifier can retry over the
-- whole subject, and an unanchored pattern is tried at every start, so the
-- worst case grows like len ^ (quantifiers + 1 if unanchored). One string.find
-- is a single C call that the count hook cannot interrupt, so the sandbox's
-- pattern functions and the policy's redact patterns are checked against
-- BUDGET steps before they run.
local pattern = {}

pattern.BUDGET = 2e7

local exponents, cached = {}, 0
local CACHE_MAX = 1024 -- patterns built at run time must not grow it forever

-- exponent(pat) -> quantifiers of pat, plus 1 when it is unanchored.
local function exponent(pat)
  local q, i, n = 0, 1, #pat
  local anchored = pat:sub(1, 1) == "^"
  while i <= n do
    local c = pat:sub(i, i)
    if c == "%" then
      i = i + 2
    elseif c == "[" then
      local j = i + 1
      if pat:sub(j, j) == "^" then j = j + 1 end
      if pat:sub(j, j) == "]" then j = j + 1 end
      while j <= n and pat:sub(j, j) ~= "]" do
        if pat:sub(j, j) == "%" then j = j + 1 end
        j = j + 1
      end
      i = j + 1
    else
      i = i + 1
    end
    local nxt = pat:sub(i, i)
    if nxt == "*" or nxt == "+" or nxt == "-" then q = q + 1; i = i + 1 end
  end
  return q + (anchored and 0 or 1)
end

-- cost(pat, len) -> estimated worst-case matcher steps of pat on len bytes.
function pattern.cost(pat, len)
  local e = exponents[pat]
  if not e then
    e = exponent(pat)
    if cached >= CACHE_MAX then exponents, cached = {}, 0 end
    exponents[pat], cached = e, cached + 1
  end
  return math.max(len, 1) ^ e
end

-- affordable(pat, len) -> boolean: cost(pat, len) is within BUDGET.
function pattern.affordable(pat, len)
  return pattern.cost(pat, len) <= pattern.BUDGET
end

return pattern
