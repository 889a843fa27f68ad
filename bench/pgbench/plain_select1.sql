-- (b) plain plus one round trip: (a) with a SELECT 1 where (c) checks the fence, so that it
-- makes as many round trips as (c).
\set n random(1, 1000000000)
BEGIN;
SELECT 1;
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n);
COMMIT;
