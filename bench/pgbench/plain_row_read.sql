-- (h) a stand-in for the check's read alone: (f) with the second SELECT reading one row by its
-- primary key, as fence_verify reads the fence; the row is one of bench_rows' own, so that the
-- role needs no right on the scheduler's tables beyond the recipe's. It checks nothing.
\set n random(1, 1000000000)
BEGIN \;
SELECT 1 \;
SELECT n FROM bench_rows WHERE id = 1 \;
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n) \;
COMMIT;
