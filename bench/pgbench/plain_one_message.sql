-- (e) plain in one message: (a) sent as one multi-statement simple query, the baseline of (d).
\set n random(1, 1000000000)
BEGIN \;
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n) \;
COMMIT;
