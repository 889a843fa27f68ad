-- Postgres's outbox_enqueue, the function job roles call, now binds a role's
-- message to the run it names, by the run's secret. SQLite has no roles and
-- no functions: scripts that write the file themselves are trusted with it,
-- and its runs have no secret. This file keeps the version numbers of both
-- dialects the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
