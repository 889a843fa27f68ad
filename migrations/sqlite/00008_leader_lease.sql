-- The leader lease exists on Postgres only (package pglease): an embedded
-- SQLite store belongs to one host and cannot elect among several. This
-- file keeps the version numbers of both dialects the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
