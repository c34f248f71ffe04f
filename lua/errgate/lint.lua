-- errgate.lint — static checks of a defined policy, beyond what define()
-- already refuses.
--
-- lint(pol[, opts]) -> list of { level = "error"|"warning"|"info", message }
-- opts.ordering (optional): the source ordering the policy will run under,
-- "partition" | "key" | "none" (`errgate policy check FILE --ordering X`).
-- Errors (the gateway refuses to load or reload such a policy):
--   * a class that a classify rule returns has no route of its own, so it
--     would silently fall to route.default (the catch-all rule's class is
--     exempt: falling to default is what it is for).
--   * with ordering "partition": a route that can climb a ladder
--     ("route 'X' uses ladder 'p': refused under ordering=\"partition\"";
--     DESIGN §2.7: a failing record blocks its partition, it does not move).
-- Warnings:
--   * a route names a class no classify rule returns (it can still be
--     reached by an explicit class from the service: fine when intended).
--   * with ordering "partition": a route function in a policy that defines
--     ladders (it may return one; ctx.ordering lets it avoid that).
--   * a duration written under its old name (base_ms, delay_ms, ...: see
--     errgate.renamed), saying what to write instead; first in the list.
-- Info: what could not be checked (classify or route given as functions);
-- without opts.ordering, each ladder route, saying it would be refused under
-- "partition" (the gateway, running under "partition" anyway, waits in
-- place for the rung delays instead); with "key", each ladder route, saying
-- that a laddered record does not hold back later records of its key
-- (per-key fencing is not built: "key" behaves as "none" for ladders).
-- Findings come in a stable order: coverage first, then ladders by class.
-- The gateway's load and reload call errors(pol) without opts, so only the
-- coverage errors can refuse a policy there.
local lint = {}

local ORDERINGS = { partition = true, key = true, none = true }
local PARTITION = 'ordering="partition"'

local function check_opts(opts)
  if opts == nil then return nil end
  if type(opts) ~= "table" then error("lint: opts must be a table, got " .. type(opts), 3) end
  local o = opts.ordering
  if o ~= nil and not ORDERINGS[o] then
    error(("lint: opts.ordering must be \"partition\", \"key\" or \"none\", got %s"):format(tostring(o)), 3)
  end
  return o
end

-- coverage(s, add): classes without routes, routes without classes.
local function coverage(s, add)
  if s.classify_fn or s.route_fn then
    add("info", "classify or route is a function: class/route coverage not checked")
    return
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
      add("warning", "route '%s' is reached only by an explicit class from the service"
        .. " (no classify rule returns it)", class)
    end
  end
end

-- ladders(s, ordering, add): the ladder findings for that ordering.
local function ladders(s, ordering, add)
  if ordering == "none" then return end
  if s.route_fn and #s.ladder_names > 0 then
    local names = "'" .. table.concat(s.ladder_names, "', '") .. "'"
    if ordering == "partition" then
      add("warning", "the route function may return ladder %s: it must not under %s (ctx.ordering tells it)",
        names, PARTITION)
    elseif ordering == "key" then
      add("info", "the route function may return ladder %s: under ordering=\"key\" a laddered record"
        .. " does not hold back later records of its key", names)
    else
      add("info", "the route function may return ladder %s: that would be refused under %s", names, PARTITION)
    end
    return
  end
  local classes = {}
  for class in pairs(s.ladders) do classes[#classes + 1] = class end
  table.sort(classes)
  for _, class in ipairs(classes) do
    local l = s.ladders[class]
    if ordering == "partition" then
      add("error", "route '%s' uses ladder '%s': refused under %s", class, l, PARTITION)
    elseif ordering == "key" then
      add("info", "route '%s' uses ladder '%s': under ordering=\"key\" a laddered record does not hold back"
        .. " later records of its key (key behaves as none for ladders)", class, l)
    else
      add("info", "route '%s' uses ladder '%s': would be refused under %s"
        .. " (the gateway then waits in place for the rung delays)", class, l, PARTITION)
    end
  end
end

-- lint(pol[, opts]) -> list of findings (see above). Raises on bad opts.
function lint.lint(pol, opts)
  local ordering = check_opts(opts)
  local out = {}
  local function add(level, fmt, ...) out[#out + 1] = { level = level, message = fmt:format(...) } end
  for _, note in ipairs(pol.deprecations or {}) do add("warning", "%s", note) end
  coverage(pol.shape, add)
  ladders(pol.shape, ordering, add)
  return out
end

-- errors(pol[, opts]) -> nil | "first error message; and N more"
function lint.errors(pol, opts)
  check_opts(opts)
  local errs = {}
  for _, p in ipairs(lint.lint(pol, opts)) do
    if p.level == "error" then errs[#errs + 1] = p.message end
  end
  if #errs == 0 then return nil end
  return errs[1] .. (#errs > 1 and ("; and %d more"):format(#errs - 1) or "")
end

return lint
