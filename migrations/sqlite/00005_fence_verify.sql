-- The Postgres migration of this version adds the check-only fence
-- function for job roles and revokes the raising ones from them. SQLite
-- has no roles and checks fences in Go, so nothing changes here; the
-- version keeps both stores' migration numbers the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
