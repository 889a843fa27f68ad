-- (d) fenced in one message: the check and the write of (c) sent as one multi-statement simple
-- query (statements joined by \;), the README's one-message pattern. A stale token fails
-- fence_verify and the server skips the rest of the message: nothing is written.
\set n random(1, 1000000000)
BEGIN \;
SELECT scheduler.fence_verify('bench', :token) \;
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n) \;
COMMIT;
