-- errgate.renamed — the duration keys that lost their unit suffix, read
-- under either name for one release.
--
-- The rule (DESIGN §5): a duration an author writes is a unit string
-- ("250ms", "5s", "1m30s") under a name without a unit (`base`, `max`,
-- `delay`, `timeout`); a plain number still means the unit the old name
-- had (milliseconds for every policy key). Values errgate hands over
-- (ctx.now_ms, failure.retry_after_ms, a decision's delay_ms) are integers
-- and keep their `_ms`. The old names (`base_ms`, `max_ms`,
-- `max_elapsed_ms`, `retry_after_cap_ms`, a route entry's `delay_ms`) are
-- still read: get() takes the value under either name and notes what to
-- write instead ("`base_ms` is deprecated: write `base = \"100ms\"`").
-- Notes go to the collector a policy's build opened (collect()), which
-- define() keeps as pol.deprecations: errgate.lint reports them as
-- warnings (`errgate policy check`), the C core logs them at every load.
-- Outside a build (a route function's entry at decide time) the old name
-- is read without a note.
local duration = require "errgate.duration"

local renamed = {}

local notes -- the open collector, or nil

-- collect() -> close(): opens a collector; close() closes it and returns
-- its notes (a list of strings), restoring the one open before.
function renamed.collect()
  local prev = notes
  local mine = {}
  notes = mine
  return function()
    notes = prev
    return mine
  end
end

-- get(where, t, new, old) -> the value of t[new], else of t[old] (noted as
-- deprecated); raises "<where>: <new> and <old> in one table" when both
-- are there.
function renamed.get(where, t, new, old)
  local v, o = t[new], t[old]
  if o == nil then return v end
  if v ~= nil then
    error(("%s: %s and %s in one table: write only %s"):format(where, new, old, new), 0)
  end
  if notes then
    local ms = duration.parse(o)
    local as = ms and ("%q"):format(duration.format(ms)) or tostring(o)
    notes[#notes + 1] = ("%s: `%s` is deprecated: write `%s = %s`"):format(where, old, new, as)
  end
  return o
end

return renamed
