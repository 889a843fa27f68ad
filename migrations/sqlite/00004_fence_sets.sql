-- The Postgres migration of this version changes how a batch enters its
-- fences. SQLite checks fences in Go inside its single writer's
-- transaction, so nothing changes here; the version keeps both stores'
-- migration numbers the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
