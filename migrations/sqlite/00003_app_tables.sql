-- Application tables of the built-in example jobs, the same shapes as in
-- Postgres. Times are RFC 3339 text in UTC.

-- +goose Up
CREATE TABLE IF NOT EXISTS invoices (
    client_id  INTEGER,
    month      TEXT,
    amount     NUMERIC,
    token      INTEGER NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (client_id, month)
);

CREATE TABLE IF NOT EXISTS stock_scans (
    scan_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    sku        TEXT NOT NULL,
    location   TEXT NOT NULL DEFAULT '',
    quantity   INTEGER NOT NULL,
    scanned_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE IF NOT EXISTS stock_report (
    sku      TEXT PRIMARY KEY,
    quantity INTEGER NOT NULL,
    scans    INTEGER NOT NULL,
    token    INTEGER NOT NULL,
    built_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- +goose Down
SELECT 1;
