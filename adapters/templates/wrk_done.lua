-- toolbench's done() for wrk: writes wrk's own figures, as wrk holds them, to wrk.json in the
-- working directory (the cell's folder). Fixed: it reads nothing from the scenario, so no
-- value of a scenario ever becomes Lua. Times are wrk's microseconds; %.17g keeps every digit.
local PERCENTILES = {50, 66, 75, 80, 90, 95, 98, 99, 99.9}

local function num(value)
  return string.format("%.17g", value)
end

done = function(summary, latency, requests)
  local pcts = {}
  for _, p in ipairs(PERCENTILES) do
    pcts[#pcts + 1] = string.format('"%g": %s', p, num(latency:percentile(p)))
  end
  local e = summary.errors
  local out = assert(io.open("wrk.json", "w"))
  out:write('{"toolbench_wrk_done": 1',
    ', "duration_us": ', num(summary.duration),
    ', "requests": ', num(summary.requests),
    ', "bytes": ', num(summary.bytes),
    ', "errors": {"connect": ', num(e.connect), ', "read": ', num(e.read), ', "write": ', num(e.write),
    ', "status": ', num(e.status), ', "timeout": ', num(e.timeout), '}',
    ', "latency_us": {"min": ', num(latency.min), ', "max": ', num(latency.max),
    ', "mean": ', num(latency.mean), ', "stdev": ', num(latency.stdev),
    ', "percentiles": {', table.concat(pcts, ", "), '}}}\n')
  out:close()
end
