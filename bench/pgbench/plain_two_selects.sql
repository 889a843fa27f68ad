-- (f) a stand-in for the check's statements without their work: (e) with two SELECTs of a
-- constant in the message, what the two statements of a check cost the server to parse, plan
-- and answer when they read nothing.
\set n random(1, 1000000000)
BEGIN \;
SELECT 1 \;
SELECT 2 \;
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n) \;
COMMIT;
