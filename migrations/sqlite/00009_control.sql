-- The operations state of the election backends without etcd lives on
-- Postgres only (package control): those backends need a shared store. This
-- file keeps the version numbers of both dialects the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
