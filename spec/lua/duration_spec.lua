-- duration_spec.lua — errgate.duration: parsing and formatting durations.
local duration = require "errgate.duration"

describe("errgate.duration.parse", function()
  local good = {
    { 250, 250 }, { 0, 0 }, { 1.4, 1 },
    { "100ms", 100 }, { "5s", 5000 }, { "1m", 60000 }, { "2h", 7200000 },
    { "1.5s", 1500 }, { "1m30s", 90000 }, { "1h 2m 3s 4ms", 3723004 }, { "  2s ", 2000 },
  }
  for _, row in ipairs(good) do
    it(("reads %q as %d ms"):format(tostring(row[1]), row[2]), function()
      assert.are.equal(row[2], duration.parse(row[1]))
    end)
  end

  local bad = {
    { "100", "unit is required" }, { "5x", "unknown unit" }, { "", "empty" },
    { "s", "want e.g." }, { "5s and more", "want e.g." }, { -1, "non%-negative" },
    { 0 / 0, "non%-negative" }, { math.huge, "non%-negative" }, { {}, "type table" },
    { ("9"):rep(100) .. "s", "too long" },
  }
  for _, row in ipairs(bad) do
    it(("refuses %s with a message"):format(tostring(row[1])), function()
      local ms, err = duration.parse(row[1])
      assert.is_nil(ms)
      assert.matches(row[2], err)
    end)
  end
end)

describe("errgate.duration.format", function()
  it("spells durations compactly", function()
    assert.are.equal("0ms", duration.format(0))
    assert.are.equal("250ms", duration.format(250))
    assert.are.equal("30s", duration.format(30000))
    assert.are.equal("1m30s", duration.format(90000))
    assert.are.equal("1h", duration.format(3600000))
  end)

  it("round-trips through parse", function()
    for _, ms in ipairs({ 1, 999, 1000, 61001, 3723004 }) do
      assert.are.equal(ms, duration.parse(duration.format(ms)))
    end
  end)
end)
