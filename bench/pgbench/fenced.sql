-- (c) fenced: the README's script pattern, fence_verify the first statement of the transaction,
-- one statement per round trip.
\set n random(1, 1000000000)
BEGIN;
SELECT scheduler.fence_verify('bench', :token);
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n);
COMMIT;
