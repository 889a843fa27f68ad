-- The failure notifications' keys are reserved in Postgres's outbox_enqueue,
-- the function job roles call. SQLite has no roles and no functions: scripts
-- that write the file themselves are trusted with it. This file keeps the
-- version numbers of both dialects the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
