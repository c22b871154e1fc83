-- wrk script for the saturating runs of `npm run bench`: as many requests as the connections allow.
-- wrk counts answers with a status of 400 or more in summary.errors.status; response() also counts any
-- other non-2xx answer, per thread. done() prints one JSON line (latencies in microseconds) for bench/run.ts.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
end

function done(summary, latency, requests)
  local non2xx = 0
  for _, thread in ipairs(threads) do
    non2xx = non2xx + thread:get("non2xx")
  end
  local errors = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"non2xx":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p99":%d,"p999":%d,"max":%d}\n',
    summary.requests, summary.duration, non2xx, errors.connect, errors.read, errors.write, errors.status, errors.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max))
end
