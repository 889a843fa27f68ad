-- The store's identity: a random id created with the database (see the
-- Postgres migration of the same number).

-- +goose Up
CREATE TABLE IF NOT EXISTS store_identity (
    singleton  INTEGER PRIMARY KEY CHECK (singleton = 1),
    id         TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT OR IGNORE INTO store_identity (singleton, id) VALUES (1, lower(hex(randomblob(16))));

-- +goose Down
DROP TABLE IF EXISTS store_identity;
