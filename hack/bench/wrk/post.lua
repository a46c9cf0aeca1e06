-- wrk script for hack/bench.sh: POST the file named by $BODY_FILE to the
-- URL given on the command line, and print one machine-readable line at the
-- end (latencies in microseconds).
local f = assert(io.open(assert(os.getenv("BODY_FILE"), "BODY_FILE not set"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d max_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, e.status))
end
