-- (a) plain: the transaction of the script pattern without the fence check, one statement per
-- round trip, as psql -f sends a script's statements.
\set n random(1, 1000000000)
BEGIN;
INSERT INTO bench_rows (job, token, n) VALUES ('bench', :token, :n);
COMMIT;
