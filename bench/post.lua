-- post.lua - wrk script of the benchmark: POSTs one AdmissionReview over and
-- over, and prints one machine-readable summary line when done.
--
--   BENCH_BODY=FILE wrk -s bench/post.lua https://127.0.0.1:PORT/mutate
--
-- BENCH_BODY is the file whose bytes are the request body.  With
-- BENCH_CLOSE=1 every request asks for "Connection: close".

local path = os.getenv("BENCH_BODY")
if not path then
   io.stderr:write("post.lua: set BENCH_BODY to the request body file\n")
   os.exit(1)
end
local f = assert(io.open(path, "rb"))
wrk.body = f:read("*a")
f:close()
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
if os.getenv("BENCH_CLOSE") == "1" then
   wrk.headers["Connection"] = "close"
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "RESULT requests=%d duration_us=%d rps=%.1f errors=%d " ..
      "p50_us=%d p99_us=%d mean_us=%.1f max_us=%d " ..
      "connect_errors=%d read_errors=%d write_errors=%d " ..
      "status_errors=%d timeouts=%d\n",
      summary.requests, summary.duration,
      summary.requests * 1e6 / summary.duration,
      e.connect + e.read + e.write + e.status + e.timeout,
      latency:percentile(50), latency:percentile(99), latency.mean,
      latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
