-- errgate.lint — static checks of a defined policy, beyond what define()
-- already refuses.
--
-- lint(pol) -> list of { level = "error"|"warning"|"info", message }
-- Errors (the gateway refuses to load or reload such a policy):
--   * a class that a classify rule returns has no route of its own, so it
--     would silently fall to route.default (the catch-all rule's class is
--     exempt: falling to default is what it is for).
-- Warnings:
--   * a route names a class no classify rule returns (it can still be
--     reached by an explicit class from the service: fine when intended).
-- Info: what could not be checked (classify or route given as functions).
-- Ladder checks (a ladder under ordering = "partition") join when the DSL
-- has ladders.
local lint = {}

function lint.lint(pol)
  local out = {}
  local function add(level, fmt, ...) out[#out + 1] = { level = level, message = fmt:format(...) } end
  local s = pol.shape
  if s.classify_fn or s.route_fn then
    add("info", "classify or route is a function: class/route coverage not checked")
    return out
  end
  local returned = {}
  local n = #s.rules
  for i, r in ipairs(s.rules) do
    if r.class then
      returned[r.class] = true
      if i < n and not s.routes[r.class] then
        add("error", "class '%s' (classify rule %d) has no route: it would fall to route.default", r.class, i)
      end
    end
  end
  local names = {}
  for class in pairs(s.routes) do names[#names + 1] = class end
  table.sort(names)
  for _, class in ipairs(names) do
    if class ~= "default" and not returned[class] then
      add("warning", "route '%s' is reached only by an explicit class from the service (no classify rule returns it)", class)
    end
  end
  return out
end

-- errors(pol) -> nil | "first error message; N more"
function lint.errors(pol)
  local errs = {}
  for _, p in ipairs(lint.lint(pol)) do
    if p.level == "error" then errs[#errs + 1] = p.message end
  end
  if #errs == 0 then return nil end
  return errs[1] .. (#errs > 1 and ("; and %d more"):format(#errs - 1) or "")
end

return lint
