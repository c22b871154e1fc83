-- wrk script for the paced runs of `npm run bench`: a fixed request rate, spread evenly over time.
-- Usage: wrk -t1 -cN -d10s -s bench/wrk/paced.lua URL -- RATE N
--   RATE: requests per second per wrk thread; N: the connections per thread (-c / -t).
--
-- wrk calls delay() before each request a connection sends (its first one included) and waits that
-- many milliseconds. Returning a constant (10 ms for 10 connections) would pace each connection at
-- 10 ms + the response time, below 1,000 req/s, and start all connections at once. Instead the thread
-- hands out send times from one schedule, 1000/RATE ms apart: with 10 connections at 1,000 req/s each
-- one sends every 10 ms and the connections take turns 1 ms apart, whatever the response time. A
-- connection that comes back late (response time over 10 ms) sends at once, so the rate is kept; after
-- a longer stall, at most one period's sends (N slots) are caught up and the rest are skipped and
-- counted, so a pause turns into a short burst, not into a flood of queued requests. wrk's timers have
-- a resolution of 1 ms, so sends land on millisecond ticks. Latency is wrk's own, from the moment a
-- request is written. done() prints one JSON line (latencies in microseconds) for bench/run.ts.

local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clock_id, bench_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local timespec = ffi.new("bench_timespec")

local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, timespec)
  return tonumber(timespec.tv_sec) * 1e3 + tonumber(timespec.tv_nsec) / 1e6
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local rate = tonumber(args[1])
  if rate == nil or rate <= 0 then
    error("paced.lua needs the rate per thread after --, e.g. -- 1000")
  end
  local connections = tonumber(args[2]) or 10
  interval_ms = 1000 / rate
  backlog_ms = connections * interval_ms
  next_send = nil
  skipped = 0
  non2xx = 0
end

function delay()
  local now = now_ms()
  if next_send == nil then
    next_send = now
  end
  local late = now - next_send
  if late > backlog_ms then
    local skip = math.floor((late - backlog_ms) / interval_ms)
    skipped = skipped + skip
    next_send = next_send + skip * interval_ms
  end
  local wait = next_send - now
  next_send = next_send + interval_ms
  if wait <= 0 then
    return 0
  end
  -- wrk's timers have a resolution of 1 ms.
  return math.floor(wait + 0.5)
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
end

function done(summary, latency, requests)
  local non2xx, skipped = 0, 0
  for _, thread in ipairs(threads) do
    non2xx = non2xx + thread:get("non2xx")
    skipped = skipped + thread:get("skipped")
  end
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"skipped":%d,"non2xx":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p99":%d,"p999":%d,"max":%d}\n',
    summary.requests, summary.duration, skipped, non2xx, errors.connect, errors.read, errors.write, errors.status, errors.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
