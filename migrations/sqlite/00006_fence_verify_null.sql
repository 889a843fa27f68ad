-- The Postgres migration of this version makes fence_verify refuse a NULL
-- job or token. SQLite has no such function; the version keeps both stores'
-- migration numbers the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
